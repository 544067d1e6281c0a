"""Service settings: command-line flags over ``SHOTCLOCK_*`` environment variables over defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

__all__ = ["Settings", "default_db_path"]


def default_db_path(environ: Any = None, name: str = "shotclock.db") -> str:
    """Where the store lives when nobody says: never relative to the working directory.

    Under systemd (``StateDirectory=shotclock``) that is ``$STATE_DIRECTORY``; otherwise the
    user's state directory, ``$XDG_STATE_HOME/shotclock`` or ``~/.local/state/shotclock``.
    (A relative default once made the unit, run with cwd ``/``, try ``/var/shotclock.db``
    and exit: issue 10, defect 1.) ``name``: the file there (``hall.db`` for ``shotclock
    hall``, whose store is its own: a hall server may run a table service too).
    """
    env = os.environ if environ is None else environ
    state = env.get("STATE_DIRECTORY", "")
    # systemd gives a colon-separated list when a unit has several state directories.
    first = state.split(":")[0]
    if first and Path(first).is_absolute():
        return str(Path(first) / name)
    xdg = env.get("XDG_STATE_HOME", "")
    if xdg and Path(xdg).is_absolute():  # the XDG spec: a relative value is to be ignored
        return str(Path(xdg) / "shotclock" / name)
    return str(Path(env.get("HOME") or Path.home()) / ".local" / "state" / "shotclock" / name)


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a whole number, got {raw!r}") from None


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a number, got {raw!r}") from None


def _default_table(raw: str | None) -> str | None:
    if raw is None:
        return Settings.default_table
    raw = raw.strip()
    return None if raw in ("", "none") else raw
def _env_list(name: str) -> tuple[str, ...]:
    """A comma- or space-separated list."""
    raw = os.environ.get(name) or ""
    return tuple(item for item in raw.replace(",", " ").split() if item)


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    db: str = field(default_factory=default_db_path)
    referee_token: str | None = None
    default_table: str | None = "1"
    # "terminal": show the default table's clock in the terminal when no hardware is set.
    display: str = "terminal"
    ws_queue: int = 1024  # messages waiting per WebSocket client before it is cut off
    ws_send_timeout_s: float = 5.0
    # WebSocket keepalive: a ping every this many seconds; no pong within as long again
    # drops the connection (a dead client is let go even when nothing is being sent).
    ws_ping_s: float = 20.0
    max_message_bytes: int = 16_384  # HTTP bodies and WebSocket messages
    # Commands a second per client address, HTTP and every WebSocket of that address
    # together; 0: no limit. See limits.py.
    command_rate: int = 20
    command_burst: int = 60
    # mqtt://[user:pass@]host:port/<hall>: publish every table on a broker (README "MQTT").
    mqtt_url: str | None = None
    # Reads (GET /api/..., WebSocket connections) per client address: tokens a second, a
    # read of many events costs more than one token; 0: no limit. See limits.py.
    read_rate: int = 20
    read_burst: int = 60
    # WebSocket messages of any kind (commands, pings, junk) per client address, all its
    # sockets together; a socket over it is closed (1008). 0: no limit. See limits.py.
    message_rate: int = 50
    message_burst: int = 100
    # WebSocket handshakes a second from everyone together: a burst of connections (from
    # many addresses) is a burst of work on the clock's loop. Refused: retry (pages back
    # off with jitter). 0: no limit.
    handshake_rate: int = 50
    handshake_burst: int = 25
    # Connections (TCP, HTTP and WebSocket) in all and per client address; connections
    # over either are closed at once, before they hold anything. See serving.py.
    max_connections: int = 1000
    max_connections_per_address: int = 64
    max_sockets_per_address: int = 32  # WebSockets per client address (after proxies)
    # A request's headers and body must arrive within this many seconds of its first byte
    # (slowloris); an idle keep-alive connection is closed after keep_alive_s.
    request_timeout_s: float = 5.0
    keep_alive_s: float = 5.0
    max_replays: int = 4  # ?since= replays streaming from the store at once
    # How long a command waits for its events to be durable before 503 store_unavailable.
    store_wait_s: float = 5.0
    max_tables: int = 200  # live (not archived) tables
    # Addresses (or networks) of reverse proxies whose X-Forwarded-For is believed.
    trusted_proxies: tuple[str, ...] = ()
    # Origins besides the service's own that may command and open WebSockets.
    allowed_origins: tuple[str, ...] = ()
    # Listen on a non-loopback address without a referee token (shotclock serve --open).
    open: bool = False
    # A directory of the federation's own time-profile presets (JSON or TOML files, see
    # clock_service/presets), besides the built-in ones.
    presets_dir: str | None = None
    # Results out (issue 25): POST each finished match's result here, signed with the
    # secret (HMAC-SHA256), retried from results_retry_s doubling to 5 minutes.
    results_webhook: str | None = None
    results_secret: str | None = None
    results_retry_s: float = 2.0
    # Text files for OBS/Wirecast (broadcast/textfiles.py): a directory to keep them in,
    # the table (None: every table, each in DIR/<id>/) and the language of last_event.
    feed_dir: str | None = None
    feed_table: str | None = None
    feed_lang: str = "en"

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        env = os.environ
        settings = cls(
            host=env.get("SHOTCLOCK_HOST", cls.host),
            port=_env_int("SHOTCLOCK_PORT", cls.port),
            db=env.get("SHOTCLOCK_DB") or default_db_path(env),
            referee_token=env.get("SHOTCLOCK_REFEREE_TOKEN") or None,
            display=env.get("SHOTCLOCK_DISPLAY", cls.display),
            ws_queue=_env_int("SHOTCLOCK_WS_QUEUE", cls.ws_queue),
            ws_send_timeout_s=_env_float("SHOTCLOCK_WS_SEND_TIMEOUT_S", cls.ws_send_timeout_s),
            ws_ping_s=_env_float("SHOTCLOCK_WS_PING_S", cls.ws_ping_s),
            max_message_bytes=_env_int("SHOTCLOCK_MAX_MESSAGE_BYTES", cls.max_message_bytes),
            command_rate=_env_int("SHOTCLOCK_COMMAND_RATE", cls.command_rate),
            command_burst=_env_int("SHOTCLOCK_COMMAND_BURST", cls.command_burst),
            mqtt_url=env.get("SHOTCLOCK_MQTT_URL") or None,
            # "" (or "none"): no default table, e.g. a hall where every table has its own Pi.
            default_table=_default_table(env.get("SHOTCLOCK_DEFAULT_TABLE")),
            read_rate=_env_int("SHOTCLOCK_READ_RATE", cls.read_rate),
            read_burst=_env_int("SHOTCLOCK_READ_BURST", cls.read_burst),
            message_rate=_env_int("SHOTCLOCK_MESSAGE_RATE", cls.message_rate),
            message_burst=_env_int("SHOTCLOCK_MESSAGE_BURST", cls.message_burst),
            handshake_rate=_env_int("SHOTCLOCK_HANDSHAKE_RATE", cls.handshake_rate),
            handshake_burst=_env_int("SHOTCLOCK_HANDSHAKE_BURST", cls.handshake_burst),
            max_connections=_env_int("SHOTCLOCK_MAX_CONNECTIONS", cls.max_connections),
            max_connections_per_address=_env_int("SHOTCLOCK_MAX_CONNECTIONS_PER_ADDRESS",
                                                 cls.max_connections_per_address),
            max_sockets_per_address=_env_int("SHOTCLOCK_MAX_SOCKETS_PER_ADDRESS",
                                             cls.max_sockets_per_address),
            request_timeout_s=_env_float("SHOTCLOCK_REQUEST_TIMEOUT_S", cls.request_timeout_s),
            keep_alive_s=_env_float("SHOTCLOCK_KEEP_ALIVE_S", cls.keep_alive_s),
            max_replays=_env_int("SHOTCLOCK_MAX_REPLAYS", cls.max_replays),
            store_wait_s=_env_float("SHOTCLOCK_STORE_WAIT_S", cls.store_wait_s),
            max_tables=_env_int("SHOTCLOCK_MAX_TABLES", cls.max_tables),
            trusted_proxies=_env_list("SHOTCLOCK_TRUSTED_PROXIES"),
            allowed_origins=_env_list("SHOTCLOCK_ALLOWED_ORIGINS"),
            presets_dir=env.get("SHOTCLOCK_PRESETS_DIR") or None,
            results_webhook=env.get("SHOTCLOCK_RESULTS_WEBHOOK") or None,
            results_secret=env.get("SHOTCLOCK_RESULTS_SECRET") or None,
            results_retry_s=_env_float("SHOTCLOCK_RESULTS_RETRY_S", cls.results_retry_s),
            feed_dir=env.get("SHOTCLOCK_FEED_DIR") or None,
            feed_table=env.get("SHOTCLOCK_FEED_TABLE") or None,
            feed_lang=env.get("SHOTCLOCK_FEED_LANG") or cls.feed_lang,
        )
        return replace(settings, **{k: v for k, v in overrides.items() if v is not None})
