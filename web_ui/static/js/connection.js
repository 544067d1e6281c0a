// One table's live feed: the WebSocket /ws/tables/{id}, a clock offset from ping/pong, and
// reconnection that never gives up and never misses an event.
//
//   connecting -> (snapshot) live -> (close, error, silence, seq gap) offline -> connecting...
//
// The first message of every connection is a snapshot (the current state); with
// ?since=<last seq seen> the server then replays the events that were missed (older than the
// snapshot: handed on as `replayed`, their state is not applied) before going live. A live
// event whose seq is not the next one means something was lost: reconnect with ?since=.

import { onLangChange, shownPlayers } from "./i18n.js";
import { ClockOffset, localNow } from "./timesync.js";

// The link's liveness comes from the pings' own rhythm (issue 23: pinging every 2000 ms and
// calling the link stale after 1500 ms of silence flashed "no news" on a healthy link for
// 0.2-0.5 s of every 2 s). A healthy link answers each ping within a round trip, so silence
// is only news after one whole interval plus a round trip's allowance of another interval
// (at least 700 ms): staleAfter(). With the default 1000 ms that is 2000 ms, so a hung
// service (SIGSTOP) is shown within 2.25 s (plus the 250 ms tick), under the 3 s promised.
export const PING_EVERY_MS = 1000;
const ROUND_TRIP_ALLOWANCE_MS = 700;
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5000;
const CLOSE_TOO_SLOW = 4001;
const CLOSE_UNKNOWN_TABLE = 4404;

/** No message for this long (ms) with pings every `pingEveryMs`: the link is stale. */
export function staleAfter(pingEveryMs) {
  return pingEveryMs + Math.max(pingEveryMs, ROUND_TRIP_ALLOWANCE_MS);
}

/** Is the link stale at `now`? No message for staleAfter(), and a ping of this page's own
 * unanswered for the round trip's allowance (`askedAt`: when the first ping since the last
 * message went out). A page that was itself held up (a busy or sleeping device: its timer
 * came late, so it sent no ping meanwhile) gives the link a fresh ping before it says so: a
 * healthy link flashed "stale" for 53-90 ms on a slow, busy machine's browser, and the
 * silence was the page's own. A hung service still shows after staleAfter(): its pings go
 * out on time and none is answered. */
export function isStale(now, lastMessageAt, askedAt, pingEveryMs) {
  const stale = staleAfter(pingEveryMs);
  return now - lastMessageAt > stale && askedAt != null && now - askedAt > stale - pingEveryMs;
}

/** No message for this long: the link is dead, reconnect (three stale periods). */
export function silenceAfter(pingEveryMs) {
  return 3 * staleAfter(pingEveryMs);
}

/** The page's ping interval: its own default, or ?ping=MS (100..10000) from the address,
 * a knob for a test that wants many ping intervals in little wall time. */
export function pingEvery(fallback = PING_EVERY_MS) {
  const raw = Number(new URLSearchParams(location.search).get("ping"));
  return Number.isFinite(raw) && raw >= 100 && raw <= 10000 ? Math.round(raw) : fallback;
}

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
   *                           onStatus(status) with status in
   *                           connecting|live|stale|offline|unknown_table,
   *                           onFaults(faults), onTokenRefused(),
   *                           onLive(live, staleSince): the service says whether the
   *                           table's state is live (false on the hall service while the
   *                           table's own service is offline: stop counting, last known)
   * @param {object} options   pingEveryMs (stale and silence thresholds follow from it,
   *                           staleAfter/silenceAfter), token: () => string
   */
  constructor(table, handlers = {}, options = {}) {
    this.table = table;
    this.handlers = handlers;
    // pingEveryMs: how often to ping (a display that must notice a dead link in 1.5 s pings
    // more often); token(): the referee token to offer, if any.
    this.pingEveryMs = pingEvery(options.pingEveryMs || PING_EVERY_MS);
    this.staleMs = staleAfter(this.pingEveryMs);
    this.silenceMs = silenceAfter(this.pingEveryMs);
    // The service's time of the last message heard: while the link is not live the
    // countdown stops there (frozenNow), never running on from data that may be old.
    this.heardAt = null;
    // The service's time when the link stopped being live: the countdown stops there.
    this.frozenAt = null;
    // The last status changes [status, local ms] (the tests read it: no false alarm).
    this.statusLog = [];
    this.token = options.token || (() => "");
    this.tokenRefused = false; // the offered token was refused at the handshake
    this.tokenSuspect = false; // the last try with the token failed before it opened
    this.referee = null; // from the snapshot: may this connection send commands?
    this.faults = [];
    // From the service (snapshot, status): is the table's state live? Not live (a table
    // mirrored by the hall service whose own service is offline): its countdown stopped at
    // staleSince (the service's clock); see frozenNow().
    this.live = true;
    this.staleSince = null;
    this.opened = 0; // sockets created, for the curious (and the tests)
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
    this.askedAt = null; // the first ping since the last message went out then (isStale)
    this.stopped = false;
    this.reconnects = 0;
    this._onWake = () => this.wake();
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.wake();
    });
    window.addEventListener("online", this._onWake);
    // pageshow also fires on the first load: only a page restored from the back-forward
    // cache (persisted) needs waking, or the socket just opened would be thrown away.
    window.addEventListener("pageshow", (ev) => { if (ev.persisted) this.wake(); });
  }

  /** Open again now, e.g. with a new token (a deliberate reopen; ?since= keeps the place). */
  restart() {
    this.tokenRefused = false;
    this.tokenSuspect = false;
    this.attempt = 0;
    this._reconnect(0);
  }

  serverNow() {
    return this.clock.serverNow();
  }

  /** The instant to draw the table's countdown at: now, or, while the service says the
   * state is not live, the moment it went stale, or, while this page's own link is not live
   * (a hung service, a dead Wi-Fi), the moment it last heard from the service: a frozen
   * countdown, never a running one. */
  frozenNow() {
    let now = this.clock.serverNow();
    if (!this.live && this.staleSince != null) now = Math.min(now, this.staleSince);
    // Frozen where the digits stood when the link stopped being live, not at the last
    // message heard: that was up to the stale threshold earlier, and the digits jumped
    // back up by it (58 -> 60 on the console, whose threshold is 2 s).
    const frozenAt = this.frozenAt ?? this.heardAt;
    if (this.status !== "live" && frozenAt != null) now = Math.min(now, frozenAt);
    return now;
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
    if (this.ws && this.ws.readyState === WebSocket.CONNECTING) return; // on its way
    const fresh = this.ws && this.ws.readyState === WebSocket.OPEN
      && localNow() - this.lastMessageAt < this.pingEveryMs + 1000;
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
    if (status === "live") this.frozenAt = null;
    else if (this.status === "live") this.frozenAt = this.clock.serverNow();
    this.status = status;
    this.statusLog.push([status, Math.round(localNow())]);
    if (this.statusLog.length > 50) this.statusLog.shift();
    this.handlers.onStatus?.(status);
  }

  _setFaults(faults) {
    this.faults = Array.isArray(faults) ? faults : [];
    this.handlers.onFaults?.(this.faults);
  }

  _setLive(msg) {
    if (typeof msg.live !== "boolean") return; // an older service: always live
    const staleSince = msg.live ? null : (msg.stale_since ?? this.clock.serverNow());
    if (msg.live === this.live && staleSince === this.staleSince) return;
    this.live = msg.live;
    this.staleSince = staleSince;
    this.handlers.onLive?.(this.live, this.staleSince);
  }

  _setState(state, why) {
    // The default table's players in the page's language (i18n.js shownPlayers); again on
    // a language change, before the page redraws (this listener is older than the page's).
    state.players_given = state.players;
    state.players = shownPlayers(state.players);
    if (!this.namedInLang) {
      this.namedInLang = true;
      onLangChange(() => { if (this.state) this.state.players = shownPlayers(this.state.players_given); });
    }
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
    // The status stays what it is (connecting before the first snapshot, offline after a
    // drop) until a snapshot says live.
    const suspecting = this.tokenSuspect;
    const token = this.tokenRefused || suspecting ? "" : this.token();
    let ws;
    try {
      ws = token ? new WebSocket(this._url(), [`bearer.${token}`]) : new WebSocket(this._url());
    } catch {
      if (token) this._refuseToken(); // not even a valid subprotocol: try without it
      this._scheduleRetry(token ? 0 : undefined);
      return;
    }
    this.opened += 1;
    this.ws = ws;
    this.snapshotSeq = null;
    let didOpen = false;
    ws.onopen = () => {
      didOpen = true;
      this.lastMessageAt = localNow();
      this.askedAt = null;
      this.clock.reset();
      this._ping();
      clearInterval(this.pingTimer);
      this.pingTimer = setInterval(() => this._tick(), Math.min(250, this.pingEveryMs / 2));
    };
    ws.onmessage = (msg) => {
      if (ws !== this.ws) return;
      this.lastMessageAt = localNow();
      this.askedAt = null; // any message answers
      if (this.status === "stale") this._setStatus("live");
      let data;
      try { data = JSON.parse(msg.data); } catch { return; }
      this._receive(data);
      this.heardAt = this.clock.serverNow();
    };
    ws.onclose = (ev) => {
      if (ws !== this.ws) return;
      clearInterval(this.pingTimer);
      this.ws = null;
      if (this.stopped) return;
      if (!didOpen && token) {
        // Refused at the handshake (a wrong token is HTTP 403 there), or the server is not
        // there at all: the browser cannot tell which. Try once without the token; its
        // snapshot tells (referee: false means a token is needed and ours was refused).
        this.tokenSuspect = true;
        this._setStatus(this.status === "connecting" ? "connecting" : "offline");
        this._scheduleRetry(0);
        return;
      }
      if (!didOpen && suspecting) this.tokenSuspect = false; // the server is away: not the token
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

  _refuseToken() {
    this.tokenRefused = true;
    this.handlers.onTokenRefused?.();
  }

  _tick() {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    const now = localNow();
    if (now - this.lastMessageAt > this.silenceMs) {
      this._reconnect(0);
      return;
    }
    if (this.status === "live" && isStale(now, this.lastMessageAt, this.askedAt, this.pingEveryMs)) {
      this._setStatus("stale");
    }
    if (localNow() - (this.lastPingAt || 0) >= this.pingEveryMs) this._ping();
  }

  _ping() {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    const id = ++this.pingId;
    const t0 = localNow();
    this.lastPingAt = t0;
    this.askedAt ??= t0; // the first ping since the last message (isStale)
    this.pings.set(id, t0);
    if (this.pings.size > 20) this.pings.delete(this.pings.keys().next().value);
    this.ws.send(JSON.stringify({ type: "ping", id, client_time: Date.now() }));
  }

  _reconnect(delay) {
    const old = this.ws;
    this.ws = null;
    clearInterval(this.pingTimer);
    if (old) { try { old.close(); } catch { /* already closed */ } }
    if (this.status !== "connecting") this._setStatus("offline"); // connecting: never was live
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
        this.referee = msg.referee ?? null;
        if (this.tokenSuspect) {
          this.tokenSuspect = false;
          if (this.referee === false) this._refuseToken();
        }
        this._setFaults(msg.faults);
        this._setLive(msg);
        // A snapshot is the truth now, even if it is "older" (a server restarted from its store).
        this._setState(state, "snapshot");
        this._setStatus("live");
        return;
      }
      case "status":
        this._setFaults(msg.faults);
        this._setLive(msg);
        return;
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
