// The pages' WebSockets. Link: one socket kept live (reconnection that never gives up,
// pings, a clock offset, stale and silence detection, the status and its log), the one place
// a fix to reconnecting or staleness is written. Its users: TableConnection here (one table's
// feed, /ws/tables/{id}, which never misses an event) and HallFeed (hallfeed.js, /ws/hall).
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

/**
 * One WebSocket kept live, whatever it carries (a table's feed, the hall's): the lifecycle
 * every page shares, written once.
 *
 *   connecting -> (first message) live -> (close, error, silence) offline -> connecting...
 *                  live -> (isStale) stale -> (any message) live
 *
 * It opens the socket, opens it again after a close with jittered backoff (at once after a
 * 4001 "too slow"), pings every pingEveryMs (the clock offset from the pongs), says "stale"
 * after isStale(), drops a socket silent for silenceAfter() itself (a close() on a hung
 * service's socket does not close it: no closing handshake comes back) and opens another at
 * once, and looks again when the tab comes back, the network comes back or the page comes
 * back from the back-forward cache (wake). The status changes go to handlers.onStatus and to
 * statusLog.
 *
 * A user of it says where to connect (_url, _socket), reads every message but the pongs
 * (_message), calls _greeted() on the first one of a connection and _setStatus("live") once
 * it is applied, and may take a close first (_closed).
 */
export class Link {
  /**
   * @param {object} handlers  onStatus(status), plus the user's own
   * @param {object} options   pingEveryMs (stale and silence thresholds follow from it,
   *                           staleAfter/silenceAfter); ?ping=MS in the address wins
   */
  constructor(handlers = {}, options = {}) {
    this.handlers = handlers;
    // pingEveryMs: how often to ping (a display that must notice a dead link in 1.5 s pings
    // more often).
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
    this.opened = 0; // sockets created, for the curious (and the tests)
    this.reconnects = 0;
    this.clock = new ClockOffset();
    this.status = "connecting";
    this.ws = null;
    this.attempt = 0;
    this.retryTimer = 0;
    this.pingTimer = 0;
    this.pingId = 0;
    this.pings = new Map();
    this.lastMessageAt = 0;
    this.lastPingAt = 0;
    this.askedAt = null; // the first ping since the last message went out then (isStale)
    this.stopped = false;
    this._onWake = () => this.wake();
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") this.wake();
    });
    window.addEventListener("online", this._onWake);
    // pageshow also fires on the first load: only a page restored from the back-forward
    // cache (persisted) needs waking, or the socket just opened would be thrown away.
    window.addEventListener("pageshow", (ev) => { if (ev.persisted) this.wake(); });
  }

  serverNow() {
    return this.clock.serverNow();
  }

  /** The instant to draw a countdown at: now, or, while this page's link is not live (a
   * hung service, a dead Wi-Fi), the moment it stopped being live: a frozen countdown,
   * never a running one. */
  frozenNow() {
    const now = this.clock.serverNow();
    // Frozen where the digits stood when the link stopped being live, not at the last
    // message heard: that was up to the stale threshold earlier, and the digits jumped
    // back up by it (58 -> 60 on the console, whose threshold is 2 s).
    const frozenAt = this.frozenAt ?? this.heardAt;
    return this.status !== "live" && frozenAt != null ? Math.min(now, frozenAt) : now;
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

  _setStatus(status) {
    if (this.status === status) return;
    if (status === "live") this.frozenAt = null;
    else if (this.status === "live") this.frozenAt = this.clock.serverNow();
    this.status = status;
    this.statusLog.push([status, Math.round(localNow())]);
    if (this.statusLog.length > 50) this.statusLog.shift();
    this.handlers.onStatus?.(status);
  }

  /** The new socket (the user's: its address, its subprotocols); it may throw. */
  _socket() {
    return new WebSocket(this._url());
  }

  /** The socket could not even be made: try again later. */
  _socketRefused() {
    this._scheduleRetry();
  }

  /** A close the user takes care of itself (true), before the link says offline. */
  _closed(_ev, _didOpen) {
    return false;
  }

  /** The first message of a connection: the backoff starts over, the clock offset roughly
   * from the service's time until the pongs refine it. */
  _greeted(serverTime) {
    this.attempt = 0;
    this.clock.roughFrom(serverTime);
  }

  _open() {
    clearTimeout(this.retryTimer);
    // The status stays what it is (connecting before the first message, offline after a
    // drop) until the first message says live.
    let ws;
    try {
      ws = this._socket();
    } catch {
      this._socketRefused();
      return;
    }
    this.opened += 1;
    this.ws = ws;
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
      if (this._closed(ev, didOpen)) return;
      this._setStatus("offline");
      this._scheduleRetry(ev.code === CLOSE_TOO_SLOW ? 0 : undefined);
    };
    ws.onerror = () => { /* onclose follows */ };
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
    if (localNow() - this.lastPingAt >= this.pingEveryMs) this._ping();
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

  /** Let the socket go (silent too long, a seq gap, a wake) and open another after `delay`. */
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
    if (msg.type !== "pong") {
      this._message(msg);
      return;
    }
    const t0 = this.pings.get(msg.id);
    if (t0 !== undefined) {
      this.pings.delete(msg.id);
      this.clock.add(t0, localNow(), msg.server_time);
    }
  }

  /** A message other than a pong: the user's. */
  _message(_msg) {}
}

/**
 * One table's feed: /ws/tables/{id} on a Link, with the table's state (snapshot, events,
 * seq gaps, ?since=), its faults, whether the service says it is live, and the referee's
 * token offered at the handshake.
 */
export class TableConnection extends Link {
  /**
   * @param {string} table
   * @param {object} handlers  onState(state, why), onEvent(event, {replayed}),
   *                           onStatus(status) with status in
   *                           connecting|live|stale|offline|unknown_table,
   *                           onFaults(faults), onTokenRefused(), onReply(ack or error),
   *                           onLive(live, staleSince): the service says whether the
   *                           table's state is live (false on the hall service while the
   *                           table's own service is offline: stop counting, last known)
   * @param {object} options   pingEveryMs (see Link), token: () => string
   */
  constructor(table, handlers = {}, options = {}) {
    super(handlers, options);
    this.table = table;
    // token(): the referee token to offer, if any.
    this.token = options.token || (() => "");
    this.tokenRefused = false; // the offered token was refused at the handshake
    this.tokenSuspect = false; // the last try with the token failed before it opened
    this.offered = ""; // the token offered by the socket being opened
    this.suspecting = false; // that socket goes without the token to tell (tokenSuspect)
    this.referee = null; // from the snapshot: may this connection send commands?
    this.faults = [];
    // From the service (snapshot, status): is the table's state live? Not live (a table
    // mirrored by the hall service whose own service is offline): its countdown stopped at
    // staleSince (the service's clock); see frozenNow().
    this.live = true;
    this.staleSince = null;
    this.state = null;
    this.lastSeq = null; // the last event seq seen (snapshot or event): ?since= on reconnect
  }

  /** Open again now, e.g. with a new token (a deliberate reopen; ?since= keeps the place). */
  restart() {
    this.tokenRefused = false;
    this.tokenSuspect = false;
    this.attempt = 0;
    this._reconnect(0);
  }

  /** The instant to draw the table's countdown at: the link's (Link.frozenNow), or, while
   * the service says the state is not live, the moment it went stale. */
  frozenNow() {
    const now = super.frozenNow();
    return !this.live && this.staleSince != null ? Math.min(now, this.staleSince) : now;
  }

  /** Take a state from elsewhere (an HTTP command's reply) if it is not older than ours. */
  offerState(state, why = "reply") {
    if (!state) return;
    if (this.state && typeof state.seq === "number" && state.seq < this.state.seq) return;
    this._setState(state, why);
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

  _socket() {
    this.snapshotSeq = null;
    this.suspecting = this.tokenSuspect;
    this.offered = this.tokenRefused || this.suspecting ? "" : this.token();
    return this.offered ? new WebSocket(this._url(), [`bearer.${this.offered}`]) : new WebSocket(this._url());
  }

  _socketRefused() {
    if (this.offered) this._refuseToken(); // not even a valid subprotocol: try without it
    this._scheduleRetry(this.offered ? 0 : undefined);
  }

  _closed(ev, didOpen) {
    if (!didOpen && this.offered) {
      // Refused at the handshake (a wrong token is HTTP 403 there), or the server is not
      // there at all: the browser cannot tell which. Try once without the token; its
      // snapshot tells (referee: false means a token is needed and ours was refused).
      this.tokenSuspect = true;
      this._setStatus(this.status === "connecting" ? "connecting" : "offline");
      this._scheduleRetry(0);
      return true;
    }
    if (!didOpen && this.suspecting) this.tokenSuspect = false; // the server is away: not the token
    if (ev.code === CLOSE_UNKNOWN_TABLE) {
      this._setStatus("unknown_table");
      this._scheduleRetry(BACKOFF_MAX_MS);
      return true;
    }
    return false;
  }

  _refuseToken() {
    this.tokenRefused = true;
    this.handlers.onTokenRefused?.();
  }

  _message(msg) {
    switch (msg.type) {
      case "snapshot": {
        this.snapshotSeq = msg.seq;
        const state = { ...msg.state, seq: msg.state.seq ?? msg.seq };
        this._greeted(state.server_time);
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
