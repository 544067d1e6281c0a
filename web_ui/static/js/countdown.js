// What a clock shows, derived from the state and the server's time: the same rule as
// clock_service/core/readout.py. Whole seconds rounded up; tenths (rounded up) at and below
// 5 s. Nothing counts: every picture is computed from the deadline.

import { ClockPhase } from "./phases.js";

export const TENTHS_BELOW_MS = 5000;
export const WARNING_BELOW_MS = 10000;

export function remainingAt(state, serverNowMs) {
  if (!state || state.timer === false) return null;
  if (state.phase === ClockPhase.RUNNING && state.deadline != null) {
    return Math.max(0, Math.ceil(state.deadline - serverNowMs));
  }
  return state.remaining_ms == null ? null : Number(state.remaining_ms);
}

export function formatRemaining(ms) {
  if (ms > TENTHS_BELOW_MS) return String(Math.ceil(ms / 1000));
  const tenths = Math.ceil(ms / 100);
  return `${Math.floor(tenths / 10)}.${tenths % 10}`;
}

/**
 * While the state stays the same (same seq), a running countdown never goes up: a better
 * estimate of the server's clock (a ping with a shorter round trip) may move "now" back by
 * a few ms, and the digits and the bar must not step back for it. A new state may (an
 * extension, a correction).
 */
export class Steady {
  constructor() {
    this.seq = null;
    this.last = null;
  }

  remaining(state, value) {
    const same = state.phase === ClockPhase.RUNNING && this.seq === state.seq;
    if (same && value != null && this.last != null && value > this.last) return this.last;
    this.seq = state.seq;
    this.last = value;
    return value;
  }
}

/** Milliseconds until a running countdown that shows `remaining` shows other digits or
 * another stage (formatRemaining's rule: every whole second above 5 s, every tenth at and
 * below; the stages change at 10 s and 5 s, which are whole seconds); Infinity when it
 * does not count. */
export function untilChange(remaining) {
  if (remaining == null || !(remaining > 0)) return Infinity;
  const step = remaining > TENTHS_BELOW_MS ? 1000 : 100;
  return remaining - Math.floor((remaining - 1) / step) * step;
}

/** {text, stage, remaining, next}: stage is one of off ready running warning critical
 * paused expired frame_over, as render.py's STAGES; next is the ms until the picture changes
 * by itself (Infinity unless it counts down). With a Steady, the countdown never goes up
 * while the state is unchanged. */
export function render(state, serverNowMs, steady = null) {
  if (!state) return { text: "", stage: "off", remaining: null, next: Infinity };
  const phase = state.phase || ClockPhase.READY;
  if (phase === ClockPhase.FRAME_OVER) return { text: "", stage: "frame_over", remaining: null, next: Infinity };
  let remaining = remainingAt(state, serverNowMs);
  if (steady) remaining = steady.remaining(state, remaining);
  if (remaining == null) return { text: "--", stage: "off", remaining: null, next: Infinity };
  let stage;
  if (phase === ClockPhase.EXPIRED) stage = "expired";
  else if (phase === ClockPhase.READY || phase === ClockPhase.PAUSED) stage = phase;
  else if (remaining <= TENTHS_BELOW_MS) stage = "critical";
  else if (remaining <= WARNING_BELOW_MS) stage = "warning";
  else stage = "running";
  const text = phase === ClockPhase.EXPIRED ? "0.0" : formatRemaining(remaining);
  const next = phase === ClockPhase.RUNNING && state.deadline != null ? untilChange(remaining) : Infinity;
  return { text, stage, remaining, next };
}

/** Seconds for a limit, e.g. 35000 -> "35", 2500 -> "2.5". */
export function seconds(ms) {
  if (ms == null) return "–";
  const s = ms / 1000;
  return Number.isInteger(s) ? String(s) : s.toFixed(1);
}

/** A page looks again this often at least: for what changes with no new state and no
 * countdown of its own (the link's status, the match clock's seconds). */
export const LOOK_EVERY_MS = 100;

/**
 * Call draw() soon, and again at the moment its picture next changes, until stop() is
 * called: draw returns the ms until then (render's `next`), and is called at least every
 * LOOK_EVERY_MS anyway. A page that draws out of turn (a new state, a status) calls now(),
 * which draws and aims the timer again: a new state's first change may be due before the
 * look that was planned for the old one. A timer aimed at the change, not every animation frame:
 * the digits change within a few ms of the moment they are due (a frame came every 16.7 ms),
 * and a page whose picture stands still draws nothing. Drawn 60 times a second, an open
 * display, console or hall page kept 9-11% of a core busy on a running clock (a Pi's kiosk,
 * a tablet's battery); now too little to measure. The overlay's bar still moves on every
 * frame (overlay.js).
 */
export function animate(draw) {
  let timer = 0;
  let stopped = false;
  const now = () => {
    if (stopped) return;
    clearTimeout(timer);
    let wait = LOOK_EVERY_MS;
    try {
      const next = draw();
      if (next >= 0 && next < wait) wait = next;
    } finally {
      // +1: never a hair before the change (the timer's and the clock's rounding)
      if (!stopped) timer = setTimeout(now, Math.ceil(wait) + 1);
    }
  };
  timer = setTimeout(now, 0); // once the page's module has run
  return { now, stop: () => { stopped = true; clearTimeout(timer); } };
}
