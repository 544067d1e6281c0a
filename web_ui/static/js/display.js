// Table-side display for spectators at 3-4 m: big digits with the firmware's rounding
// (countdown.js = render.py), the score and the frame always, fouls and the extension large,
// the frame's winner and why when it is over. A dead link is shown within 1.5 s (pings every
// 0.5 s; no message for 1.2 s: stale): the digits turn grey and striped under a large
// "no connection", never a green countdown from stale data. After a reconnect, a countdown
// that went up says why (the events replayed since). ?kiosk=1: nothing to click, sound on
// where the browser allows it (Chromium --autoplay-policy=no-user-gesture-required).
// Through the hall service, a table whose own service is offline (the service says
// live: false) gets the same treatment, "table offline / last known", its digits frozen
// at the moment it went stale.

import { TableConnection, tableFromQuery } from "./connection.js";
import { Steady, animate, remainingAt, render } from "./countdown.js";
import { applyI18n, bindLangToggle, onLangChange, t } from "./i18n.js";
import { callLine } from "./result.js";
import { Buzzer } from "./sound.js";
import { StatusStrip } from "./status.js";
import { NextMatch, drawMatchClock, nextLine } from "./tournament.js";
import { fitBlock, fitText, refitOn } from "./fit.js";
import { ClockPhase } from "./phases.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const table = tableFromQuery("1");
const kiosk = params.get("kiosk") === "1";
$("table-id").textContent = table;
document.body.classList.toggle("kiosk", kiosk);

let state = null;
const steady = new Steady();
// The draw's next match, shown once this one is over ("Next: Ivanov – Petrov, race to 3").
const nextMatch = new NextMatch(table, (next) => drawNext(next));
function drawNext(next) {
  $("next-match").textContent = nextLine(next);
  $("next-match").classList.toggle("hidden", !next);
}
const buzzer = new Buzzer();
window.shotclockBuzzer = buzzer;
const strip = new StatusStrip($("status"));
const link = { lostAt: null, lastMessageAt: null }; // for the curious (and the tests)
window.shotclockLink = link;

let wasAway = false; // the link was lost since the last snapshot
let seen = null; // the last seq this page has shown
let jump = null; // {before: ms shown before the reconnect, until: snapshot seq, events: replayed}

const conn = new TableConnection(table, {
  onState: (s, why) => {
    const prev = seen;
    if (why === "snapshot" && wasAway && state) {
      // The snapshot comes first, the events missed meanwhile after it (up to its seq).
      jump = { before: remainingAt(state, conn.serverNow()), until: s.seq, events: [] };
      wasAway = false;
    }
    state = s;
    seen = s.seq;
    nextMatch.update(s);
    if (jump && prev != null && prev >= jump.until) finishJump(); // nothing was missed
    draw();
  },
  onEvent: (event, { replayed }) => {
    if (replayed) { // old news: no beeps for what happened while away, but the reasons
      if (jump) {
        jump.events.push(event);
        if (event.seq >= jump.until) finishJump();
      }
      return;
    }
    seen = event.seq;
    if (event.type === "clock.warning") buzzer.warning();
    else if (event.type === "clock.expired") buzzer.expired();
  },
  onStatus: (status) => {
    strip.setConnection(status);
    if (status !== "live" && document.body.dataset.link === "live") {
      link.lostAt = performance.timeOrigin + performance.now();
      link.lastMessageAt = conn.lastMessageAt;
      wasAway = true;
    }
    document.body.dataset.link = status === "unknown_table" ? "unknown" : status;
    document.body.classList.toggle("unknown-table", status === "unknown_table");
    $("unknown").classList.toggle("hidden", status !== "unknown_table");
    $("unknown").textContent = t("display.unknown", { table });
    looks.now(); // the countdown stops (or goes on) with the link at once
  },
  onFaults: (faults) => strip.setFaults(faults),
  onLive: (live) => {
    document.body.dataset.table = live ? "live" : "offline";
    strip.setTableLive(live);
    looks.now();
  },
}, { pingEveryMs: 500 }); // stale after 1200 ms (staleAfter): a dead link shown within 1.5 s
const looks = animate(tick);

// -- a countdown that went up across a reconnect says why ------------------------------------
const JUMP_MS = 500;
let noticeTimer = 0;

function finishJump() {
  const { before, events } = jump;
  jump = null;
  const now = remainingAt(state, conn.serverNow());
  if (now == null || before == null || now <= before + JUMP_MS) return;
  showNotice(jumpReason(events));
}

function jumpReason(events) {
  const who = (i) => (i == null || !state ? "" : state.players[i]);
  for (const e of [...events].reverse()) {
    const d = e.data || {};
    switch (e.type) {
      case "clock.paused":
        if (d.reason === "restart") return t("jump.restart");
        if (d.reason === "power_lost") return t("jump.power_lost");
        break;
      case "correction.undone": return t("jump.undone", { what: t(`step.${d.undone}`) });
      case "clock.corrected": return t("jump.corrected");
      case "clock.extended": return t("flash.extension", { name: who(d.player) });
      case "turn": return t("flash.turn", { name: who(d.player) });
      case "frame.started": return t("flash.frame", { frame: d.frame });
      case "clock.stopped": return t("jump.next_shot");
      default: break;
    }
  }
  return t("jump.resync");
}

function showNotice(text) {
  const el = $("notice");
  el.textContent = text;
  el.classList.remove("hidden");
  fitNotice();
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => el.classList.add("hidden"), 6000);
}

// -- sound --------------------------------------------------------------------------------------
async function enableSound() {
  const on = await buzzer.enable();
  const word = $("sound").querySelector(".word");
  $("sound").classList.toggle("on", on);
  word.dataset.i18n = on ? "btn.sound_off" : "btn.sound_on";
  word.textContent = t(word.dataset.i18n);
  $("sound").dataset.i18nTitle = word.dataset.i18n;
  $("sound").title = word.textContent;
  return on;
}

$("sound").addEventListener("click", async () => {
  if (await enableSound()) buzzer.tone(1000, 0.08, "test");
});

// -- drawing -------------------------------------------------------------------------------------
function draw() {
  if (!state) return;
  for (let i = 0; i < 2; i++) {
    const el = $(`p${i}`);
    el.querySelector(".name").textContent = state.players[i];
    const fouls = el.querySelector(".mark.fouls");
    fouls.dataset.n = String(state.fouls[i]);
    fouls.textContent = t("mark.fouls", { n: state.fouls[i] });
    // The extensions left, as a count (issue 36: "Ext." alone said nothing; the hall and
    // the overlay count them), struck through once none is left.
    const ext = el.querySelector(".mark.ext");
    ext.classList.toggle("hidden", !state.timer);
    ext.dataset.used = String(state.extensions_left[i] === 0);
    ext.textContent = `${t("mark.ext")} ${state.extensions_left[i]}`;
    const whites = el.querySelector(".mark.whites");
    whites.textContent = Array.isArray(state.whites) ? t("mark.whites", { n: state.whites[i] }) : "";
    el.classList.toggle("at-table", state.player === i && state.phase !== ClockPhase.FRAME_OVER);
  }
  $("round").textContent = state.round;
  $("frame").textContent = state.frame;
  const m = state.match || { score: state.frames_won || [0, 0], race_to: null };
  $("score-a").textContent = m.score[0];
  $("score-b").textContent = m.score[1];
  $("race").textContent = m.race_to ? t("label.race_to", { n: m.race_to }) : "";
  const phase = state.phase === ClockPhase.FRAME_OVER && m.over ? "match_over" : state.phase;
  $("phase").textContent = phase === ClockPhase.RUNNING || phase === ClockPhase.READY
    ? "" : t(`phase.${state.timer === false && phase !== ClockPhase.FRAME_OVER && phase !== "match_over" ? "off" : phase}`);
  // The call announced for this shot, while it is in force (gone once the result is in).
  const call = state.announced_call;
  $("call").classList.toggle("hidden", !call);
  $("call").textContent = call ? callLine(call) : "";
  drawOver(m);
  looks.now(); // the stage first: what frame_over shows is measured once it is displayed
  fitTexts();
}

// Names and the winner's lines in full (issue 23): smaller, wrapped, never cut.
function fitTexts() {
  const vh = innerHeight / 100;
  const portrait = innerWidth <= innerHeight;
  for (let i = 0; i < 2; i++) {
    fitText($(`p${i}`).querySelector(".name"), { min: (portrait ? 3 : 4) * vh, wrap: { min: 2.2 * vh } });
  }
  if (state && state.announced_call) fitText($("call"), { min: Math.min(3 * vh, 4.4 * innerWidth / 100), wrap: { min: Math.min(2.2 * vh, 2.9 * innerWidth / 100) } });
  if (state && state.phase === ClockPhase.FRAME_OVER) fitBlock($("over"), [$("over-title"), $("over-why"), $("over-score")]);
  fitNotice();
}

function fitNotice() {
  const vh = innerHeight / 100;
  if (!$("notice").classList.contains("hidden")) {
    fitText($("notice"), { min: Math.min(3 * vh, 4.4 * innerWidth / 100), wrap: { min: Math.min(2.2 * vh, 2.9 * innerWidth / 100) } });
  }
}
refitOn(fitTexts);

function drawOver(m) {
  const over = state.phase === ClockPhase.FRAME_OVER;
  document.body.classList.toggle("match-over", Boolean(over && m.over));
  if (!over) return;
  const winner = state.frame_winner;
  const name = winner == null ? null : state.players[winner];
  $("over-title").textContent = m.over && m.winner != null
    ? t("over.match_winner", { name: state.players[m.winner] })
    : name ? t("over.winner", { name }) : t("over.no_winner");
  let why = state.frame_end_reason ? t(`end.${state.frame_end_reason}`) : "";
  if (state.frame_end_reason === "technical_loss" && winner != null) {
    why = t("over.technical_loss", { name: state.players[1 - winner] });
  }
  $("over-why").textContent = why;
  // The score in the one order of every page, the left player's first (issue 36: the
  // header said 0 : 1 and this card 1 : 0); the winner's number in the winner's colour, so
  // "0 : 2" under "Petrov wins" does not read as a loss (issue 23).
  const w = m.over && m.winner != null ? m.winner : winner;
  const score = $("over-score");
  score.replaceChildren(...[0, 1].flatMap((i) => {
    const n = document.createElement("span");
    n.textContent = String(m.score[i]);
    n.classList.toggle("won", i === w);
    return i === 0 ? [n, " : "] : [n];
  }));
}

function tick() {
  if (!state) return Infinity;
  const { text, stage, next } = render(state, conn.frozenNow(), steady);
  const shown = text || "–";
  const clock = $("clock");
  if (clock.textContent !== shown) clock.textContent = shown;
  if (document.body.dataset.stage !== stage) document.body.dataset.stage = stage;
  // The match's band: its clock and rule while it is played; once over, the next match.
  const over = Boolean(state.match && state.match.over);
  drawMatchClock($("match-clock"), over ? null : state, conn.frozenNow(), $("match-limit-choice"));
  return next;
}

applyI18n();
bindLangToggle($("lang"));
onLangChange(() => { strip.draw(); drawNext(nextMatch.next); draw(); });
window.shotclockConnection = conn; // for debugging from the console (and the tests)
conn.start();
if (kiosk) enableSound(); // allowed without a click under the kiosk's autoplay policy
