// The status strip of the console and the display: the connection and the service's faults
// (TEAM convention 2: the snapshot's `faults`, then `{"type": "status", "faults": [...]}`
// messages, each the whole current list). The strip's height is reserved in the page, so
// a fault that appears never moves a button. Each fault: {key, component, code, message,
// table, since, level?, vars?}; level error (default) | warning | info. The text is
// translated by its code (i18n.js ERRORS, filled with `vars`), else the service's message;
// the full message is in the title.

import { errorText, t } from "./i18n.js";

const LEVELS = ["error", "warning", "info"];

export function faultLevel(fault) {
  return LEVELS.includes(fault && fault.level) ? fault.level : "error";
}

/** Faults, most severe first, oldest first within a level. */
export function sortFaults(faults) {
  return [...(faults || [])].sort((a, b) => LEVELS.indexOf(faultLevel(a)) - LEVELS.indexOf(faultLevel(b))
    || (a.since || 0) - (b.since || 0));
}

export class StatusStrip {
  /** el: the reserved strip; it gets a connection chip and the faults, each cut to its share
   * of the line (the whole message in its title). Nothing in it is a tap target. */
  constructor(el) {
    this.el = el;
    this.status = "connecting";
    this.tableLive = true; // false: the service serves a table it cannot hear (a hall mirror)
    this.faults = [];
    this.conn = document.createElement("span");
    this.conn.className = "conn";
    this.list = document.createElement("span");
    this.list.className = "faults";
    el.replaceChildren(this.conn, this.list);
    this.draw();
  }

  setConnection(status) {
    this.status = status;
    this.draw();
  }

  /** The chip must not say "live" for a table whose own service is offline (the service's
   * `live: false`): the page's link is fine, the data is not. */
  setTableLive(live) {
    this.tableLive = live;
    this.draw();
  }

  setFaults(faults) {
    this.faults = sortFaults(faults);
    this.draw();
  }

  draw() {
    const chip = this.status === "live" && !this.tableLive ? "table_offline" : this.status;
    this.conn.dataset.status = chip;
    this.conn.textContent = t(`conn.${chip}`);
    const worst = this.faults.length ? faultLevel(this.faults[0]) : "ok";
    this.el.dataset.level = worst;
    this.el.dataset.count = String(this.faults.length);
    this.list.replaceChildren(...this.faults.map((fault) => {
      const item = document.createElement("span");
      item.className = "fault";
      item.dataset.level = faultLevel(fault);
      item.dataset.code = fault.code || "";
      item.textContent = errorText(fault, fault.vars).text;
      item.title = `${fault.component || ""}: ${fault.message || fault.code}`;
      return item;
    }));
  }
}
