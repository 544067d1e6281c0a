// The console's keys, remembered per device (localStorage): presentation clickers send
// PageDown/PageUp (some ArrowRight/ArrowLeft), foot pedals often Enter or PageDown, so any
// key may be given to any action. Defaults: PageDown/ArrowRight/Space = the main button.

const STORAGE_KEY = "shotclock.keys";
const GUARD_KEY = "shotclock.double_press_ms";

// One press is one press (issue 23): a second press of the same key or button within this
// many ms of the last accepted one is a clicker's bounce or a nervous double tap, not a new
// command (40-250 ms apart, PageDown twice made Start then Shot). Per device, like the keys.
export const DEFAULT_GUARD_MS = 300;
export const MAX_GUARD_MS = 1000;

// Keys that clickers and pedals send but that have no action by default: a press of one
// says so on the console instead of doing nothing in silence.
export const CLICKER_KEYS = ["Enter", "PageUp", "ArrowLeft", "ArrowUp", "ArrowDown", "Escape", "b", "."];

export const ACTIONS = ["main", "extension", "turn", "pause", "foul", "hand_back", "result",
  "new_frame", "new_match", "undo"];

export const DEFAULT_KEYS = {
  main: ["Space", "PageDown", "ArrowRight"],
  extension: ["e"],
  turn: ["t"],
  pause: ["p"],
  foul: ["f"],
  hand_back: ["h"],
  result: ["r"],
  new_frame: ["n"],
  new_match: [], // no key by default: it ends the match (the dialog asks first anyway)
  undo: ["u"],
};

/** The name a key is stored under: "Space" for the space bar, letters in lower case. */
export function keyName(ev) {
  if (ev.key === " " || ev.code === "Space") return "Space";
  return ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
}

/** How a key is shown: "Space", "PageDown", "E". */
export function keyLabel(name) {
  return name.length === 1 ? name.toUpperCase() : name;
}

function copy(map) {
  return Object.fromEntries(ACTIONS.map((a) => [a, [...(map[a] || [])]]));
}

export class KeyMap {
  constructor() {
    this.map = copy(DEFAULT_KEYS);
    try {
      const saved = JSON.parse(localStorage.getItem(STORAGE_KEY) || "null");
      if (saved && typeof saved === "object") {
        this.map = copy(Object.fromEntries(ACTIONS.map((a) => [a,
          Array.isArray(saved[a]) ? saved[a].filter((k) => typeof k === "string") : DEFAULT_KEYS[a]])));
      }
    } catch { /* private mode or a broken entry: the defaults */ }
    this.guardMs = DEFAULT_GUARD_MS;
    try {
      const saved = Number(localStorage.getItem(GUARD_KEY));
      if (localStorage.getItem(GUARD_KEY) !== null && Number.isFinite(saved)) this.guardMs = clampGuard(saved);
    } catch { /* private mode: the default */ }
  }

  /** The double-press guard window in ms (0: off). */
  setGuard(ms) {
    this.guardMs = clampGuard(ms);
    try { localStorage.setItem(GUARD_KEY, String(this.guardMs)); } catch { /* private mode */ }
  }

  /** The action of a key name, or null. */
  action(name) {
    return ACTIONS.find((a) => this.map[a].includes(name)) || null;
  }

  keys(action) {
    return this.map[action] || [];
  }

  /** Give `name` to `action` (and take it from any other). */
  assign(action, name) {
    for (const a of ACTIONS) this.map[a] = this.map[a].filter((k) => k !== name);
    this.map[action].push(name);
    this.save();
  }

  clear(action) {
    this.map[action] = [];
    this.save();
  }

  reset() {
    this.map = copy(DEFAULT_KEYS);
    this.save();
    this.setGuard(DEFAULT_GUARD_MS);
  }

  save() {
    try { localStorage.setItem(STORAGE_KEY, JSON.stringify(this.map)); } catch { /* private mode */ }
  }
}

function clampGuard(ms) {
  const n = Math.round(Number(ms));
  return Number.isFinite(n) ? Math.min(MAX_GUARD_MS, Math.max(0, n)) : DEFAULT_GUARD_MS;
}

/** The guard itself: `accept(source, now)` is false for a second press of the same source
 * (a key name, or a button's action) within `windowMs()` of its last accepted press. */
export class PressGuard {
  constructor(windowMs) {
    this.windowMs = windowMs;
    this.last = new Map();
  }

  accept(source, now = performance.now()) {
    const last = this.last.get(source);
    if (last !== undefined && now - last < this.windowMs()) return false;
    this.last.set(source, now);
    return true;
  }
}
