// The hall's one WebSocket (/ws/hall), shared by the hall page and the director's desk:
// its first message is every table's card, then a card whenever a table changes or is
// created, "removed" when one is archived. (One socket per table would be a hundred
// sockets for a hall of tables, and the server caps sockets per address.)

import { isStale, pingEvery, silenceAfter, wsBase } from "./connection.js";
import { ClockOffset, localNow } from "./timesync.js";

// A hung service (SIGSTOP) or a silent link: after staleAfter() (2000 ms at the default
// 1000 ms pings) every card says "connection lost" and its digits stop, within 2.5 s. A
// close() on a hung service's socket does not close it (no closing handshake comes back):
// the page drops the socket itself and says so at once (issue 23: the hall kept counting).
const PING_EVERY_MS = pingEvery();
const SILENCE_MS = silenceAfter(PING_EVERY_MS);
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5000;

/** The hall feed: reconnects with jittered backoff, keeps a clock offset from pings. */
export class HallFeed {
  constructor(handlers) {
    this.handlers = handlers;
    this.clock = new ClockOffset();
    this.status = "connecting";
    this.ws = null;
    this.attempt = 0;
    this.pings = new Map();
    this.pingId = 0;
    this.lastMessageAt = 0;
    this.askedAt = null;
    this.lastPingAt = 0;
    this.statusLog = []; // [status, local ms]: the tests read it (no false alarm)
    this.retryTimer = 0;
    setInterval(() => this._tick(), Math.min(250, PING_EVERY_MS / 2));
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this._tick();
    });
  }

  serverNow() { return this.clock.serverNow(); }

  start() {
    if (this.status !== "stale" && this.status !== "offline") this._setStatus("connecting");
    const ws = new WebSocket(`${wsBase()}/ws/hall`);
    this.ws = ws;
    ws.onopen = () => {
      this.lastMessageAt = localNow();
      this.askedAt = null;
      this.clock.reset();
      this._ping();
    };
    ws.onmessage = (msg) => {
      if (ws !== this.ws) return;
      this.lastMessageAt = localNow();
      this.askedAt = null; // any message answers
      if (this.status === "stale") this._setStatus("live");
      let data;
      try { data = JSON.parse(msg.data); } catch { return; }
      this._receive(data);
    };
    ws.onclose = () => {
      if (ws !== this.ws) return;
      this._drop();
    };
    ws.onerror = () => { /* onclose follows */ };
  }

  /** Let the socket go (closed, or silent too long) and try again with backoff. */
  _drop() {
    const old = this.ws;
    this.ws = null;
    if (old) { try { old.close(); } catch { /* already closed */ } }
    this._setStatus("offline");
    const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.attempt);
    this.attempt += 1;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.start(), base / 2 + Math.random() * base / 2);
  }

  _setStatus(status) {
    if (this.status === status) return;
    this.status = status;
    this.statusLog.push([status, Math.round(localNow())]);
    if (this.statusLog.length > 50) this.statusLog.shift();
    this.handlers.onStatus(status);
  }

  _tick() {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    const now = localNow();
    if (now - this.lastMessageAt > SILENCE_MS) { this._drop(); return; }
    if (this.status === "live" && isStale(now, this.lastMessageAt, this.askedAt, PING_EVERY_MS)) {
      this._setStatus("stale");
    }
    if (localNow() - this.lastPingAt >= PING_EVERY_MS) this._ping();
  }

  _ping() {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    const id = ++this.pingId;
    this.lastPingAt = localNow();
    this.askedAt ??= this.lastPingAt; // the first ping since the last message (isStale)
    this.pings.set(id, this.lastPingAt);
    if (this.pings.size > 20) this.pings.delete(this.pings.keys().next().value);
    this.ws.send(JSON.stringify({ type: "ping", id, client_time: Date.now() }));
  }

  _receive(msg) {
    switch (msg.type) {
      case "hall":
        this.attempt = 0;
        this.clock.roughFrom(msg.server_time);
        this._setStatus("live");
        this.handlers.onHall(msg.tables, msg.read_only === true);
        break;
      case "table":
        this.handlers.onTable(msg.table);
        break;
      case "removed":
        this.handlers.onRemoved(msg.table);
        break;
      case "pong": {
        const t0 = this.pings.get(msg.id);
        if (t0 !== undefined) {
          this.pings.delete(msg.id);
          this.clock.add(t0, localNow(), msg.server_time);
        }
        break;
      }
      default:
        break; // status (faults): shown on each table's own pages
    }
  }
}
