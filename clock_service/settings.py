"""Service settings: command-line flags over ``SHOTCLOCK_*`` environment variables over defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["Settings"]


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be a whole number, got {raw!r}") from None


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    db: str = "var/shotclock.db"
    referee_token: str | None = None
    default_table: str | None = "1"
    # "terminal": show the default table's clock in the terminal when no hardware is set.
    display: str = "terminal"
    hardware: str = "none"
    ws_queue: int = 1024  # messages waiting per WebSocket client before it is cut off
    ws_send_timeout_s: float = 5.0
    max_message_bytes: int = 16_384  # HTTP bodies and WebSocket messages

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        env = os.environ
        settings = cls(
            host=env.get("SHOTCLOCK_HOST", cls.host),
            port=_env_int("SHOTCLOCK_PORT", cls.port),
            db=env.get("SHOTCLOCK_DB", cls.db),
            referee_token=env.get("SHOTCLOCK_REFEREE_TOKEN") or None,
            display=env.get("SHOTCLOCK_DISPLAY", cls.display),
            hardware=env.get("SHOTCLOCK_HARDWARE", cls.hardware),
            ws_queue=_env_int("SHOTCLOCK_WS_QUEUE", cls.ws_queue),
        )
        return replace(settings, **{k: v for k, v in overrides.items() if v is not None})
