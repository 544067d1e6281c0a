// Referee console: commands over HTTP (with the token remembered on the device), the feed
// over the WebSocket, a refused press explained at once in a banner.

import { getToken, sendCommand, setToken } from "./api.js";
import { TableConnection, showStatus, tableFromQuery } from "./connection.js";
import { animate, render, seconds } from "./countdown.js";
import { applyI18n, bindLangToggle, errorText, onLangChange, t } from "./i18n.js";

const $ = (id) => document.getElementById(id);
const table = tableFromQuery("1");
$("table-id").textContent = table;
document.title = `${t("page.referee")} ${table} · ${t("app.title")}`;

let state = null;
let bannerTimer = 0;

const conn = new TableConnection(table, {
  onState: (s) => { state = s; draw(); },
  onStatus: (status) => showStatus($("conn"), status, t),
});

// -- the banner: refusals stay until the next press; confirmations fade ------------------------
function showBanner(kind, title, text, rule) {
  const banner = $("banner");
  banner.classList.remove("hidden", "info");
  if (kind === "info") banner.classList.add("info");
  banner.dataset.kind = kind;
  $("banner-title").textContent = title;
  $("banner-text").textContent = text;
  $("banner-rule").textContent = rule ? t("banner.rule", { rule }) : "";
  clearTimeout(bannerTimer);
  if (kind === "info") bannerTimer = setTimeout(hideBanner, 1500);
}

function hideBanner() {
  clearTimeout(bannerTimer);
  $("banner").classList.add("hidden");
}

let lastRefusal = null; // re-shown in the other language when the toggle is pressed

function showRefusal(error) {
  lastRefusal = error;
  const name = state ? state.players[state.player] : "";
  const { text, rule, code } = errorText(error, { name });
  $("banner").dataset.code = code || "";
  showBanner("error", t("banner.refused"), text, rule);
}

onLangChange(() => {
  if (lastRefusal && !$("banner").classList.contains("hidden")) showRefusal(lastRefusal);
  document.title = `${t("page.referee")} ${table} · ${t("app.title")}`;
  showStatus($("conn"), conn.status, t);
  draw();
});

// -- commands ------------------------------------------------------------------------------------
// Presses are sent one after the other, in order: a quick second press (turn right after
// shot) waits for the first one's answer instead of being lost or overtaking it.
let queue = Promise.resolve();

function command(name, fields = {}) {
  queue = queue.then(() => send(name, fields));
  return queue;
}

async function send(name, fields) {
  lastRefusal = null;
  hideBanner();
  const result = await sendCommand(table, name, fields);
  if (result.ok) {
    conn.offerState(result.body, name);
    return;
  }
  if (result.status === 0) {
    showBanner("error", t("banner.refused"), t("banner.network"), null);
    conn.wake();
    return;
  }
  const error = (result.body && result.body.error) || { code: "error", message: `HTTP ${result.status}` };
  showRefusal(error);
  if (result.status === 401) openTokenDialog();
}

function mainCommand() {
  if (!state) return null;
  switch (state.phase) {
    case "ready": return { name: "start", label: "btn.start" };
    case "expired": return { name: "start", label: "btn.accept" };
    case "running": return { name: "shot", label: "btn.shot" };
    case "paused": return { name: "shot", label: "btn.shot" };
    default: return { name: null, label: "btn.frame_over" };
  }
}

function pressMain() {
  const main = mainCommand();
  if (main && main.name) command(main.name);
}

function pressPause() {
  command(state && state.phase === "paused" ? "resume" : "pause");
}

function pressHandBack() {
  if (state && state.hand_back_to != null) command("hand_back");
}

// -- dialogs ------------------------------------------------------------------------------------
function fillPlayerOptions(select, offset) {
  if (!state) return;
  const options = select.querySelectorAll("option");
  for (let i = 0; i < 2; i++) options[i + offset].textContent = state.players[i];
}

function openFoulDialog() {
  if (!state) return;
  fillPlayerOptions($("foul-player"), 0);
  $("foul-player").value = String(state.player);
  $("foul-text").value = "";
  $("foul-dialog").showModal();
}

$("foul-dialog").addEventListener("close", () => {
  if ($("foul-dialog").returnValue !== "ok") return;
  const choice = $("foul-reason").value;
  const free = $("foul-text").value.trim();
  const reason = free || (choice === "other" ? t("foul.r.other") : t(`foul.r.${choice}`));
  command("foul", { reason, player: Number($("foul-player").value) });
});

function openFrameDialog() {
  if (!state) return;
  fillPlayerOptions($("frame-winner"), 1);
  $("frame-winner").value = "";
  $("frame-dialog").showModal();
}

$("frame-dialog").addEventListener("close", () => {
  if ($("frame-dialog").returnValue !== "ok") return;
  const winner = $("frame-winner").value;
  command("new_frame", winner === "" ? {} : { winner: Number(winner) });
});

function undoWhat() {
  return state && state.can_undo ? t(`step.${state.can_undo}`) : null;
}

function openUndoDialog() {
  if (!state) return;
  if (!state.can_undo) { command("undo"); return; } // the server says why not
  $("undo-question").textContent = t("undo.confirm", { what: undoWhat() });
  $("undo-dialog").showModal();
}

$("undo-dialog").addEventListener("close", () => {
  if ($("undo-dialog").returnValue === "ok") command("undo", { by: "referee" });
});

function openTokenDialog() {
  if ($("token-dialog").open) return;
  $("token-input").value = getToken();
  $("token-dialog").showModal();
}

$("token-dialog").addEventListener("close", () => {
  if ($("token-dialog").returnValue === "ok") setToken($("token-input").value.trim());
});

// -- wiring ------------------------------------------------------------------------------------
$("btn-main").addEventListener("click", pressMain);
$("btn-extension").addEventListener("click", () => command("extension"));
$("btn-turn").addEventListener("click", () => command("turn"));
$("btn-pause").addEventListener("click", pressPause);
$("btn-foul").addEventListener("click", openFoulDialog);
$("btn-hand-back").addEventListener("click", pressHandBack);
$("btn-new-frame").addEventListener("click", openFrameDialog);
$("btn-undo").addEventListener("click", openUndoDialog);
$("token-btn").addEventListener("click", openTokenDialog);
$("banner").addEventListener("click", hideBanner);

const KEYS = {
  " ": pressMain,
  e: () => command("extension"),
  t: () => command("turn"),
  p: pressPause,
  u: openUndoDialog,
  f: openFoulDialog,
  h: pressHandBack,
  n: openFrameDialog,
};

// A button keeps the focus after a tap or click; without this, Space would both run the
// shortcut and "click" that button on keyup.
document.addEventListener("keyup", (ev) => {
  if (ev.key === " " && !document.querySelector("dialog[open]")) ev.preventDefault();
});
for (const button of document.querySelectorAll(".buttons .btn")) {
  button.addEventListener("click", () => button.blur());
}

document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat) return;
  if (document.querySelector("dialog[open]")) return; // dialogs take their own keys
  const tag = (ev.target && ev.target.tagName) || "";
  if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
  const action = KEYS[ev.key.toLowerCase()];
  if (!action) return;
  ev.preventDefault(); // space would also "click" a focused button
  action();
});

// -- drawing ------------------------------------------------------------------------------------
function playerStats(i) {
  const parts = [
    `${t("label.fouls")}: ${state.fouls[i]}`,
    `${t("label.extensions")}: ${state.extensions_left[i]}`,
  ];
  if (Array.isArray(state.whites)) parts.push(`${t("label.whites")}: ${state.whites[i]}`);
  if (Array.isArray(state.frames_won)) parts.push(`${t("label.frames")}: ${state.frames_won[i]}`);
  return parts.join(" · ");
}

function draw() {
  if (!state) return;
  for (let i = 0; i < 2; i++) {
    const el = $(`p${i}`);
    el.querySelector(".name").textContent = state.players[i];
    el.querySelector(".stats").textContent = playerStats(i);
    el.classList.toggle("at-table", state.player === i && state.phase !== "frame_over");
  }
  $("round").textContent = state.round;
  $("limit").textContent = state.timer ? `${seconds(state.limit_ms)} ${t("label.sec")}` : "–";
  $("frame").textContent = state.frame;
  $("visit").textContent = state.visit;
  let phaseText = t(`phase.${state.phase}`);
  if (state.phase === "frame_over" && state.frame_winner != null) {
    phaseText += ` — ${t("winner", { name: state.players[state.frame_winner] })}`;
  }
  $("phase").textContent = phaseText;

  const main = mainCommand();
  const mainBtn = $("btn-main");
  mainBtn.textContent = t(main.label);
  mainBtn.dataset.command = main.name || "";
  mainBtn.disabled = !main.name;
  $("btn-pause").textContent = t(state.phase === "paused" ? "btn.resume" : "btn.pause");
  const handBack = $("btn-hand-back");
  handBack.disabled = state.hand_back_to == null;
  handBack.textContent = state.hand_back_to == null ? t("btn.hand_back")
    : t("btn.hand_back_to", { name: state.players[state.hand_back_to] });
  const undo = $("btn-undo");
  undo.textContent = state.can_undo ? t("btn.undo_what", { what: undoWhat() }) : t("btn.undo");
  undo.dataset.step = state.can_undo || "";
  tick();
}

function tick() {
  if (!state) return;
  const { text, stage } = render(state, conn.serverNow());
  const clock = $("clock");
  const shown = text || "–";
  if (clock.textContent !== shown) clock.textContent = shown;
  $("clock-box").dataset.stage = stage;
}

applyI18n();
bindLangToggle($("lang"));
showStatus($("conn"), "connecting", t);
window.shotclockConnection = conn; // for debugging from the console (and the tests)
conn.start();
animate(tick);
