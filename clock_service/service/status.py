"""The status of the service's parts and the faults that need a person's attention.

One ``Health`` per service, held by the runtime as ``runtime.health``:

- ``register(name, provider)``: ``provider()`` (a small dict, cheap, no I/O) is shown under
  ``components.<name>`` of ``GET /api/health`` (store, hardware, mqtt, camera ...).
- ``fault(key, component=, code=, message=, table=None)`` / ``clear(key)``: a fault (the store
  cannot write, a display does not acknowledge, a device failed to open, a broker is down
  ...) is listed in ``/api/health`` ``faults``, included in every WebSocket snapshot and sent
  at once to the WebSocket clients of its table (of every table when ``table`` is None) as
  ``{"type": "status", "table": id, "faults": [...]}``: the whole current list for that
  table, so a client just replaces what it shows. Status messages carry no ``seq``: they
  are not events, nothing is stored, and a client that reconnects gets them in the snapshot.

Loop thread only (like the clock): a device thread hops with ``loop.call_soon_threadsafe``.
Raising the same fault again with the same text is free (no message is sent), so a driver
may report it on every failed attempt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Health", "Fault", "Provider"]

log = logging.getLogger(__name__)

Provider = Callable[[], dict[str, Any]]
LEVELS = ("error", "warning", "info")
# Told when the faults of a table (None: faults of every table) changed.
FaultListener = Callable[[str | None], None]


@dataclass(frozen=True)
class Fault:
    key: str  # stable identity, e.g. "store.write" or "hardware.display.1"
    component: str  # store, hardware, mqtt, camera ...
    code: str  # machine code; the pages translate it (web_ui/static/js/i18n.js)
    message: str  # the fact, in English, for logs and for an operator
    table: str | None  # the table it concerns; None: every table
    since: int  # unix ms when it was first raised
    # error (default) | warning | info: an info is a notice, not a failure (the camera's
    # "balls at rest" in assist mode); the pages sort and colour by it.
    level: str = "error"
    vars: dict[str, str] | None = None  # values for the translated text (i18n.js fill)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.vars is None:
            del out["vars"]
        return out


class Health:
    def __init__(self, now_ms: Callable[[], float]) -> None:
        self._now_ms = now_ms
        self._providers: dict[str, Provider] = {}
        self._faults: dict[str, Fault] = {}
        self.listeners: list[FaultListener] = []

    # -- components ---------------------------------------------------------------------
    def register(self, name: str, provider: Provider) -> None:
        """Show ``provider()`` under ``components.<name>`` of ``/api/health``."""
        self._providers[name] = provider

    def unregister(self, name: str) -> None:
        self._providers.pop(name, None)

    def components(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for name, provider in self._providers.items():
            try:
                out[name] = dict(provider())
            except Exception as exc:  # a broken provider must not break the health endpoint
                log.exception("health provider %r failed", name)
                out[name] = {"error": f"{type(exc).__name__}: {exc}"}
        return out

    # -- faults -------------------------------------------------------------------------
    def fault(self, key: str, *, component: str, code: str, message: str,
              table: str | None = None, level: str = "error",
              vars: dict[str, str] | None = None) -> None:
        """Raise (or update) a fault; its clients are told when anything about it changed."""
        if level not in LEVELS:
            raise ValueError(f"fault level must be one of {LEVELS}, got {level!r}")
        old = self._faults.get(key)
        if old is not None and (old.component, old.code, old.message, old.table, old.level,
                                old.vars) == (component, code, message, table, level, vars):
            return
        since = old.since if old is not None and old.code == code else int(self._now_ms())
        self._faults[key] = Fault(key, component, code, message, table, since, level, vars)
        if old is None and level != "info":
            log.warning("fault %s (%s%s): %s", code, component,
                        f", table {table}" if table is not None else "", message)
        if old is not None and old.table != table:
            self._tell(old.table)
        self._tell(table)

    def clear(self, key: str) -> None:
        old = self._faults.pop(key, None)
        if old is not None and old.level == "info":
            self._tell(old.table)
        elif old is not None:
            log.warning("fault %s (%s) cleared after %.1f s", old.code, old.component,
                        (self._now_ms() - old.since) / 1000.0)
            self._tell(old.table)

    def faults(self, table: str | None = None) -> list[dict[str, Any]]:
        """The faults that concern ``table`` (its own and every-table ones); all of them
        when ``table`` is None. Oldest first."""
        chosen = [f for f in self._faults.values()
                  if table is None or f.table is None or f.table == table]
        return [f.to_dict() for f in sorted(chosen, key=lambda f: (f.since, f.key))]

    def _tell(self, table: str | None) -> None:
        for listener in self.listeners:
            try:
                listener(table)
            except Exception:
                log.exception("fault listener failed")
