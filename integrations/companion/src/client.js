// The shot clock service's table WebSocket (README "WebSocket /ws/tables/{id}"), for the
// Companion module: no Companion in here, so it is tested on its own against a real
// `shotclock serve`.
//
// - The referee token goes in the handshake as the `bearer.<token>` subprotocol (or the
//   `token` query parameter when it has characters a subprotocol may not carry).
// - The first message is the snapshot; every event carries the state after it; every
//   command is answered by `ack` (with the new state) or `error` (with its code).
// - The clock is never counted here: remaining time is derived from the state's deadline
//   and the server's clock, estimated from its `server_time` (snapshot, pongs).
// - Reconnects forever with backoff (1 s doubling to 10 s); a refused handshake (wrong
//   token, HTTP 401/403) is reported as such.

"use strict";

const { EventEmitter } = require("node:events");

const TENTHS_BELOW_MS = 5000;
const WARNING_BELOW_MS = 10000;
const ACK_TIMEOUT_MS = 5000;
const SUBPROTOCOL_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/; // RFC 7230 tchar

/** The digits as the table shows them: whole seconds rounded up, tenths at and below 5 s. */
function formatRemaining(ms) {
  if (ms == null) return "--";
  if (ms > TENTHS_BELOW_MS) return String(Math.ceil(ms / 1000));
  const tenths = Math.ceil(ms / 100);
  return `${Math.floor(tenths / 10)}.${tenths % 10}`;
}

/** What a state looks like at the server's `now`: {remaining, text, stage}. */
function view(state, now) {
  if (!state) return { remaining: null, text: "", stage: "off" };
  const phase = state.phase || "ready";
  if (phase === "frame_over") return { remaining: null, text: "", stage: "frame_over" };
  if (state.timer === false) return { remaining: null, text: "--", stage: "off" };
  let remaining = state.remaining_ms == null ? null : Number(state.remaining_ms);
  if (phase === "running" && state.deadline != null) {
    remaining = Math.max(0, Math.ceil(state.deadline - now));
  }
  let stage = phase;
  if (phase === "running") {
    stage = remaining <= TENTHS_BELOW_MS ? "critical"
      : remaining <= WARNING_BELOW_MS ? "warning" : "running";
  }
  const text = phase === "expired" ? "0.0" : formatRemaining(remaining);
  return { remaining, text, stage };
}

class CommandError extends Error {
  constructor(error, status) {
    super(error && error.message ? error.message : "refused");
    this.code = error && error.code;
    this.rule = error && error.rule;
    this.status = status;
  }
}

class ShotclockClient extends EventEmitter {
  /**
   * @param {object} options
   * @param {string} options.url    service base URL, e.g. http://192.168.1.20:8000
   * @param {string} options.table  table id
   * @param {string} [options.token] referee token (commands need it when the service has one)
   * @param {Function} options.WebSocket a WebSocket class with the `ws` package's API
   */
  constructor({ url, table, token, WebSocket }) {
    super();
    this.base = String(url || "http://127.0.0.1:8000").replace(/\/+$/, "");
    this.table = String(table || "1");
    this.token = token || "";
    this.WebSocket = WebSocket;
    this.ws = null;
    this.state = null;
    this.seq = 0;
    this.referee = false;
    this.offset = 0; // server clock - local clock, ms
    this.connected = false;
    this.stopped = true;
    this.backoff = 1000;
    this.retry = null;
    this.nextId = 1;
    this.pending = new Map();
  }

  socketUrl() {
    const ws = this.base.replace(/^http/i, "ws");
    let url = `${ws}/ws/tables/${encodeURIComponent(this.table)}`;
    if (this.token && !SUBPROTOCOL_TOKEN.test(this.token)) {
      url += `?token=${encodeURIComponent(this.token)}`;
    }
    return url;
  }

  start() {
    this.stopped = false;
    this._connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.retry);
    if (this.ws) this.ws.close(1000, "bye");
    this._failPending(new CommandError({ code: "not_connected", message: "stopped" }));
  }

  serverNow() {
    return Date.now() + this.offset;
  }

  view() {
    return view(this.state, this.serverNow());
  }

  /** Send a command; resolves with the new state, rejects with a CommandError. */
  command(name, fields = {}) {
    if (!this.connected || !this.ws) {
      return Promise.reject(new CommandError({ code: "not_connected",
        message: "not connected to the shot clock service" }));
    }
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new CommandError({ code: "timeout", message: `no answer to ${name} in 5 s` }));
      }, ACK_TIMEOUT_MS);
      this.pending.set(id, { resolve, reject, timer });
      this.ws.send(JSON.stringify({ type: "command", id, command: name, ...fields }));
    });
  }

  _connect() {
    if (this.stopped) return;
    const useProtocol = this.token && SUBPROTOCOL_TOKEN.test(this.token);
    const ws = new this.WebSocket(this.socketUrl(), useProtocol ? [`bearer.${this.token}`] : []);
    this.ws = ws;
    this.emit("status", "connecting");
    ws.on("open", () => {
      this.connected = true;
      this.backoff = 1000;
    });
    ws.on("unexpected-response", (_req, res) => {
      // The service refuses before the handshake completes (a wrong token, a limit).
      const auth = res.statusCode === 401 || res.statusCode === 403;
      this.emit("status", auth ? "refused" : "failed", `HTTP ${res.statusCode}`);
      res.resume();
    });
    ws.on("message", (data) => this._message(String(data)));
    ws.on("error", (err) => this.emit("status", "failed", err.message));
    ws.on("close", (code, reason) => {
      const wasConnected = this.connected;
      this.connected = false;
      this.ws = null;
      this._failPending(new CommandError({ code: "not_connected", message: "connection lost" }));
      if (this.stopped) return;
      this.emit("status", "disconnected", `${code} ${String(reason || "")}`.trim());
      if (wasConnected) this.emit("change");
      const delay = this.backoff;
      this.backoff = Math.min(10000, this.backoff * 2);
      this.retry = setTimeout(() => this._connect(), delay);
    });
  }

  _failPending(error) {
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer);
      reject(error);
    }
    this.pending.clear();
  }

  _setState(state, seq) {
    if (!state) return;
    if (seq != null && seq < this.seq) return; // an older picture than the one we have
    if (seq != null) this.seq = seq;
    this.state = state;
    this.emit("change");
  }

  _message(text) {
    let message;
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    switch (message.type) {
      case "snapshot":
        if (typeof message.state?.server_time === "number") {
          this.offset = message.state.server_time - Date.now();
        }
        this.referee = Boolean(message.referee);
        this.seq = 0;
        this._setState(message.state, message.seq);
        this.emit("status", "ok", this.referee ? "" : "read-only: commands need the token");
        break;
      case "ack":
      case "error": {
        const waiting = this.pending.get(message.id);
        if (message.type === "ack") this._setState(message.state, message.state?.seq);
        if (!waiting) break;
        this.pending.delete(message.id);
        clearTimeout(waiting.timer);
        if (message.type === "ack") waiting.resolve(message.state);
        else waiting.reject(new CommandError(message.error, message.status));
        break;
      }
      case "status":
      case "pong":
        break;
      default:
        if (message.state) this._setState(message.state, message.seq);
        if (message.type) this.emit("event", message);
    }
  }
}

module.exports = { ShotclockClient, CommandError, formatRemaining, view };
