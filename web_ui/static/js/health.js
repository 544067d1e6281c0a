// The console's status view (issue 10, "Hardware status ... on the referee console"): what
// GET /api/health says about this table's parts, as a referee reads it. The display
// (connected, last ACK age), the buttons seen since start-up (which, when, how often), the
// devices that failed to open, the store, MQTT, the camera, and the current faults. Fetched
// every second while the dialog is open, never otherwise (no load on the service).

import { errorText, t } from "./i18n.js";
import { sortFaults, faultLevel } from "./status.js";

const REFRESH_MS = 1000;

/** "12:03:04" in the page's local time, from unix ms. */
function clockTime(ms) {
  const d = new Date(ms);
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
}

/** "0.4 s" / "12 s" / "5 min" */
export function age(ms) {
  if (ms == null) return "–";
  if (ms < 10_000) return t("health.age_s", { s: (ms / 1000).toFixed(1) });
  if (ms < 120_000) return t("health.age_s", { s: Math.round(ms / 1000) });
  return t("health.age_min", { m: Math.round(ms / 60_000) });
}

const disconnected = (error) => t("health.disconnected") + (error ? ` (${error})` : "");

/** Rows [{key, label, value, level}] of the status view, from a /api/health body. Pure. */
export function healthRows(health, table) {
  const rows = [];
  const add = (key, value, level = "ok") => rows.push({ key, label: t(`health.${key}`), value, level });
  const c = health.components || {};
  const now = health.server_time;
  const hw = c.hardware && (c.hardware.table == null || c.hardware.table === table) ? c.hardware : null;
  if (!hw) {
    add("hardware", t("health.no_hardware"), "none");
  } else {
    const d = hw.display;
    if (!d) add("display", t("health.none"), "none");
    else if (d.connected === false) add("display", disconnected(d.error), "error");
    else if (d.acknowledging === false) add("display", t("health.not_acking"), "error");
    else add("display", t("health.connected"));
    if (d && d.last_ack_age_ms !== undefined) {
      add("last_ack", d.last_ack_age_ms == null ? t("health.never") : t("health.ago", { age: age(d.last_ack_age_ms) }),
        d.acknowledging === false ? "error" : "ok");
    }
    const buttons = hw.buttons || {};
    // GPIO buttons are {name: {pin, seen, presses, seen_at, last_at}}; a USB pedal or
    // clicker is {pedal: {device, name, presses, reading}} beside them (CombinedButtons).
    const pedal = buttons.pedal;
    const names = Object.keys(buttons).filter((k) => k !== "pedal" && buttons[k] && typeof buttons[k] === "object");
    if (pedal) {
      add("pedal", pedal.reading === false ? t("health.failed") : t("health.pedal", { n: pedal.presses ?? 0 }),
        pedal.reading === false ? "error" : "ok");
    }
    if (!names.length && !pedal) add("buttons", hw.failed && hw.failed.buttons ? t("health.failed") : t("health.none"),
      hw.failed && hw.failed.buttons ? "error" : "none");
    for (const name of names) {
      const b = buttons[name] || {};
      const label = t(`health.button.${name}`);
      let value;
      if (b.seen) {
        const last = b.last_at ?? b.seen_at;
        value = last != null
          ? t("health.seen_at", { time: clockTime(last), age: age(now - last), n: b.presses ?? 0 })
          : t("health.seen", { n: b.presses ?? 0 });
      } else if (b.reading === false) value = t("health.failed");
      else value = t("health.not_seen");
      rows.push({ key: `button.${name}`, label, value, level: b.seen ? "ok" : "warning" });
    }
    for (const [device, why] of Object.entries(hw.failed || {})) {
      rows.push({ key: `failed.${device}`, label: t(`health.device.${device}`), value: t("health.failed_why", { why }), level: "error" });
    }
  }
  const store = c.store;
  if (store) {
    add("store", store.writable
      ? t("health.store_ok", { pending: store.pending ?? 0 })
      : t("health.store_failing", { pending: store.pending ?? 0 }), store.writable ? "ok" : "error");
  }
  const mqtt = c.mqtt;
  if (!mqtt) add("mqtt", t("health.off"), "none");
  else {
    const mine = mqtt.per_table ? mqtt.per_table[table] : null;
    const up = Boolean(mine ? mine.connected : mqtt.connected);
    add("mqtt", up ? t("health.connected_to", { broker: mqtt.broker || "" }) : disconnected((mine || mqtt).error),
      up ? "ok" : "error");
  }
  const cam = c.camera && (c.camera.table == null || c.camera.table === table) ? c.camera : null;
  if (!cam) add("camera", t("health.off"), "none");
  else add("camera", cam.connected ? t("health.camera_on", { mode: cam.mode || "" }) : disconnected(null),
    cam.connected ? "ok" : "error");
  return rows;
}

export class HealthDialog {
  /** dialog: the <dialog>; rows: its list; table: this console's table. */
  constructor(dialog, rows, faults, table) {
    this.dialog = dialog;
    this.rowsEl = rows;
    this.faultsEl = faults;
    this.table = table;
    this.timer = 0;
    this.last = null;
    this.error = null;
    dialog.addEventListener("close", () => { clearTimeout(this.timer); this.timer = 0; });
  }

  open() {
    this.draw();
    this.dialog.showModal();
    this.refresh();
  }

  async refresh() {
    clearTimeout(this.timer);
    try {
      const response = await fetch("/api/health", { cache: "no-store" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      this.last = await response.json();
      this.error = null;
    } catch (exc) {
      this.error = String(exc && exc.message ? exc.message : exc);
    }
    if (!this.dialog.open) return;
    this.draw();
    this.timer = setTimeout(() => this.refresh(), REFRESH_MS);
  }

  draw() {
    if (!this.last && !this.error) {
      this.rowsEl.replaceChildren();
      return;
    }
    const rows = this.last ? healthRows(this.last, this.table) : [];
    if (this.error) rows.unshift({ key: "service", label: t("health.service"), value: t("health.unreachable", { error: this.error }), level: "error" });
    this.rowsEl.replaceChildren(...rows.flatMap((row) => {
      const dt = document.createElement("dt");
      dt.textContent = row.label;
      const dd = document.createElement("dd");
      dd.textContent = row.value;
      dt.dataset.key = dd.dataset.key = row.key;
      dt.dataset.level = dd.dataset.level = row.level;
      return [dt, dd];
    }));
    const faults = this.last ? sortFaults((this.last.faults || []).filter((f) => f.table == null || f.table === this.table)) : [];
    this.faultsEl.replaceChildren(...faults.map((fault) => {
      const li = document.createElement("li");
      li.dataset.level = faultLevel(fault);
      li.dataset.code = fault.code || "";
      li.textContent = errorText(fault, fault.vars).text;
      return li;
    }));
    this.faultsEl.classList.toggle("hidden", faults.length === 0);
  }
}
