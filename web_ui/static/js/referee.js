// Referee console: commands over HTTP (with the token remembered on the device), the feed
// over the WebSocket, a refused press explained at once in a banner.

import { getToken, sendCommand, setToken } from "./api.js";
import { TableConnection, showStatus, tableFromQuery } from "./connection.js";
import { animate, render, seconds } from "./countdown.js";
import { applyI18n, bindLangToggle, errorText, onLangChange, t } from "./i18n.js";
import {
  CONTACTS, buildResult, contactLabel, drawTable, emptyReport, itemLabel, routeFromCall,
  summaryLines,
} from "./result.js";

const $ = (id) => document.getElementById(id);
const table = tableFromQuery("1");
$("table-id").textContent = table;
document.title = `${t("page.referee")} ${table} · ${t("app.title")}`;

let state = null;
let bannerTimer = 0;

const conn = new TableConnection(table, {
  onState: (s) => { state = s; draw(); },
  onEvent: (event, { replayed }) => { if (!replayed) takeEvent(event); },
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
  drawReport();
  drawSummary();
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
    return result;
  }
  if (result.status === 0) {
    showBanner("error", t("banner.refused"), t("banner.network"), null);
    conn.wake();
    return result;
  }
  const error = (result.body && result.body.error) || { code: "error", message: `HTTP ${result.status}` };
  showRefusal(error);
  if (result.status === 401) openTokenDialog();
  return result;
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
$("btn-result").addEventListener("click", openResultPanel);
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
  r: openResultPanel,
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
  if (state.match && Array.isArray(state.match.score)) {
    parts.push(`${t("label.match")}: ${state.match.score[i]}`);
  } else if (Array.isArray(state.frames_won)) {
    parts.push(`${t("label.frames")}: ${state.frames_won[i]}`);
  }
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
  drawScore();
  $("btn-result").classList.toggle("due", state.phase === "ready" && state.can_undo === "shot");
  drawReport();
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

// -- the shot result panel ------------------------------------------------------------------------
let report = emptyReport();
let summary = null; // {seq, outcome, player, whites, respots, match}

function openResultPanel() {
  if (!state) return;
  const panel = $("result-panel");
  panel.classList.remove("hidden");
  drawReport();
  panel.scrollIntoView({ block: "start", behavior: "instant" });
}

function closeResultPanel() {
  $("result-panel").classList.add("hidden");
}

function resetReport() {
  report = emptyReport();
  $("res-foul").value = "";
  $("res-foul-text").value = "";
  drawReport();
}

const updateCallTable = drawTable($("call-table"), {
  onPocket: (p) => { report.call.pocket = report.call.pocket === p ? null : p; drawReport(); },
  onCushion: (c) => { report.call.cushions.push(c); drawReport(); },
});
const updateRouteTable = drawTable($("route-table"), {
  onPocket: (p) => {
    report.route.pocket = report.route.pocket === p ? null : p;
    if (report.route.pocket) report.colour = true;
    drawReport();
  },
  onCushion: (c) => { report.route.path.push(c); drawReport(); },
});

function contactButtons(host, onTap) {
  host.replaceChildren(...CONTACTS.map((c) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "contact";
    b.dataset.contact = c;
    b.addEventListener("click", () => onTap(c));
    return b;
  }));
}
contactButtons($("call-contact-buttons"), (c) => { report.call.contacts.push(c); drawReport(); });
contactButtons($("route-contact-buttons"), (c) => { report.route.path.push(c); drawReport(); });

function setPressed(button, on) {
  button.setAttribute("aria-pressed", on ? "true" : "false");
}

function seqText(items, label) {
  return items.length ? items.map(label).join(" · ") : "–";
}

function drawReport() {
  const onBreak = Boolean(state && state.on_break);
  if (state) $("res-shooter").textContent = `— ${state.players[state.player]}`;
  $("res-break-badge").classList.toggle("hidden", !onBreak);
  $("res-whites").textContent = String(report.whites);
  $("res-whites-minus").disabled = report.whites <= 0;
  $("res-whites-plus").disabled = report.whites >= 7;
  setPressed($("res-colour"), report.colour);
  setPressed($("res-called"), report.called);
  $("res-called").classList.toggle("hidden", onBreak);
  $("res-break-row").classList.toggle("hidden", !onBreak);
  setPressed($("res-break-yes"), report.legalBreak);
  setPressed($("res-break-no"), !report.legalBreak);
  $("res-foul-text").classList.toggle("hidden", $("res-foul").value !== "other" && !report.foulText);

  const showCall = !onBreak && (report.colour || report.called);
  $("res-call").classList.toggle("hidden", !showCall);
  $("res-route").classList.toggle("hidden", !showCall);
  $("route-copy").disabled = !report.called;
  $("call-pocket").textContent = report.call.pocket ? t(`pocket.${report.call.pocket}`) : "–";
  $("call-cushions").textContent = seqText(report.call.cushions, (c) => t(`cushion.${c}`));
  $("call-contacts").textContent = seqText(report.call.contacts, contactLabel);
  $("call-cushion-undo").disabled = !report.call.cushions.length;
  $("call-contact-undo").disabled = !report.call.contacts.length;
  for (const b of $("call-type").querySelectorAll("button")) {
    setPressed(b, b.dataset.type === report.call.shot_type);
  }
  updateCallTable(report.call.pocket, report.call.cushions);
  $("route-pocket").textContent = report.route.pocket ? t(`pocket.${report.route.pocket}`) : "–";
  $("route-path").textContent = seqText(report.route.path, itemLabel);
  $("route-undo").disabled = !report.route.path.length;
  $("route-clear").disabled = !report.route.path.length && !report.route.pocket;
  for (const b of $("route-cue").querySelectorAll("button")) {
    setPressed(b, b.dataset.cue === report.route.cue_ball);
  }
  $("route-unannounced").checked = report.route.unannounced_contact;
  $("route-jaw").checked = report.route.jaw_before_drop;
  updateRouteTable(report.route.pocket, report.route.path.filter((i) => !i.includes(">")));
  for (const b of document.querySelectorAll(".contact")) b.textContent = contactLabel(b.dataset.contact);
}

$("res-whites-minus").addEventListener("click", () => {
  report.whites = Math.max(0, report.whites - 1); drawReport();
});
$("res-whites-plus").addEventListener("click", () => {
  report.whites = Math.min(7, report.whites + 1); drawReport();
});
$("res-colour").addEventListener("click", () => {
  report.colour = !report.colour;
  if (!report.colour) { report.route.pocket = null; report.route.jaw_before_drop = false; }
  drawReport();
});
$("res-called").addEventListener("click", () => { report.called = !report.called; drawReport(); });
$("res-break-yes").addEventListener("click", () => { report.legalBreak = true; drawReport(); });
$("res-break-no").addEventListener("click", () => { report.legalBreak = false; drawReport(); });
$("res-foul").addEventListener("change", () => { report.foul = $("res-foul").value; drawReport(); });
$("res-foul-text").addEventListener("input", () => { report.foulText = $("res-foul-text").value; });
$("call-cushion-undo").addEventListener("click", () => { report.call.cushions.pop(); drawReport(); });
$("call-contact-undo").addEventListener("click", () => { report.call.contacts.pop(); drawReport(); });
for (const b of $("call-type").querySelectorAll("button")) {
  b.addEventListener("click", () => { report.call.shot_type = b.dataset.type; drawReport(); });
}
$("route-copy").addEventListener("click", () => {
  // Copying the call is what a pressed "call" means: the announced ball was aimed at its pocket.
  report.called = true;
  report.route = routeFromCall(report);
  drawReport();
});
$("route-undo").addEventListener("click", () => { report.route.path.pop(); drawReport(); });
$("route-clear").addEventListener("click", () => {
  report.route.path = []; report.route.pocket = null; drawReport();
});
for (const b of $("route-cue").querySelectorAll("button")) {
  b.addEventListener("click", () => { report.route.cue_ball = b.dataset.cue; drawReport(); });
}
$("route-unannounced").addEventListener("change", (ev) => {
  report.route.unannounced_contact = ev.target.checked;
});
$("route-jaw").addEventListener("change", (ev) => { report.route.jaw_before_drop = ev.target.checked; });
$("res-cancel").addEventListener("click", () => { resetReport(); closeResultPanel(); });

let pendingResult = null;

$("res-send").addEventListener("click", () => {
  if (!state) return;
  const built = buildResult(report, Boolean(state.on_break));
  if (built.error) {
    lastRefusal = null;
    showBanner("error", t("banner.refused"), t(built.error), null);
    return;
  }
  pendingResult = built.body;
  // Ends the frame or takes a coloured-ball pot: ask, as for new frame and undo.
  if (built.body.colour_potted && !state.on_break) {
    $("result-question").textContent = describeResult(built.body);
    $("result-dialog").showModal();
    return;
  }
  sendResult();
});

$("result-dialog").addEventListener("close", () => {
  if ($("result-dialog").returnValue === "ok") sendResult();
});

function describeResult(body) {
  const parts = [`${t("res.whites")}: ${body.whites_potted}`];
  if (body.colour_potted) parts.push(t("res.colour"));
  if (body.call) parts.push(`${t("res.call")}: ${t(`pocket.${body.call.pocket}`)}`);
  else parts.push(`${t("res.call")}: –`);
  if (body.referee_foul) parts.push(`${t("res.foul_seen")}: ${body.referee_foul}`);
  return parts.join(" · ");
}

async function sendResult() {
  const body = pendingResult;
  pendingResult = null;
  if (!body) return;
  const before = state ? state.seq : 0;
  queue = queue.then(() => send("result", body));
  const result = await queue;
  if (!result || !result.ok) return; // the banner says why; the report stays for a fix
  resetReport();
  closeResultPanel();
  if (!summary || summary.seq <= before) await fetchSummary(before);
}

// The summary comes from the feed; if the reply overtook the events, read them from the log.
async function fetchSummary(since) {
  const res = await fetch(`/api/tables/${encodeURIComponent(table)}/events?since=${since}&limit=20`,
    { cache: "no-store" });
  if (!res.ok) return;
  const events = await res.json();
  const list = Array.isArray(events) ? events : events.events || [];
  for (const event of list) if (!summary || event.seq > summary.seq) takeEvent(event);
}

let lastSeqTaken = 0;

function takeEvent(event) {
  if (event.seq <= lastSeqTaken) return;
  lastSeqTaken = event.seq;
  const data = event.data || {};
  if (event.type === "shot.result") {
    summary = { seq: event.seq, player: data.player, outcome: data.outcome, whites: data.whites,
      respots: null, match: null };
  } else if (!summary) {
    return;
  } else if (event.type === "respot") {
    summary.respots = data.respots;
  } else if (event.type === "match.ended") {
    summary.match = data;
  } else if (event.type === "frame.started" || event.type === "correction.undone") {
    summary = null;
  } else {
    return;
  }
  drawSummary();
}

function drawSummary() {
  const card = $("outcome");
  if (!summary || !state) { card.classList.add("hidden"); return; }
  const o = summary.outcome;
  card.classList.remove("hidden");
  card.dataset.kind = o.frame_over ? "end" : o.fouls.length ? "foul" : "ok";
  $("outcome-title").textContent = t("res.summary", { name: state.players[summary.player] });
  $("outcome-lines").replaceChildren(...summaryLines(summary, state.players).map((line) => {
    const li = document.createElement("li");
    li.className = line.kind;
    li.append(document.createTextNode(line.text));
    if (line.rule) {
      const rule = document.createElement("span");
      rule.className = "rule";
      rule.textContent = t("banner.rule", { rule: line.rule });
      li.append(" ", rule);
    }
    return li;
  }));
}

$("outcome-close").addEventListener("click", () => { summary = null; drawSummary(); });

function drawScore() {
  for (let i = 0; i < 2; i++) {
    const whites = $(`p${i}`).querySelector(".whites");
    whites.classList.toggle("hidden", !Array.isArray(state.whites));
    if (Array.isArray(state.whites)) whites.querySelector("b").textContent = state.whites[i];
  }
  const m = state.match;
  $("score").classList.toggle("hidden", !m);
  if (!m) return;
  $("score-value").textContent = `${m.score[0]} : ${m.score[1]}`;
  $("score-race").textContent = m.race_to ? t("label.race_to", { n: m.race_to }) : "";
}

applyI18n();
bindLangToggle($("lang"));
showStatus($("conn"), "connecting", t);
window.shotclockConnection = conn; // for debugging from the console (and the tests)
conn.start();
animate(tick);
