"""Errors of the rules core.

Two kinds, kept apart on purpose:

- :class:`InvalidResult` -- the referee's report describes something that cannot
  happen (more whites potted than are on the table, an unknown pocket, a shot
  after the frame ended). It is also a ``ValueError``.
- :class:`RuleRefusal` -- the request is well formed but the rules forbid it now
  (hand back with no foul pending, 10.4). It carries the rule number.

Every error carries a stable ``code`` string so another layer can map it onto
its own error hierarchy without parsing messages.
"""

from __future__ import annotations

__all__ = ["InvalidResult", "RuleRefusal", "RulesError"]


class RulesError(Exception):
    """Base of every error raised by :mod:`clock_service.core.rules`."""

    code: str

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


class InvalidResult(RulesError, ValueError):
    """A result, call or route that cannot happen; the message names the field and value."""


class RuleRefusal(RulesError):
    """A request the rules forbid in the current state of the frame or match."""

    rule: str

    def __init__(self, message: str, *, code: str, rule: str) -> None:
        super().__init__(f"{message} ({rule})", code=code)
        self.rule = rule
