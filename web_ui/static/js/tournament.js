// The tournament around the table on every page (issue 25): the match clock
// (match_limit_ms) with the organiser's choice at its limit, and slow play. Small helpers
// the pages call from their own draw/tick; nothing here counts: the match clock's time is
// derived from its deadline, as the shot clock's is.

import { addStrings, t } from "./i18n.js";

addStrings({
  en: {
    "mc.label": "Match",
    "mc.waiting": "Match {time} · from the break",
    "mc.running": "Match {time}",
    "mc.paused": "Match {time} · paused",
    "mc.expired": "Match time is up · {choice}",
    "mc.drawn": "Match drawn at the time limit",
    "atlimit.leader_wins": "at the limit: the frame in play is finished, the leader wins (level: a draw)",
    "atlimit.frame_decides": "at the limit: the frame in play decides the match",
    "atlimit.tie_break_frame": "at the limit: the frame in play is finished, the leader wins (level: a tie-break frame)",
    "atlimit.shot_clock": "at the limit: a shot clock for every shot",
    "slow.on": "Shot clock on (slow play): {s} s a shot",
    "btn.shot_clock_on": "Shot clock on",
    "prompt.shot_clock_on": "Switch the shot clock on for the rest of the match: the reason?",
  },
  ru: {
    "mc.label": "Матч",
    "mc.waiting": "Матч {time} · с разбоя",
    "mc.running": "Матч {time}",
    "mc.paused": "Матч {time} · пауза",
    "mc.expired": "Время матча вышло · {choice}",
    "mc.drawn": "Ничья по времени матча",
    "atlimit.leader_wins": "по времени: партия доигрывается, побеждает лидер (поровну: ничья)",
    "atlimit.frame_decides": "по времени: текущая партия решает матч",
    "atlimit.tie_break_frame": "по времени: партия доигрывается, побеждает лидер (поровну: решающая партия)",
    "atlimit.shot_clock": "по времени: контроль времени на каждый удар",
    "slow.on": "Контроль времени включён: {s} с на удар",
    "btn.shot_clock_on": "Включить контроль времени",
    "prompt.shot_clock_on": "Включить контроль времени до конца матча: причина?",
  },
});

/** Remaining match time in ms at the server's ``now``, or null without a match clock. */
export function matchRemaining(state, serverNowMs) {
  const mc = state && state.match_clock;
  if (!mc) return null;
  if (mc.phase === "running" && mc.deadline != null) {
    return Math.max(0, Math.ceil(mc.deadline - serverNowMs));
  }
  return mc.remaining_ms;
}

/** 1:59:30 or 4:05 (whole seconds, rounded up as the shot clock rounds). */
export function formatMatchTime(ms) {
  const total = Math.ceil(ms / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

/** The line a page shows for the match clock, and its stage (ok, warn at 10 min, last at
 * 5 min, expired), or null when the match has no limit. */
export function matchClockLine(state, serverNowMs) {
  const mc = state && state.match_clock;
  if (!mc) return null;
  const m = state.match || {};
  if (m.drawn) return { text: t("mc.drawn"), stage: "expired", title: "" };
  const left = matchRemaining(state, serverNowMs);
  const choice = t(`atlimit.${mc.at_limit}`);
  if (mc.phase === "expired") return { text: t("mc.expired", { choice }), stage: "expired", title: mc.rule };
  const time = formatMatchTime(left);
  const key = mc.phase === "stopped" ? "mc.running" : `mc.${mc.phase}`;
  const stage = left <= 300000 ? "last" : left <= 600000 ? "warn" : "ok";
  return { text: t(key, { time }), stage, title: choice };
}

/** Draw the match clock into ``el`` (hidden when the match has none). */
export function drawMatchClock(el, state, serverNowMs) {
  if (!el) return;
  const line = matchClockLine(state, serverNowMs);
  el.classList.toggle("hidden", !line);
  if (!line) return;
  if (el.textContent !== line.text) el.textContent = line.text;
  if (el.dataset.stage !== line.stage) el.dataset.stage = line.stage;
  if (el.title !== line.title) el.title = line.title;
}
