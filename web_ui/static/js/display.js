// Table-side display: big digits with the firmware's rounding (countdown.js = render.py),
// the player indicator, the phase as a colour, and optional sound.

import { TableConnection, showStatus, tableFromQuery } from "./connection.js";
import { animate, render } from "./countdown.js";
import { applyI18n, bindLangToggle, onLangChange, t } from "./i18n.js";
import { Buzzer } from "./sound.js";

const $ = (id) => document.getElementById(id);
const table = tableFromQuery("1");
$("table-id").textContent = table;

let state = null;
const buzzer = new Buzzer();
window.shotclockBuzzer = buzzer;

const conn = new TableConnection(table, {
  onState: (s) => { state = s; draw(); },
  onEvent: (event, { replayed }) => {
    if (replayed) return; // old news: no beeps for what happened while away
    if (event.type === "clock.warning") buzzer.warning();
    else if (event.type === "clock.expired") buzzer.expired();
  },
  onStatus: (status) => showStatus($("conn"), status, t),
});

$("sound").addEventListener("click", async () => {
  const on = await buzzer.enable();
  $("sound").classList.toggle("on", on);
  $("sound").dataset.i18n = on ? "btn.sound_off" : "btn.sound_on";
  $("sound").textContent = t($("sound").dataset.i18n);
  if (on) buzzer.tone(1000, 0.08, "test");
});

function draw() {
  if (!state) return;
  for (let i = 0; i < 2; i++) {
    const el = $(`p${i}`);
    el.querySelector(".name").textContent = state.players[i];
    const stats = [`${t("label.fouls")} ${state.fouls[i]}`, `${t("label.extensions")} ${state.extensions_left[i]}`];
    if (Array.isArray(state.whites)) stats.push(`${t("label.whites")} ${state.whites[i]}`);
    el.querySelector(".stats").textContent = stats.join(" · ");
    el.classList.toggle("at-table", state.player === i && state.phase !== "frame_over");
  }
  $("round").textContent = state.round;
  $("phase").textContent = t(`phase.${state.timer === false ? "off" : state.phase}`);
  tick();
}

function tick() {
  if (!state) return;
  const { text, stage } = render(state, conn.serverNow());
  const shown = text || "–";
  const clock = $("clock");
  if (clock.textContent !== shown) clock.textContent = shown;
  if (document.body.dataset.stage !== stage) document.body.dataset.stage = stage;
}

applyI18n();
bindLangToggle($("lang"));
onLangChange(() => { showStatus($("conn"), conn.status, t); draw(); });
showStatus($("conn"), "connecting", t);
window.shotclockConnection = conn; // for debugging from the console (and the tests)
conn.start();
animate(tick);
