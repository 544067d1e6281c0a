"""Hardware errors: "the table-side hardware failed or is misconfigured".

Kept apart from the service's rule refusals (``clock_service.core.errors``): a dead display or a
wrong pin number is never the referee's fault, and a running clock never sees these raised
from ``show``/``beep`` (drivers log and carry on); they surface at start-up from the config.
"""

from __future__ import annotations

__all__ = ["HardwareError", "HardwareConfigError", "ProtocolError"]


class HardwareError(Exception):
    """Base of every table-side hardware failure."""


class HardwareConfigError(HardwareError, ValueError):
    """The hardware configuration (env or TOML) is invalid; the message names key and value."""


class ProtocolError(HardwareError, ValueError):
    """Bytes from the display controller are not a valid protocol message."""
