// OBS overlay: a smooth countdown drawn on every animation frame from the server's deadline
// and the estimated clock offset (never the local clock alone). Reconnects forever.
// Query: table, position=top|bottom, scale (0.3..3), theme=dark|light|green, lang, flash=0.

import { TableConnection, tableFromQuery } from "./connection.js";
import { animate, render } from "./countdown.js";
import { applyI18n, onLangChange, t } from "./i18n.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const table = tableFromQuery("1");
const stage = $("stage");
const third = $("third");

stage.dataset.position = params.get("position") === "top" ? "top" : "bottom";
const theme = params.get("theme");
stage.dataset.theme = ["dark", "light", "green"].includes(theme) ? theme : "dark";
const scale = Number(params.get("scale"));
const WIDTH = 1460; // the lower third's width at scale 1 (overlay.css)
if (params.has("scale") && Number.isFinite(scale) && scale >= 0.3 && scale <= 3) {
  third.style.setProperty("--scale", scale);
} else {
  // No scale asked for: 1 in a 1920-wide OBS source, smaller in anything narrower.
  const fit = () => third.style.setProperty("--scale", Math.min(1, (innerWidth - 24) / WIDTH));
  fit();
  addEventListener("resize", fit);
}
const flashes = params.get("flash") !== "0";

let state = null;
let flashTimer = 0;

const conn = new TableConnection(table, {
  onState: (s) => { state = s; draw(); },
  onEvent: (event, { replayed }) => { if (!replayed && flashes) flash(event); },
  onStatus: (status) => { third.dataset.status = status; },
});

function flash(event) {
  const s = event.state || state;
  if (!s) return;
  const who = (i) => (i == null ? "" : s.players[i]);
  const d = event.data || {};
  let text = null;
  switch (event.type) {
    case "foul": text = d.player != null && d.reason !== "time" ? t("flash.foul", { name: who(d.player) }) : null; break;
    case "clock.extended": text = t("flash.extension", { name: who(d.player) }); break;
    case "clock.expired": text = t("flash.expired", { name: who(d.player) }); break;
    case "frame.started": text = t("flash.frame", { frame: d.frame }); break;
    case "frame.ended": text = d.winner != null ? t("winner", { name: who(d.winner) }) : null; break;
    default: break;
  }
  if (!text) return;
  const el = $("flash");
  el.textContent = text;
  el.classList.remove("hidden");
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => el.classList.add("hidden"), 3000);
}

function setMark(el, value) {
  const b = el.querySelector("b");
  const text = String(value);
  if (b.textContent !== text) b.textContent = text;
  el.dataset.n = text;
}

function draw() {
  if (!state) return;
  for (let i = 0; i < 2; i++) {
    const side = $(`p${i}`);
    side.querySelector(".name").textContent = state.players[i];
    setMark(side.querySelector(".fouls"), state.fouls[i]);
    setMark(side.querySelector(".ext"), state.extensions_left[i]);
    const whites = side.querySelector(".whites");
    whites.classList.toggle("hidden", !Array.isArray(state.whites));
    if (Array.isArray(state.whites)) setMark(whites, state.whites[i]);
    side.classList.toggle("at-table", state.player === i && state.phase !== "frame_over");
  }
  $("round").textContent = state.round;
  $("phase").textContent = t(`phase.${state.timer === false ? "off" : state.phase}`);
  const score = Array.isArray(state.frames_won) ? state.frames_won.join(" : ") : null;
  $("score-wrap").classList.toggle("hidden", score == null);
  if (score != null) $("score").textContent = score;
  tick();
}

function tick() {
  if (!state) return;
  const { text, stage: look, remaining } = render(state, conn.serverNow());
  const clock = $("clock");
  const shown = text || "–";
  if (clock.textContent !== shown) clock.textContent = shown;
  if (third.dataset.stage !== look) third.dataset.stage = look;
  // The bar moves every frame: the visibly smooth part of the countdown.
  const limit = Math.max(state.limit_ms || 0, state.remaining_ms || 0, 1);
  const fraction = remaining == null ? 0 : Math.min(1, remaining / limit);
  $("progress").style.transform = `scaleX(${fraction})`;
}

applyI18n();
onLangChange(draw);
window.shotclockConnection = conn; // for debugging from the console (and the tests)
conn.start();
animate(tick);
