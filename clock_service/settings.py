"""Service settings: command-line flags over ``SHOTCLOCK_*`` environment variables over defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

__all__ = ["Settings", "default_db_path"]


def default_db_path(environ: Any = None) -> str:
    """Where the store lives when nobody says: never relative to the working directory.

    Under systemd (``StateDirectory=shotclock``) that is ``$STATE_DIRECTORY``; otherwise the
    user's state directory, ``$XDG_STATE_HOME/shotclock`` or ``~/.local/state/shotclock``.
    (A relative default once made the unit, run with cwd ``/``, try ``/var/shotclock.db``
    and exit: issue 10, defect 1.)
    """
    env = os.environ if environ is None else environ
    state = env.get("STATE_DIRECTORY", "")
    # systemd gives a colon-separated list when a unit has several state directories.
    first = state.split(":")[0]
    if first and Path(first).is_absolute():
        return str(Path(first) / "shotclock.db")
    xdg = env.get("XDG_STATE_HOME", "")
    if xdg and Path(xdg).is_absolute():  # the XDG spec: a relative value is to be ignored
        return str(Path(xdg) / "shotclock" / "shotclock.db")
    return str(Path(env.get("HOME") or Path.home()) / ".local" / "state" / "shotclock"
               / "shotclock.db")


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
    # Commands a second per client address (HTTP) or per WebSocket; 0: no limit. See limits.py.
    command_rate: int = 20
    command_burst: int = 60
    # mqtt://[user:pass@]host:port/<hall>: publish every table on a broker (README "MQTT").
    mqtt_url: str | None = None

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
        )
        return replace(settings, **{k: v for k, v in overrides.items() if v is not None})
