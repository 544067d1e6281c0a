// One table's live feed: the WebSocket /ws/tables/{id}, a clock offset from ping/pong, and
// reconnection that never gives up and never misses an event.
//
//   connecting -> (snapshot) live -> (close, error, silence, seq gap) offline -> connecting...
//
// The first message of every connection is a snapshot (the current state); with
// ?since=<last seq seen> the server then replays the events that were missed (older than the
// snapshot: handed on as `replayed`, their state is not applied) before going live. A live
// event whose seq is not the next one means something was lost: reconnect with ?since=.

import { ClockOffset, localNow } from "./timesync.js";

const PING_EVERY_MS = 2000;
const SILENCE_MS = 6000; // no message at all for this long: the link is dead
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5000;
const CLOSE_TOO_SLOW = 4001;
const CLOSE_UNKNOWN_TABLE = 4404;

export function tableFromQuery(fallback = null) {
  return new URLSearchParams(location.search).get("table") || fallback;
}

export function wsBase() {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host;
}

export class TableConnection {
  /**
   * @param {string} table
   * @param {object} handlers  onState(state, why), onEvent(event, {replayed}),
   *                           onStatus(status) with status in connecting|live|offline|unknown_table
   */
  constructor(table, handlers = {}) {
    this.table = table;
    this.handlers = handlers;
    this.clock = new ClockOffset();
    this.state = null;
    this.lastSeq = null; // the last event seq seen (snapshot or event): ?since= on reconnect
    this.status = "connecting";
    this.ws = null;
    this.attempt = 0;
    this.retryTimer = 0;
    this.pingTimer = 0;
    this.pingId = 0;
    this.pings = new Map();
    this.lastMessageAt = 0;
    this.stopped = false;
    this.reconnects = 0;
    this._onWake = () => this.wake();
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.wake();
    });
    window.addEventListener("online", this._onWake);
    window.addEventListener("pageshow", this._onWake);
  }

  serverNow() {
    return this.clock.serverNow();
  }

  start() {
    this.stopped = false;
    this._open();
    return this;
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.pingTimer);
    if (this.ws) this.ws.close(1000);
  }

  /** After sleep, a tab coming back, the network coming back: make sure the feed is live. */
  wake() {
    if (this.stopped) return;
    const fresh = this.ws && this.ws.readyState === WebSocket.OPEN
      && localNow() - this.lastMessageAt < PING_EVERY_MS + 1000;
    if (fresh) {
      this._ping();
      return;
    }
    this._reconnect(0);
  }

  /** Take a state from elsewhere (an HTTP command's reply) if it is not older than ours. */
  offerState(state, why = "reply") {
    if (!state) return;
    if (this.state && typeof state.seq === "number" && state.seq < this.state.seq) return;
    this._setState(state, why);
  }

  _setStatus(status) {
    if (this.status === status) return;
    this.status = status;
    this.handlers.onStatus?.(status);
  }

  _setState(state, why) {
    this.state = state;
    this.handlers.onState?.(state, why);
  }

  _url() {
    let url = `${wsBase()}/ws/tables/${encodeURIComponent(this.table)}`;
    if (this.lastSeq != null) url += `?since=${this.lastSeq}`;
    return url;
  }

  _open() {
    clearTimeout(this.retryTimer);
    this._setStatus("connecting");
    let ws;
    try {
      ws = new WebSocket(this._url());
    } catch {
      this._scheduleRetry();
      return;
    }
    this.ws = ws;
    this.snapshotSeq = null;
    ws.onopen = () => {
      this.lastMessageAt = localNow();
      this.clock.reset();
      this._ping();
      clearInterval(this.pingTimer);
      this.pingTimer = setInterval(() => this._tick(), PING_EVERY_MS / 2);
    };
    ws.onmessage = (msg) => {
      if (ws !== this.ws) return;
      this.lastMessageAt = localNow();
      let data;
      try { data = JSON.parse(msg.data); } catch { return; }
      this._receive(data);
    };
    ws.onclose = (ev) => {
      if (ws !== this.ws) return;
      clearInterval(this.pingTimer);
      this.ws = null;
      if (this.stopped) return;
      if (ev.code === CLOSE_UNKNOWN_TABLE) {
        this._setStatus("unknown_table");
        this._scheduleRetry(BACKOFF_MAX_MS);
        return;
      }
      this._setStatus("offline");
      this._scheduleRetry(ev.code === CLOSE_TOO_SLOW ? 0 : undefined);
    };
    ws.onerror = () => { /* onclose follows */ };
  }

  _tick() {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    if (localNow() - this.lastMessageAt > SILENCE_MS) {
      this._reconnect(0);
      return;
    }
    if (localNow() - (this.lastPingAt || 0) >= PING_EVERY_MS) this._ping();
  }

  _ping() {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    const id = ++this.pingId;
    const t0 = localNow();
    this.lastPingAt = t0;
    this.pings.set(id, t0);
    if (this.pings.size > 20) this.pings.delete(this.pings.keys().next().value);
    this.ws.send(JSON.stringify({ type: "ping", id, client_time: Date.now() }));
  }

  _reconnect(delay) {
    const old = this.ws;
    this.ws = null;
    clearInterval(this.pingTimer);
    if (old) { try { old.close(); } catch { /* already closed */ } }
    this._setStatus("offline");
    this._scheduleRetry(delay);
  }

  _scheduleRetry(delay) {
    clearTimeout(this.retryTimer);
    if (this.stopped) return;
    if (delay === undefined) {
      const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.attempt);
      delay = base / 2 + Math.random() * base / 2; // jitter: a hall of pages must not stampede
    }
    this.attempt += 1;
    this.reconnects += 1;
    this.retryTimer = setTimeout(() => this._open(), delay);
  }

  _receive(msg) {
    switch (msg.type) {
      case "snapshot": {
        this.attempt = 0;
        this.snapshotSeq = msg.seq;
        const state = { ...msg.state, seq: msg.state.seq ?? msg.seq };
        this.clock.roughFrom(state.server_time);
        this.lastSeq = msg.seq; // live events follow the snapshot's seq
        // A snapshot is the truth now, even if it is "older" (a server restarted from its store).
        this._setState(state, "snapshot");
        this._setStatus("live");
        return;
      }
      case "pong": {
        const t0 = this.pings.get(msg.id);
        if (t0 !== undefined) {
          this.pings.delete(msg.id);
          this.clock.add(t0, localNow(), msg.server_time);
        }
        return;
      }
      case "ack":
      case "error":
        this.handlers.onReply?.(msg);
        return;
      default:
        break;
    }
    if (typeof msg.seq !== "number") return;
    if (this.snapshotSeq != null && msg.seq <= this.snapshotSeq) {
      // Replayed from the store: what was missed while away (already in the snapshot).
      this.handlers.onEvent?.(msg, { replayed: true });
      return;
    }
    if (this.lastSeq != null && msg.seq <= this.lastSeq) return; // a duplicate
    if (this.lastSeq != null && msg.seq > this.lastSeq + 1) {
      this._reconnect(0); // a gap: fetch what is missing
      return;
    }
    this.lastSeq = msg.seq;
    if (msg.state) this._setState({ ...msg.state, seq: msg.state.seq ?? msg.seq }, msg.type);
    this.handlers.onEvent?.(msg, { replayed: false });
  }
}

/** Set the status text/class of an element from a connection status. */
export function showStatus(el, status, t) {
  if (!el) return;
  el.dataset.status = status;
  el.textContent = t(`conn.${status}`);
}
