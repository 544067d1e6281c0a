// What a clock shows, derived from the state and the server's time: the same rule as
// firmware_bridge/render.py. Whole seconds rounded up; tenths (rounded up) at and below
// 5 s. Nothing counts: every picture is computed from the deadline.

export const TENTHS_BELOW_MS = 5000;
export const WARNING_BELOW_MS = 10000;

export function remainingAt(state, serverNowMs) {
  if (!state || state.timer === false) return null;
  if (state.phase === "running" && state.deadline != null) {
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
    const same = state.phase === "running" && this.seq === state.seq;
    if (same && value != null && this.last != null && value > this.last) return this.last;
    this.seq = state.seq;
    this.last = value;
    return value;
  }
}

/** {text, stage, remaining}: stage is one of off ready running warning critical paused
 * expired frame_over, as render.py's STAGES. With a Steady, the countdown never goes up
 * while the state is unchanged. */
export function render(state, serverNowMs, steady = null) {
  if (!state) return { text: "", stage: "off", remaining: null };
  const phase = state.phase || "ready";
  if (phase === "frame_over") return { text: "", stage: "frame_over", remaining: null };
  let remaining = remainingAt(state, serverNowMs);
  if (steady) remaining = steady.remaining(state, remaining);
  if (remaining == null) return { text: "--", stage: "off", remaining: null };
  let stage;
  if (phase === "expired") stage = "expired";
  else if (phase === "ready" || phase === "paused") stage = phase;
  else if (remaining <= TENTHS_BELOW_MS) stage = "critical";
  else if (remaining <= WARNING_BELOW_MS) stage = "warning";
  else stage = "running";
  const text = phase === "expired" ? "0.0" : formatRemaining(remaining);
  return { text, stage, remaining };
}

/** Seconds for a limit, e.g. 35000 -> "35", 2500 -> "2.5". */
export function seconds(ms) {
  if (ms == null) return "–";
  const s = ms / 1000;
  return Number.isInteger(s) ? String(s) : s.toFixed(1);
}

/** Call draw() on every animation frame until the returned stop() is called. */
export function animate(draw) {
  let handle = 0;
  let stopped = false;
  const frame = () => {
    if (stopped) return;
    try { draw(); } finally { handle = requestAnimationFrame(frame); }
  };
  handle = requestAnimationFrame(frame);
  return () => { stopped = true; cancelAnimationFrame(handle); };
}
