// OBS overlay: a smooth countdown drawn from the server's deadline and the estimated clock
// offset (never the local clock alone): the digits change at the moment they are due, and the
// bar glides between the page's looks (a CSS transition). Reconnects forever.
// Query: table, position=top|bottom, scale (0.3..3), theme=dark|light|green, lang, flash=0,
// stats=1 (the stats lower-third: average shot time and time fouls, overlay_stats.js),
// layout=third|bug|clock (a lower third, a corner bug at ?corner=tl|tr|bl|br, the clock
// alone full screen), safe=title|action (margins: 10% or 5% of the picture), from=N (on
// air only while the clock counts at or below N seconds, or shows the expiry).
//
// In and out: a graphic comes on air by moving in, never by fading in, so the state it
// shows is on air from its first frame; it fades out only once there is nothing left to
// show, and comes back at once (the fade cut short) when there is. No animation ever runs
// on the digits or holds a change back: every frame draws the state as it is.
//
// On air: one look per event (a flash tab: foul red, extension blue, warning amber, expiry
// red flashing, frame won gold), fouls amber at one and red at two, the frames won next to
// each name, and when a frame or the match is over the winner, why and the score, held
// until the next frame starts. "running" and "ready" never go on air.
//
// A table whose state the service says is not live (through the hall service, its own
// service is offline): no time goes on air at all. The digits and the bar are taken off
// and a "clock offline" marker stands in the info line; names, fouls and score stay as last
// known. Hidden rather than frozen: on a stream a still number reads as a paused clock, and
// a viewer cannot see a marker's small print; the time is back when the table is.

import { TableConnection, tableFromQuery } from "./connection.js";
import { LOOK_EVERY_MS, Steady, animate, render, seconds } from "./countdown.js";
import { applyI18n, onLangChange, t } from "./i18n.js";
import { callShort } from "./result.js";
import { fitText, refitOn } from "./fit.js";
import { drawMatchClock } from "./tournament.js";
import { ClockPhase } from "./phases.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const table = tableFromQuery("1");
const stage = $("stage");
const third = $("third");

stage.dataset.position = params.get("position") === "top" ? "top" : "bottom";
const theme = params.get("theme");
stage.dataset.theme = ["dark", "light", "green"].includes(theme) ? theme : "dark";
const layout = ["third", "bug", "clock"].includes(params.get("layout")) ? params.get("layout") : "third";
stage.dataset.layout = layout;
const corner = params.get("corner");
stage.dataset.corner = ["tl", "tr", "bl", "br"].includes(corner) ? corner : "tl";
// Safe areas: every graphic inside the title-safe area (10% in from each edge), or the
// action-safe one (5%) when the producer asks for it.
const safe = params.get("safe") === "action" ? 0.05 : 0.10;
stage.dataset.safe = safe === 0.05 ? "action" : "title";
const fromS = Number(params.get("from"));
const fromMs = params.has("from") && Number.isFinite(fromS) && fromS > 0 ? fromS * 1000 : null;
third.dataset.air = fromMs == null ? "on" : "off";
const scale = Number(params.get("scale"));
// Each layout's box at scale 1 (overlay.css).
const BOX = { third: [1460, 116], bug: [570, 128], clock: [1000, 560] }[layout];
if (params.has("scale") && Number.isFinite(scale) && scale >= 0.3 && scale <= 3) {
  third.style.setProperty("--scale", scale);
} else {
  // No scale asked for: 1 in a 1920x1080 OBS source, smaller in anything smaller, always
  // inside the safe area.
  const fit = () => third.style.setProperty("--scale", Math.min(1,
    (innerWidth * (1 - 2 * safe)) / BOX[0], (innerHeight * (1 - 2 * safe)) / BOX[1]));
  fit();
  addEventListener("resize", fit);
}
// The query is applied: compute the styles once with every transition off (overlay.css,
// [data-settling]), so nothing fades from the page's defaults, then draw.
void getComputedStyle(third).backgroundColor;
for (const el of third.querySelectorAll(".side")) void getComputedStyle(el).backgroundColor;
delete stage.dataset.settling;
const flashes = params.get("flash") !== "0" && layout !== "clock"; // the clock alone: no tabs

let state = null;
let flashTimer = 0;
const steady = new Steady();
const shown = []; // every flash put on air: {kind, text} (for the curious, and the tests)
window.shotclockFlashes = shown;

let statsThird = null; // ?stats=1: the stats lower-third (overlay_stats.js)

const conn = new TableConnection(table, {
  onState: (s) => { state = s; draw(); statsThird?.onState(s); },
  onEvent: (event, meta) => {
    if (!meta.replayed) onAir(event);
    statsThird?.onEvent(event, meta);
  },
  onStatus: (status) => { third.dataset.status = status; looks.now(); }, // off air at once
  onLive: (live) => { third.dataset.table = live ? "live" : "offline"; draw(); },
}, { pingEveryMs: 1000 });
const looks = animate(tick);

/** The look of an event: {kind, text} or null (not every event is news on air). */
function lookOf(event) {
  const s = event.state || state;
  if (!s) return null;
  const who = (i) => (i == null ? "" : s.players[i]);
  const d = event.data || {};
  switch (event.type) {
    case "foul":
      if (d.technical_loss) return { kind: "technical_loss", text: t("flash.technical_loss", { name: who(d.player) }) };
      if (d.rule === "12.4") return null; // the expiry already said it
      return { kind: "foul", text: t("flash.foul_n", { name: who(d.player), n: (d.fouls || [])[d.player] }) };
    case "clock.extended": return { kind: "extension", text: t("flash.extension", { name: who(d.player) }) };
    case "clock.warning": return { kind: "warning", text: t("flash.warning", { s: seconds(d.threshold_ms) }) };
    case "clock.expired": return { kind: "expired", text: t("flash.expired", { name: who(d.player) }) };
    case "frame.ended":
      return d.winner == null ? null : { kind: "frame_won", text: t("flash.frame_won", { name: who(d.winner) }) };
    case "match.ended": return { kind: "match_won", text: t("flash.match_won", { name: who(d.winner) }) };
    case "frame.started": return { kind: "frame", text: t("flash.frame_breaks", { frame: d.frame, name: who(d.breaker) }) };
    default: return null;
  }
}

function onAir(event) {
  const look = lookOf(event);
  if (!look) return;
  shown.push(look);
  // The player's side answers too: red for a foul, the extension mark blue.
  const d = event.data || {};
  if (d.player != null && (look.kind === "foul" || look.kind === "technical_loss" || look.kind === "extension")) {
    const side = $(`p${d.player}`);
    const cls = look.kind === "extension" ? "hit-extension" : "hit-foul";
    side.classList.remove(cls);
    void side.offsetWidth; // restart the animation
    side.classList.add(cls);
  }
  if (!flashes) return;
  const el = $("flash");
  el.textContent = look.text;
  el.dataset.kind = look.kind;
  el.classList.remove("hidden");
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => el.classList.add("hidden"), look.kind === "warning" ? 1500 : 3500);
}

function setMark(el, value) {
  const b = el.querySelector("b");
  const text = String(value);
  if (b.textContent !== text) b.textContent = text;
  el.dataset.n = text;
}

// Only what a viewer needs: never "running" or "ready".
const PHASE_ON_AIR = { paused: "phase.paused", expired: "phase.expired" };

function draw() {
  if (!state) return;
  const m = state.match || { score: state.frames_won || [0, 0], race_to: null, over: false };
  for (let i = 0; i < 2; i++) {
    const side = $(`p${i}`);
    side.querySelector(".name").textContent = state.players[i];
    setMark(side.querySelector(".fouls"), state.fouls[i]);
    setMark(side.querySelector(".ext"), state.extensions_left[i]);
    side.querySelector(".ext").classList.toggle("hidden", !state.timer);
    const whites = side.querySelector(".whites");
    whites.classList.toggle("hidden", !Array.isArray(state.whites));
    if (Array.isArray(state.whites)) setMark(whites, state.whites[i]);
    side.classList.toggle("at-table", state.player === i && state.phase !== ClockPhase.FRAME_OVER);
    $(`frames${i}`).textContent = m.score[i];
  }
  const key = conn.live ? PHASE_ON_AIR[state.phase] : "overlay.table_offline";
  $("phase").textContent = key ? t(key) : "";
  $("frame-info").textContent = [t("overlay.frame", { n: state.frame }),
    m.race_to ? t("label.race_to", { n: m.race_to }) : null].filter(Boolean).join(" · ");
  // The call in force (announced, not yet judged): a tag in the name row of the player at
  // the table, so the third keeps its height. Gone once the result has judged it.
  const call = state.announced_call;
  for (let i = 0; i < 2; i++) {
    const tag = $(`p${i}`).querySelector(".call-tag");
    const on = Boolean(call) && state.player === i;
    tag.classList.toggle("hidden", !on);
    tag.querySelector(".k").textContent = on ? t("res.call") : "";
    tag.querySelector("b").textContent = on ? callShort(call) : "";
  }
  drawOver(m);
  looks.now(); // the stage first: the winner's lines are measured once they are displayed
  fitTexts();
}

// Names and the winner's lines in full: smaller, then on two lines, never cut (fit.js).
function fitTexts() {
  for (let i = 0; i < 2; i++) {
    const side = $(`p${i}`);
    fitText(side.querySelector(".call-tag b"), { min: 11 });
    fitText(side.querySelector(".name"), { min: 26, wrap: { min: 14 } });
  }
  if (state && state.phase === ClockPhase.FRAME_OVER) {
    fitText($("over-title"), { min: 20, wrap: { min: 13 } });
    const whyEl = $("over-why");
    if (whyEl.textContent !== overWhy) whyEl.textContent = overWhy;
    const least = layout === "bug" ? 11 : 13; // the bug's centre is 160 px wide
    fitText(whyEl, { min: least });
    if (whyEl.scrollHeight > whyEl.clientHeight + 1 || whyEl.scrollWidth > whyEl.clientWidth + 1) {
      whyEl.textContent = overWhyShort;
      fitText(whyEl, { min: least });
    }
  }
  fitText(third.querySelector(".info"), { min: layout === "bug" ? 11 : 14 });
}
refitOn(fitTexts);

function drawOver(m) {
  const over = state.phase === ClockPhase.FRAME_OVER;
  third.classList.toggle("match-over", Boolean(over && m.over));
  if (!over) return;
  // The winner's name as the title (it fits), what was won and why under it.
  const winner = state.frame_winner;
  const matchWon = m.over && m.winner != null;
  const who = matchWon ? m.winner : winner;
  $("over-title").textContent = who == null ? t("over.no_winner") : state.players[who];
  const reason = state.frame_end_reason ? t(`end.${state.frame_end_reason}`) : "";
  let why = reason;
  if (state.frame_end_reason === "technical_loss" && winner != null) {
    why = t("over.technical_loss", { name: state.players[1 - winner] });
  }
  // "match over" in words, and the score in the winner's favour ("match over · won 2:0",
  // whichever side won; issue 23 point 4).
  const won = matchWon ? t("overlay.won_match", { score: `${m.score[0]}:${m.score[1]}` })
    : who == null ? "" : t("overlay.won_frame", { n: state.frame });
  overWhy = [won, why].filter(Boolean).join(" · ");
  // Two long names do not fit the centre cell: then the loser's name is left out.
  overWhyShort = [won, reason].filter(Boolean).join(" · ");
  $("over-why").textContent = overWhy;
}
let overWhy = "";
let overWhyShort = "";

function tick() {
  if (!state) return Infinity;
  // Off air while the table's service is offline or this page lost the service (a hung
  // service: no countdown from data that may be old).
  const { text, stage: look, remaining, next } = conn.live && conn.status === "live"
    ? render(state, conn.serverNow(), steady)
    : { text: "–", stage: state.phase === ClockPhase.FRAME_OVER ? "frame_over" : "offline", remaining: null,
        next: Infinity };
  const clock = $("clock");
  const digits = text || "–";
  if (clock.textContent !== digits) clock.textContent = digits;
  if (third.dataset.stage !== look) third.dataset.stage = look;
  const air = airOf(look, remaining);
  if (third.dataset.air !== air) {
    // Coming back on air moves in (air-in); the first picture of the page does not move,
    // so it is where it stays from the start.
    const back = air === "on" && third.dataset.air === "off";
    third.dataset.air = air;
    if (back) {
      third.classList.remove("air-in");
      void third.offsetWidth; // restart the animation
      third.classList.add("air-in");
    }
  }
  // The bar, the visibly smooth part of the countdown, moves on every frame: the compositor
  // takes it, linearly, to where it is due at the page's next look (animate() aims its timer
  // at the same ms, ceil + 1), so the page itself draws ~10 times a second.
  const limit = Math.max(state.limit_ms || 0, state.remaining_ms || 0, 1);
  const glide = Number.isFinite(next) ? Math.ceil(Math.min(next, LOOK_EVERY_MS)) + 1 : 0;
  const due = remaining == null ? 0 : Math.max(0, remaining - glide);
  const bar = $("progress");
  const transition = glide ? `transform ${glide}ms linear` : "none";
  if (bar.style.transition !== transition) bar.style.transition = transition;
  bar.style.transform = `scaleX(${Math.min(1, due / limit)})`;
  drawMatchClock($("match-clock"), state, conn.frozenNow(), null, { short: layout === "bug" });
  third.classList.toggle("with-mc", Boolean(state.match_clock));
  return next;
}

/** "on" or "off": with ?from=N, on air only while the clock counts at or below N s or
 * shows the expiry; always on otherwise. */
function airOf(look, remaining) {
  if (fromMs == null) return "on";
  if (look === "expired") return "on";
  const counting = look === "running" || look === "warning" || look === "critical";
  return counting && remaining != null && remaining <= fromMs ? "on" : "off";
}

applyI18n();
onLangChange(() => { draw(); statsThird?.redraw(); });
if (params.get("stats") === "1") {
  import("./overlay_stats.js").then(({ mountStatsThird }) => {
    statsThird = mountStatsThird(third);
    if (state) statsThird.onState(state);
  });
}
window.shotclockConnection = conn; // for debugging from the console (and the tests)
conn.start();
