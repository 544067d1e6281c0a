// Referee console: commands over HTTP (with the token remembered on the device), the feed
// over the WebSocket. The main button follows the phase; what the state's `allowed` leaves
// out is disabled, and a tap (or hover) on it says why, from the state's `refused`. Refusals,
// reasons, the card of the last shot / time foul / frame end and a hint share one reserved
// area of fixed height, so nothing ever moves the buttons under the thumb.

import { getToken, sendCommand, setToken, takeTokenFromLink } from "./api.js";
import { TableConnection, tableFromQuery } from "./connection.js";
import { animate, render, seconds } from "./countdown.js";
import { applyI18n, bindLangToggle, decimal, errorText, onLangChange, t } from "./i18n.js";
import { ACTIONS, CLICKER_KEYS, KeyMap, MAX_GUARD_MS, PressGuard, keyLabel, keyName } from "./keymap.js";
import {
  foulCommandFields, foulText, generalFoul, mountResultPanel, panelMode, respotDetail,
  respotText, resultButtonLabel, summaryLines, winnerScore,
} from "./result.js";
import { HealthDialog } from "./health.js";
import { ClipViewer } from "./clipview.js";
import { StatusStrip, faultLevel } from "./status.js";
import { NextMatch, drawMatchClock, nextLine } from "./tournament.js";
import { fitText, refitOn } from "./fit.js";
import { ClockPhase } from "./phases.js";

const $ = (id) => document.getElementById(id);
// Opened from the desk's link or QR code (…/referee?table=7#token=…): the token is kept on
// the device before the feed opens with it, and leaves the address (js/api.js).
takeTokenFromLink();
const table = tableFromQuery("1");
$("table-id").textContent = table;
const setTitle = () => { document.title = `${t("page.referee")} ${table} · ${t("app.title")}`; };
setTitle();

let state = null;
const strip = new StatusStrip($("status"));

const conn = new TableConnection(table, {
  onState: (s) => { state = s; draw(); },
  onEvent: (event, { replayed }) => { if (!replayed) takeEvent(event); },
  onStatus: (status) => {
    strip.setConnection(status);
    $("unknown").classList.toggle("hidden", status !== "unknown_table");
    $("console").classList.toggle("hidden", status === "unknown_table");
    if (status === "live") askTokenIfNeeded();
    drawClockLiveness();
    draw(); // the buttons follow the link: disabled while it is down
    looks.now(); // the countdown stops (or goes on) with the link at once
  },
  onFaults: (faults) => { strip.setFaults(faults); drawHint(); },
  // Through the hall service, a table whose own service is offline: its state is the last
  // known one, frozen, and no command can reach it (the service would answer
  // table_unreachable): every command button disabled, the reason on a tap.
  onLive: (live) => { strip.setTableLive(live); drawClockLiveness(); draw(); },
  onTokenRefused: () => { tokenRefused = true; askTokenIfNeeded(); },
}, { token: getToken });
const looks = animate(tick);

// -- the notice area: refusal / why / info banner over the card, over the hint ---------------
let bannerTimer = 0;
let lastBanner = null; // re-shown in the other language when the toggle is pressed

function showBanner(kind, error, { title, fade } = {}) {
  lastBanner = { kind, error, title, fade };
  const name = state ? state.players[state.player] : "";
  const banner = $("banner");
  let text;
  let rule = null;
  if (error.key) {
    text = t(error.key, error.vars);
  } else {
    ({ text, rule } = errorText(error, { name }));
    if (rule) text = stripRule(text, rule);
  }
  banner.dataset.kind = kind;
  banner.dataset.code = error.code || error.key || "";
  $("banner-title").textContent = title || t(kind === "why" ? "banner.why" : kind === "info" ? "banner.done_title" : "banner.refused");
  $("banner-text").textContent = text;
  $("banner-rule").textContent = rule ? ruleLabel(rule) : "";
  banner.classList.remove("hidden");
  clearTimeout(bannerTimer);
  if (fade) bannerTimer = setTimeout(hideBanner, fade);
}

/** The pill of a refusal's rule: "rule 12.5"; the match's own limit ("race to 2", sent in
 * the rule's place by match_over) in the page's words, not "правило race to 2". */
function ruleLabel(rule) {
  const race = /^race to (\d+)$/.exec(rule);
  return race ? t("label.race_to", { n: race[1] }) : t("banner.rule", { rule });
}

/** "... this frame (12.5)" shown with the pill "rule 12.5": say the number once. */
function stripRule(text, rule) {
  const tail = ` (${rule})`;
  return text.endsWith(tail) ? text.slice(0, -tail.length) : text;
}

function hideBanner() {
  clearTimeout(bannerTimer);
  lastBanner = null;
  $("banner").classList.add("hidden");
}

$("banner").addEventListener("click", hideBanner);

// -- commands ------------------------------------------------------------------------------------
// Presses are sent one after the other, in order: a quick second press (turn right after
// shot) waits for the first one's answer instead of being lost or overtaking it.
let queue = Promise.resolve();
let inFlight = 0;
let pendingPress = null; // the press refused with 401, retried once a token is given

function command(name, fields = {}) {
  inFlight += 1;
  queue = queue.then(() => send(name, fields)).finally(() => {
    inFlight -= 1;
    if (inFlight === 0) mainPress = null;
  });
  return queue;
}

async function send(name, fields) {
  hideBanner();
  const result = await sendCommand(table, name, fields);
  if (result.ok) {
    conn.offerState(result.body, name);
    return result;
  }
  if (result.status === 0) {
    showBanner("error", { key: "banner.network" });
    conn.wake();
    return result;
  }
  const error = (result.body && result.body.error) || { code: "error", message: `HTTP ${result.status}` };
  showBanner("error", error);
  if (result.status === 401) {
    pendingPress = { name, fields };
    tokenRefused = Boolean(getToken());
    openTokenDialog();
  }
  return result;
}

/** Why `name` is not legal now (from the state), or null; unknown while a press is on its way. */
function whyNot(name) {
  if (!state || !name) return null;
  // This page's own link is down (issue 36: Shot stayed bright and active): nothing sent
  // now would be seen, and the state on screen may be old.
  if (conn.status !== "live") return { code: "link_down" };
  if (!conn.live) return { code: "table_offline" };
  if (Array.isArray(state.allowed) && state.allowed.includes(name)) return null;
  if (!Array.isArray(state.allowed)) return null; // an older server: let it decide
  return (state.refused && state.refused[name]) || { code: "not_allowed" };
}

/** Run an action if its command is legal now; else say why. While an earlier press is
 * still on its way the state may be behind: then the server decides. */
function attempt(commandName, run) {
  const why = whyNot(commandName);
  if (why && inFlight === 0) {
    showBanner("why", why, { fade: 4000 });
    return;
  }
  run();
}

function mainCommand(s) {
  if (!s) return { name: null, label: "btn.start" };
  switch (s.phase) {
    case ClockPhase.READY: return { name: "start", label: "btn.start" };
    case ClockPhase.EXPIRED: return { name: "start", label: "btn.accept" };
    case ClockPhase.RUNNING: return { name: "shot", label: "btn.shot" };
    case ClockPhase.PAUSED: return { name: "resume", label: "btn.resume" };
    default:
      // Match over: nothing but a new match (or an undo) is left; the main button offers it.
      return s.match && s.match.over ? { name: "new_match", label: "btn.new_match" }
        : { name: "new_frame", label: "btn.next_frame" };
  }
}

const ACTION_COMMAND = {
  main: () => mainCommand(state).name,
  extension: () => "extension",
  turn: () => "turn",
  pause: () => (state && state.phase === ClockPhase.PAUSED ? "resume" : "pause"),
  foul: () => "foul",
  hand_back: () => "hand_back",
  // Before the shot the panel announces the call (7.1), after it reports the result.
  result: () => (panelMode(state) === "call" ? "call" : "result"),
  new_frame: () => "new_frame",
  new_match: () => "new_match",
  undo: () => "undo",
};

const ACTION_RUN = {
  main: () => {
    const name = mainCommand(state).name;
    if (name === "new_match") openMatchDialog();
    else if (name) command(name);
  },
  extension: () => command("extension"),
  turn: () => command("turn"),
  pause: () => command(ACTION_COMMAND.pause()),
  foul: openFoulDialog,
  hand_back: () => command("hand_back"),
  result: openResultPanel,
  new_frame: () => {
    // After a frame that ended by itself the next one just starts: its winner is recorded.
    if (state && state.phase === ClockPhase.FRAME_OVER) command("new_frame");
    else openFrameDialog();
  },
  new_match: () => openMatchDialog(),
  undo: openUndoDialog,
};

// -- one press is one press (issue 23) -----------------------------------------------------
// A second press of the same key, or a second tap of the same button, within the guard
// window of the last accepted one is ignored, and the console says so: a clicker that
// bounces (PageDown twice 40-250 ms apart) once made Start then Shot, a 0.04 s shot. A tap
// of the main button while its previous command is still on its way (no answer, no new
// state yet) is ignored too: the button still shows the old command, so the tap would
// repeat it or, answered, become the next one. Guard 0 (the Keys dialog) turns both off.
const pressGuard = new PressGuard(() => keys.guardMs);
let mainPress = null; // {seq}: the state the last main press was made on, while in flight

function ignoredPress(why) {
  showBanner("info", { key: why }, { title: t("ignored.title"), fade: 1500 });
  $("banner").dataset.code = "ignored";
}

function press(action, source) {
  if (!state) return;
  if (source && keys.guardMs > 0 && !pressGuard.accept(source)) {
    ignoredPress("ignored.double");
    return;
  }
  if (action === "main" && keys.guardMs > 0 && inFlight > 0 && mainPress && mainPress.seq === state.seq) {
    ignoredPress("ignored.in_flight");
    return;
  }
  if (action === "main") {
    mainPress = { seq: state.seq };
  }
  attempt(ACTION_COMMAND[action](), ACTION_RUN[action]);
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
  $("foul-reason").value = "double_hit";
  $("foul-balls").value = "colour";
  $("foul-with").value = "";
  drawFoulDialog();
  $("foul-dialog").showModal();
  $("foul-ok").focus();
}

/** The clock keeps running while the dialog is open: say so (and offer a pause); warn when
 * this foul would be the player's second (technical loss, 10.5). */
function drawFoulDialog() {
  if (!state) return;
  const running = state.phase === ClockPhase.RUNNING;
  $("foul-clock").classList.toggle("hidden", !running && state.phase !== ClockPhase.PAUSED);
  $("foul-pause").classList.toggle("hidden", !running);
  $("foul-clock-text").textContent = running ? t("foul.clock_runs") : t("foul.clock_paused");
  const code = $("foul-reason").value;
  $("foul-balls-row").classList.toggle("hidden", code !== "ball_off_table");
  $("foul-with-row").classList.toggle("hidden", code !== "touched_ball");
  $("foul-text").required = code === "other";
  const who = Number($("foul-player").value);
  const second = state.fouls[who] >= 1;
  const warn = $("foul-second");
  warn.classList.toggle("hidden", !second);
  warn.textContent = second ? t("foul.second", { name: state.players[who], other: state.players[1 - who] }) : "";
  $("foul-ok").textContent = t(second ? "foul.confirm_loss" : "foul.confirm");
}

$("foul-player").addEventListener("change", drawFoulDialog);
$("foul-reason").addEventListener("change", () => {
  // Out of turn: the foul is the one who played, not the player at the table (D10).
  if (state && $("foul-reason").value === "out_of_turn") $("foul-player").value = String(1 - state.player);
  drawFoulDialog();
});
$("foul-pause").addEventListener("click", () => command("pause"));
$("foul-dialog").addEventListener("keydown", (ev) => {
  // Enter confirms from anywhere in the dialog (a select would otherwise swallow it).
  if (ev.key === "Enter" && !ev.isComposing && ev.target.id !== "foul-pause") {
    ev.preventDefault();
    $("foul-dialog").close("ok");
  }
});

$("foul-dialog").addEventListener("close", () => {
  if ($("foul-dialog").returnValue !== "ok") return;
  // A general foul with its code (9, D10); free text is "other", or a note to a code.
  const foul = generalFoul($("foul-reason").value, { balls: $("foul-balls").value,
    touchedWith: $("foul-with").value, text: $("foul-text").value });
  if (!foul) {
    showBanner("error", { key: "res.need_foul_text" });
    return;
  }
  command("foul", foulCommandFields(foul, Number($("foul-player").value)));
});

function openFrameDialog() {
  if (!state) return;
  fillPlayerOptions($("frame-winner"), 1);
  $("frame-winner").value = "";
  $("frame-reason").value = "";
  $("frame-dialog").showModal();
}

$("frame-dialog").addEventListener("close", () => {
  if ($("frame-dialog").returnValue !== "ok") return;
  const winner = $("frame-winner").value;
  // Ending a frame in progress is a decision outside the rules: it needs a reason (D9).
  const reason = $("frame-reason").value.trim();
  command("new_frame", { ...(winner === "" ? {} : { winner: Number(winner) }), reason });
});

// -- new match: the dialog is the confirm step (it ends the match in play) -------------------
function openMatchDialog({ keep = false } = {}) {
  if (!state) return;
  const m = state.match || {};
  const score = Array.isArray(m.score) ? `${m.score[0]}:${m.score[1]}` : "–";
  $("match-ends").textContent = t(m.over ? "match.ends_over" : "match.ends", { n: m.number || 1, score });
  $("match-ok").textContent = t(m.over ? "match.start" : "match.confirm");
  if (!keep) {
    $("match-a").value = state.players[0];
    $("match-b").value = state.players[1];
    $("match-race").value = m.race_to == null ? "" : String(m.race_to);
    $("match-reason").value = "";
    // The event and the referee carry over from the table's last match (issue 23: a new
    // match lost them, and its protocol printed neither); the referee may change them.
    $("match-event").value = "";
    $("match-referee").value = "";
    prefillEventAndReferee();
    $("match-error").classList.add("hidden");
  }
  if (!$("match-dialog").open) $("match-dialog").showModal();
}

async function prefillEventAndReferee() {
  let last = null;
  try {
    const res = await fetch(`/api/matches?table=${encodeURIComponent(table)}&limit=1`, { cache: "no-store" });
    if (res.ok) last = ((await res.json()).matches || [])[0] || null;
  } catch { return; }
  if (!last) return;
  for (const key of ["event", "referee"]) {
    const input = $(`match-${key}`);
    if (!input.value && last[key]) input.value = last[key]; // not over what was typed meanwhile
  }
}

$("match-dialog").addEventListener("close", async () => {
  if ($("match-dialog").returnValue !== "ok") return;
  const race = $("match-race").value.trim();
  const reason = $("match-reason").value.trim();
  const fields = {
    players: [$("match-a").value.trim(), $("match-b").value.trim()],
    race_to: race === "" ? null : Number(race), // empty: open-ended
    ...(reason ? { reason } : {}),
  };
  for (const key of ["event", "referee"]) {
    const value = $(`match-${key}`).value.trim();
    if (value) fields[key] = value;
  }
  const result = await command("new_match", fields);
  if (result && !result.ok && result.status >= 400 && result.status < 500 && result.status !== 401) {
    // Refused for what is in the form (a reason needed, a bad field): back to the form, as typed.
    const error = (result.body && result.body.error) || { code: "error" };
    $("match-error").textContent = errorText(error).text;
    $("match-error").classList.remove("hidden");
    openMatchDialog({ keep: true });
    if (error.code === "missing_reason") $("match-reason").focus();
  }
});

function undoWhat() {
  return state && state.can_undo ? t(`step.${state.can_undo}`) : null;
}

function openUndoDialog() {
  if (!state) return;
  $("undo-question").textContent = t("undo.confirm", { what: undoWhat() });
  $("undo-dialog").showModal();
}

$("undo-dialog").addEventListener("close", () => {
  if ($("undo-dialog").returnValue === "ok") command("undo", { by: "referee" });
});

// -- the token: asked before the first press when the service needs one ----------------------
let tokenRefused = false;
let tokenAsked = false;

function askTokenIfNeeded() {
  if (conn.status !== "live") return;
  const needed = conn.referee === false && (!getToken() || tokenRefused);
  if (needed && !tokenAsked) {
    tokenAsked = true;
    openTokenDialog();
  }
}

function openTokenDialog() {
  if ($("token-dialog").open) return;
  $("token-input").value = getToken();
  $("token-help").textContent = t(tokenRefused ? "token.refused" : conn.referee === false ? "token.needed_now" : "token.help");
  $("token-dialog").showModal();
}

$("token-dialog").addEventListener("close", () => {
  const retry = pendingPress;
  pendingPress = null;
  if ($("token-dialog").returnValue !== "ok") return;
  setToken($("token-input").value.trim());
  tokenRefused = false;
  tokenAsked = false;
  conn.restart(); // the feed with the new token: its snapshot says whether it is right
  if (retry) command(retry.name, retry.fields); // the press that was refused for want of it
});

// -- the key map ------------------------------------------------------------------------------------
const keys = new KeyMap();
let listeningFor = null;

function drawKeyHints() {
  for (const button of document.querySelectorAll("[data-action]")) {
    const first = keys.keys(button.dataset.action)[0];
    if (first) button.dataset.key = keyLabel(first);
    else delete button.dataset.key;
  }
}

function drawKeysDialog() {
  $("keys-rows").replaceChildren(...ACTIONS.map((action) => {
    const row = document.createElement("tr");
    row.dataset.action = action;
    const name = document.createElement("td");
    name.textContent = t(`keys.action.${action}`);
    const list = document.createElement("td");
    list.className = "keys";
    for (const k of keys.keys(action)) {
      const kbd = document.createElement("kbd");
      kbd.textContent = keyLabel(k);
      list.append(kbd);
    }
    const set = document.createElement("button");
    set.type = "button";
    set.className = `set${listeningFor === action ? " listening" : ""}`;
    set.textContent = t("keys.add");
    set.addEventListener("click", () => { listeningFor = action; drawKeysDialog(); });
    const clear = document.createElement("button");
    clear.type = "button";
    clear.className = "clear";
    clear.textContent = "✕";
    clear.setAttribute("aria-label", t("keys.clear"));
    clear.addEventListener("click", () => { keys.clear(action); drawKeysDialog(); drawKeyHints(); });
    const tools = document.createElement("td");
    tools.className = "tools";
    tools.append(set, clear);
    row.append(name, list, tools);
    return row;
  }));
  $("keys-listening").classList.toggle("hidden", !listeningFor);
  $("keys-guard").value = String(keys.guardMs);
}

$("keys-guard").max = String(MAX_GUARD_MS);
$("keys-guard").addEventListener("change", () => {
  keys.setGuard($("keys-guard").value);
  $("keys-guard").value = String(keys.guardMs);
}); 

$("keys-btn").addEventListener("click", () => {
  listeningFor = null;
  drawKeysDialog();
  $("keys-dialog").showModal();
});
// The status view: the table's parts as /api/health says, refreshed while open.
const healthDialog = new HealthDialog($("health-dialog"), $("health-rows"), $("health-faults"), table);
$("health-btn").addEventListener("click", () => healthDialog.open());

// The camera's clips (issue 21 point 5): the button shows when this service's camera
// watches this table and keeps clips; the viewer's "Back to the clock" closes the dialog.
const clipViewer = new ClipViewer($("clip-view"), { onBack: () => $("clip-dialog").close() });
$("clip-dialog").addEventListener("close", () => clipViewer.close());
$("clips-btn").addEventListener("click", () => {
  $("clip-dialog").showModal();
  clipViewer.list({ table });
});
fetch("/api/camera", { cache: "no-store" }).then(async (response) => {
  if (!response.ok) return;
  const camera = await response.json();
  if (camera.table === table && camera.evidence) $("clips-btn").classList.remove("hidden");
}).catch(() => { /* no camera here */ });
onLangChange(() => clipViewer.texts());
$("keys-reset").addEventListener("click", () => { keys.reset(); drawKeysDialog(); drawKeyHints(); });
// Capture: after "+ key" the focus may be anywhere, and Enter must not submit the dialog.
document.addEventListener("keydown", (ev) => {
  if (!listeningFor || !$("keys-dialog").open) return;
  ev.preventDefault();
  ev.stopPropagation();
  if (ev.key !== "Escape") keys.assign(listeningFor, keyName(ev));
  listeningFor = null;
  drawKeysDialog();
  drawKeyHints();
}, true);
$("keys-dialog").addEventListener("cancel", (ev) => { if (listeningFor) ev.preventDefault(); });
$("keys-dialog").addEventListener("close", () => { listeningFor = null; });

// -- wiring ------------------------------------------------------------------------------------
for (const button of document.querySelectorAll("#console [data-action]")) {
  button.addEventListener("click", () => {
    button.blur(); // Space/Enter must not "click" the last tapped button again
    press(button.dataset.action, `tap:${button.id}`);
  });
}
$("token-btn").addEventListener("click", openTokenDialog);

document.addEventListener("keyup", (ev) => {
  if (ev.key === " " && !document.querySelector("dialog[open]")) ev.preventDefault();
});

document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat) return;
  if (document.querySelector("dialog[open]")) return; // dialogs take their own keys
  const tag = (ev.target && ev.target.tagName) || "";
  if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") return;
  const name = keyName(ev);
  const action = keys.action(name);
  if (!action) {
    // A clicker's or pedal's key that does nothing here: say so, and where to give it one.
    if (CLICKER_KEYS.includes(name) && name !== "Escape") {
      ev.preventDefault();
      showBanner("info", { key: "keys.unassigned", vars: { key: keyLabel(name) } },
        { title: t("keys.unassigned_title"), fade: 3000 });
    }
    return;
  }
  ev.preventDefault(); // space would "click" a focused button, PageDown would scroll
  press(action, `key:${name}`);
});

// -- the result panel (static/js/result.js) -------------------------------------------------------
const wide = window.matchMedia("(min-width: 900px)");
const panel = mountResultPanel($("result-panel"), {
  state: () => state,
  send: (name, body) => command(name, body),
  showError: (error) => showBanner("error", error),
  showWhy: (why) => showBanner("why", why, { fade: 4000 }),
  busy: () => inFlight > 0,
  sent: async (before) => {
    if (!wide.matches) panel.close();
    window.scrollTo({ top: 0, behavior: "instant" }); // the board and the main button again
    if (!card || card.seq <= before) await fetchSince(before);
  },
});

function openResultPanel() {
  panel.open();
  $("result-panel").scrollIntoView({ block: "start", behavior: "instant" });
  drawFloat();
}

// While the panel is open on a phone the page is scrolled to it, and the main button is
// above, off the screen: while the clock runs it floats at the bottom, so the shot can be
// pressed the moment it is played (issue 23: the open call editor hid Shot).
function drawFloat() {
  const float = $("btn-float-main");
  const main = mainCommand(state);
  const on = Boolean(state) && !wide.matches && panel.isOpen() && main.name === "shot";
  float.classList.toggle("hidden", !on);
  document.body.classList.toggle("floating", on);
  if (on) {
    float.textContent = t(main.label);
    float.dataset.command = main.name;
  }
}

$("btn-float-main").addEventListener("click", () => {
  $("btn-float-main").blur();
  press("main", "tap:btn-main"); // one guard with the main button: both are one button
});
new MutationObserver(() => drawFloat()).observe($("result-panel"), { attributes: true, attributeFilter: ["class"] });
wide.addEventListener("change", () => drawFloat());

// If the reply overtook the feed, read the events from the log for the card.
async function fetchSince(since) {
  const res = await fetch(`/api/tables/${encodeURIComponent(table)}/events?since=${since}&limit=20`,
    { cache: "no-store" });
  if (!res.ok) return;
  const events = await res.json();
  const list = Array.isArray(events) ? events : events.events || [];
  for (const event of list) takeEvent(event);
}

// -- the card: one shot, one time foul, one foul or one frame end; gone at the next start ------
let card = null; // {kind, seq, at, ...}
let lastSeqTaken = 0;

// The running shot, from the events: when its clock started and its deadline now. A shot
// stopped sooner after its start than anyone can see the balls at rest and then the cue
// strike is flagged for the referee as a probable double press (I18, docs/RULES.md): it
// stands (the service cannot tell a bounce from a very quick player), the card says so and
// offers the undo. Every source counts: a button, the pedal, another console.
const QUICK_SHOT_MS = 300;
let run = null; // {startedAt, deadline} on the service's clock

function trackRun(event, d) {
  switch (event.type) {
    case "clock.started":
    case "clock.resumed":
      run = d.deadline != null && d.remaining_ms != null
        ? { startedAt: d.deadline - d.remaining_ms, deadline: d.deadline } : null;
      return null;
    case "clock.extended":
    case "clock.corrected":
      if (run && d.deadline != null) run.deadline = d.deadline;
      return null;
    case "clock.stopped": {
      const was = run;
      run = null;
      if (!was || d.reason !== "shot" || d.remaining_ms == null) return null;
      const played = was.deadline - d.remaining_ms - was.startedAt;
      return played >= 0 && played < QUICK_SHOT_MS ? played : null;
    }
    default:
      return null;
  }
}

function takeEvent(event) {
  if (event.seq <= lastSeqTaken) return;
  lastSeqTaken = event.seq;
  const d = event.data || {};
  const quick = trackRun(event, d);
  if (quick != null) {
    card = { kind: "quick", seq: event.seq, at: event.at, player: d.player, ms: quick };
    drawCard();
    return;
  }
  const same = card && card.at === event.at; // the events of one command share their `at`
  switch (event.type) {
    case "shot.result":
      card = { kind: "result", seq: event.seq, at: event.at, player: d.player, outcome: d.outcome,
        whites: d.whites, respots: null, match: null };
      break;
    case "clock.expired":
      card = { kind: "time", seq: event.seq, at: event.at, player: d.player, fouls: [], turn: null };
      break;
    case "foul":
      if (same && card.kind === "result") break; // the result card lists its fouls already
      if (same && card.kind === "time") { card.fouls.push(d); break; }
      card = { kind: "foul", seq: event.seq, at: event.at, player: d.player, fouls: [d], turn: null };
      break;
    case "respot":
      // A result's, or a foul's (a ball off the table goes back, 11): the card says where.
      if (same && (card.kind === "result" || card.kind === "foul")) card.respots = d.respots;
      break;
    case "turn":
      if (same) card.turn = d;
      break;
    case "frame.ended":
      if (same && card.kind === "result") { card.ended = d; break; }
      card = { ...(same ? card : {}), kind: "end", seq: event.seq, at: event.at, ended: d,
        cause: same ? card.kind : null };
      break;
    case "match.ended":
      if (card) card.match = d;
      break;
    case "frame.started":
      if (same && card.kind === "end") card.next = d; // the referee ended one and began the next
      else card = null;
      break;
    case "clock.started":
    case "correction.undone":
      card = null; // the card belongs to one shot: the next start (or an undo) takes it away
      if (event.type === "correction.undone") {
        showBanner("info", { key: "banner.undone", vars: { what: t(`step.${d.undone}`) } }, { fade: 2500 });
      }
      break;
    default:
      return;
  }
  if (card) card.seq = Math.max(card.seq, event.seq);
  drawCard();
}

const name = (i) => (i == null || !state ? "–" : state.players[i]);

function foulCount(d) {
  return Array.isArray(d.fouls) ? d.fouls[d.player] : null;
}

function cardContent() {
  const lines = [];
  let title;
  let kind = card.kind;
  if (card.kind === "quick") {
    title = t("card.quick_shot", { s: decimal(card.ms / 1000, 2), name: name(card.player) });
    lines.push({ kind: "foul", text: t("card.quick_shot_undo"), rule: "I18" });
    return { title, lines, kind: "foul" };
  }
  if (card.kind === "result") {
    title = t("res.summary", { name: name(card.player) });
    lines.push(...summaryLines(card, state.players));
    kind = card.outcome.frame_over ? "end" : card.outcome.fouls.length ? "foul" : "ok";
  } else if (card.kind === "time" || card.kind === "foul" || (card.kind === "end" && card.fouls)) {
    const first = card.fouls && card.fouls[0];
    if (card.kind === "time" || card.cause === "time") {
      title = t("card.time_foul", { name: name(card.player) });
    } else {
      title = t("card.foul", { name: name(card.player) });
      if (first) lines.push({ kind: "foul", text: foulText(first), rule: first.rule });
      for (const r of card.respots || []) {
        lines.push({ kind: "respot", text: respotText(r), rule: r.rule, title: respotDetail(r) });
      }
    }
    if (card.turn && state.hand_back_to != null) {
      lines.push({ kind: "turn", text: t("res.choice", { name: name(card.turn.player) }), rule: "10.4" });
    } else if (card.turn) {
      lines.push({ kind: "turn", text: t("res.turn_passes", { name: name(card.turn.player) }) });
    }
    if (first && !first.technical_loss && foulCount(first) === 1) {
      lines.push({ kind: "foul", text: t("card.one_foul", { name: name(first.player) }), rule: "10.5" });
    }
  }
  if (card.kind === "end") {
    const e = card.ended;
    kind = "end";
    if (e.reason === "technical_loss") {
      title = t("card.technical_loss", { name: name(e.winner == null ? null : 1 - e.winner) });
      lines.push({ kind: "end", text: t("card.frame_to", { name: name(e.winner) }), rule: "10.5-10.6" });
    } else {
      title = t("card.frame_over", { frame: e.frame });
      lines.push({ kind: "end", text: e.winner == null ? t("card.no_winner")
        : t("card.winner_why", { name: name(e.winner), reason: t(`end.${e.reason}`) }) });
    }
    if (Array.isArray(e.frames_won)) lines.push({ kind: "", text: t("card.score", { a: e.frames_won[0], b: e.frames_won[1] }) });
    if (card.next) lines.push({ kind: "", text: t("card.next_frame", { frame: card.next.frame, name: name(card.next.breaker) }) });
  }
  if (card.match && card.kind !== "result") {
    const m = card.match;
    lines.push({ kind: "end", text: t("res.match_end", { name: name(m.winner), score: winnerScore(m) }) });
  }
  return { title, lines, kind };
}

function drawCard() {
  const box = $("outcome");
  if (!card || !state) {
    box.classList.add("hidden");
    drawHint();
    return;
  }
  const { title, lines, kind } = cardContent();
  box.classList.remove("hidden");
  box.dataset.kind = kind;
  box.dataset.card = card.kind;
  $("outcome-title").textContent = title;
  $("outcome-lines").replaceChildren(...lines.map((line) => {
    const li = document.createElement("li");
    li.className = line.kind || "";
    li.append(document.createTextNode(line.rule ? stripRule(line.text, line.rule) : line.text));
    if (line.title) li.title = line.title;
    if (line.rule) {
      const rule = document.createElement("span");
      rule.className = "rule";
      rule.textContent = ruleLabel(line.rule);
      li.append(" ", rule);
    }
    return li;
  }));
  drawHint();
}

$("outcome-close").addEventListener("click", () => { card = null; drawCard(); });

// What to do now, when nothing else is to be said; the service's faults in full first (the
// strip has room for a word of each only).
function drawHint() {
  const hint = $("hint");
  hint.classList.toggle("hidden", Boolean(card));
  if (!state || card) return;
  if (strip.faults.length) {
    hint.dataset.kind = "faults";
    hint.replaceChildren(...strip.faults.map((fault) => {
      const line = document.createElement("div");
      line.className = "fault";
      line.dataset.level = faultLevel(fault);
      line.textContent = errorText(fault, fault.vars).text;
      return line;
    }));
    return;
  }
  delete hint.dataset.kind;
  const who = name(state.player);
  let text;
  if (conn.status !== "live") {  // what to do now: nothing here reaches the service
    hint.textContent = t("hint.link_down");
    return;
  }
  switch (state.phase) {
    case ClockPhase.READY: text = t(state.on_break ? "hint.break" : "hint.ready", { name: who }); break;
    case ClockPhase.RUNNING: text = t("hint.running", { name: who }); break;
    case ClockPhase.PAUSED: text = t("hint.paused"); break;
    case ClockPhase.EXPIRED: text = t("hint.expired", { name: who, other: name(state.hand_back_to) }); break;
    default:
      if (state.match && state.match.over) text = t("hint.match_over", { name: name(state.match.winner) });
      else if (state.frame_winner != null) text = t("hint.frame_won", { name: name(state.frame_winner), reason: t(`end.${state.frame_end_reason}`) });
      else text = t("hint.frame_over");
  }
  hint.textContent = text;
}

// -- drawing ------------------------------------------------------------------------------------
function playerStats(i) {
  const parts = [
    `${t("label.fouls")}: ${state.fouls[i]}`,
    `${t("label.extensions")}: ${state.extensions_left[i]}`,
  ];
  if (Array.isArray(state.whites)) parts.push(`${t("label.whites")}: ${state.whites[i]}`);
  if (state.match && Array.isArray(state.match.score)) parts.push(`${t("label.match")}: ${state.match.score[i]}`);
  return parts.join(" · ");
}

function setDisabled(button, why) {
  if (why) {
    button.setAttribute("aria-disabled", "true");
    const { text, rule } = errorText(why, { name: state ? state.players[state.player] : "" });
    button.title = rule ? `${stripRule(text, rule)} (${ruleLabel(rule)})` : text;
    button.dataset.why = why.code || "";
  } else {
    button.removeAttribute("aria-disabled");
    button.removeAttribute("title");
    delete button.dataset.why;
  }
}

function draw() {
  if (!state) return;
  for (let i = 0; i < 2; i++) {
    const el = $(`p${i}`);
    el.querySelector(".name").textContent = state.players[i];
    el.querySelector(".stats").textContent = playerStats(i);
    const fouls = el.querySelector(".mark.fouls");
    fouls.dataset.n = String(state.fouls[i]);
    fouls.textContent = t("mark.fouls", { n: state.fouls[i] });
    // The extensions left as a count (issue 36), as the hall and the overlay say it.
    const ext = el.querySelector(".mark.ext");
    ext.dataset.n = String(state.extensions_left[i]);
    ext.textContent = `${t("mark.ext")} ${state.extensions_left[i]}`;
    ext.classList.toggle("hidden", !state.timer);
    el.classList.toggle("at-table", state.player === i && state.phase !== ClockPhase.FRAME_OVER);
    const whites = el.querySelector(".whites");
    whites.classList.toggle("hidden", !Array.isArray(state.whites));
    if (Array.isArray(state.whites)) whites.querySelector("b").textContent = state.whites[i];
  }
  $("round").textContent = state.round;
  $("limit").textContent = state.timer ? `${seconds(state.limit_ms)} ${t("label.sec")}` : "–";
  $("frame").textContent = state.frame;
  $("visit").textContent = state.visit;
  const matchOver = state.phase === ClockPhase.FRAME_OVER && state.match && state.match.over;
  $("phase").textContent = t(`phase.${matchOver ? "match_over" : state.phase}`);
  // Frame over: the clock's place says who won and why.
  const won = state.frame_winner;
  $("over-name").textContent = won == null ? t("card.no_winner") : t("over.winner", { name: state.players[won] });
  $("over-why").textContent = state.frame_end_reason ? t(`end.${state.frame_end_reason}`) : "";

  const main = mainCommand(state);
  const mainBtn = $("btn-main");
  mainBtn.textContent = t(main.label);
  mainBtn.dataset.command = main.name || "";
  setDisabled(mainBtn, whyNot(main.name));
  for (const button of document.querySelectorAll(".buttons [data-action]")) {
    setDisabled(button, whyNot(ACTION_COMMAND[button.dataset.action]()));
  }
  $("btn-pause").textContent = t(state.phase === ClockPhase.PAUSED ? "btn.resume" : "btn.pause");
  // The long labels name whom or what; where even the smallest size cannot hold one, the
  // button says its short label and the long one is its tooltip (fitTexts, labelled()).
  labelled($("btn-hand-back"), state.hand_back_to == null ? t("btn.hand_back")
    : t("btn.hand_back_to", { name: state.players[state.hand_back_to] }), t("btn.hand_back"));
  const undo = $("btn-undo");
  labelled(undo, state.can_undo ? t("btn.undo_what", { what: undoWhat() }) : t("btn.undo"), t("btn.undo"));
  undo.dataset.step = state.can_undo || "";
  $("btn-result").classList.toggle("due", state.phase === ClockPhase.READY && state.can_undo === "shot");
  const resultLabel = $("btn-result").querySelector("span");
  resultLabel.dataset.i18n = resultButtonLabel(state);
  resultLabel.textContent = t(resultLabel.dataset.i18n);
  drawScore();
  $("btn-shot-clock-on").classList.toggle("hidden", !state.allowed.includes("shot_clock_on"));
  nextMatch.update(state);
  drawCard();
  panel.redraw();
  if ($("foul-dialog").open) drawFoulDialog();
  looks.now();
  fitTexts();
  drawFloat();
}

// Names, the winner and the button labels in full (issue 23): smaller, wrapped, never cut.
function fitTexts() {
  // The table's id in the bar (an id may have 32 characters): smaller before it is cut.
  fitText($("table-id").parentElement, { min: 11 });
  for (let i = 0; i < 2; i++) {
    fitText($(`p${i}`).querySelector(".name"), { min: 14, wrap: { min: 11 } });
    fitText($(`p${i}`).querySelector(".marks"), { min: 10 });
  }
  if (state && state.phase === ClockPhase.FRAME_OVER) {
    fitText($("over-name"), { min: 18, wrap: { min: 12 } });
    fitText($("over-why"), { min: 12 });
  }
  if (!$("btn-next-match").classList.contains("hidden")) {
    fitText($("btn-next-match").querySelector(".next-do"), { min: 16 });
    fitText($("btn-next-match").querySelector(".next-who"), { min: 13, wrap: { min: 12 } });
  }
  for (const button of document.querySelectorAll(".buttons .btn")) {
    if (button.dataset.full && button.textContent !== button.dataset.full) button.textContent = button.dataset.full;
    fitText(button, { min: 12 });
    const cut = button.scrollHeight > button.clientHeight + 1 || button.scrollWidth > button.clientWidth + 1;
    if (cut && button.dataset.short) {
      button.textContent = button.dataset.short;
      fitText(button, { min: 12 });
    }
  }
}

function labelled(button, full, short) {
  button.dataset.full = full;
  button.dataset.short = short !== full ? short : "";
  button.textContent = full;
  if (!button.dataset.why) {
    if (full !== short) button.title = full; else button.removeAttribute("title");
  }
}
refitOn(fitTexts);

function drawScore() {
  const m = state.match;
  $("score").classList.toggle("invisible", !m);
  $("score").classList.toggle("with-clock", Boolean(state.match_clock));
  if (!m) return;
  $("score-value").textContent = `${m.score[0]} : ${m.score[1]}`;
  $("score-race").textContent = m.race_to ? t("label.race_to", { n: m.race_to }) : "";
}

function drawClockLiveness() {
  $("clock-box").classList.toggle("stale", conn.status !== "live" || !conn.live);
  $("clock-box").classList.toggle("table-offline", !conn.live);
}

function tick() {
  if (!state) return Infinity;
  const { text, stage, next } = render(state, conn.frozenNow());
  const clock = $("clock");
  const shown = text || "–";
  if (clock.textContent !== shown) clock.textContent = shown;
  if ($("clock-box").dataset.stage !== stage) $("clock-box").dataset.stage = stage;
  drawMatchClock($("match-clock"), state, conn.frozenNow());
  return next;
}

onLangChange(() => {
  setTitle();
  strip.draw();
  if (lastBanner) showBanner(lastBanner.kind, lastBanner.error, lastBanner);
  if ($("keys-dialog").open) drawKeysDialog();
  if ($("health-dialog").open) healthDialog.draw();
  $("unknown-text").textContent = t("unknown.text", { table });
  draw();
  drawHint();
});

// The draw's next match: once the match is over, "Start next match" takes the main
// button's place (the draw's players, race and event; POST /api/tables/{id}/next).
const nextMatch = new NextMatch(table, (next) => drawNext(next));
function drawNext(next) {
  const button = $("btn-next-match");
  button.classList.toggle("hidden", !next);
  $("btn-main").classList.toggle("hidden", Boolean(next));
  button.querySelector(".next-who").textContent = next ? nextLine(next) : "";
  button.setAttribute("aria-label", next ? `${t("btn.start_next")}: ${nextLine(next)}` : "");
  fitTexts();
}
onLangChange(() => drawNext(nextMatch.next));
$("btn-next-match").addEventListener("click", async () => {
  $("btn-next-match").disabled = true;
  const result = await nextMatch.start();
  $("btn-next-match").disabled = false;
  if (result.ok) conn.offerState(result.body, "new_match");
  else showBanner("error", (result.body && result.body.error) || { code: "error" });
});

// Slow play: the referee switches the shot clock on for the rest of the match (12.1), with
// the reason the command requires.
$("btn-shot-clock-on").addEventListener("click", () => {
  const reason = window.prompt(t("prompt.shot_clock_on"), "");
  if (reason && reason.trim()) command("shot_clock_on", { reason: reason.trim(), scope: "match" });
});

applyI18n();
bindLangToggle($("lang"));
$("unknown-text").textContent = t("unknown.text", { table });
drawKeyHints();
drawHint();
window.shotclockConnection = conn; // for debugging from the console (and the tests)
conn.start();
