// The console's keys, remembered per device (localStorage): presentation clickers send
// PageDown/PageUp (some ArrowRight/ArrowLeft), foot pedals often Enter or PageDown, so any
// key may be given to any action. Defaults: PageDown/ArrowRight/Space = the main button.

const STORAGE_KEY = "shotclock.keys";

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
  }

  save() {
    try { localStorage.setItem(STORAGE_KEY, JSON.stringify(this.map)); } catch { /* private mode */ }
  }
}
