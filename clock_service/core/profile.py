"""The time profile of a match (rules 12.2-12.7) and the shot limit by round.

The defaults are the seed discipline's section 12. Other federations' numbers come as
named presets (data files, ``clock_service/core/presets.py``) that fill in these same fields;
the core only ever sees a full ``Profile``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Any

from clock_service.core.errors import InvalidProfile

__all__ = ["Profile", "MAX_MS", "PROFILE_FIELDS"]

# Anything longer than this is a typo, not a shot clock.
MAX_MS = 3_600_000
MAX_TEXT = 60


def _whole(name: str, value: Any, low: int, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= MAX_MS:
        kind = "ms" if name.endswith("_ms") else "number"
        raise InvalidProfile(
            f"{name} must be a whole {kind} in {low}..{MAX_MS}"
            f"{' or null' if optional else ''}, got {value!r}")


@dataclass(frozen=True)
class Profile:
    shot_ms: int = 35_000  # 12.2
    full_rounds: int = 2  # 12.2: "the first two rounds"
    step_ms: int = 5_000  # 12.3
    floor_ms: int = 20_000  # 12.3
    extension_ms: int = 15_000  # 12.6
    extensions_per_frame: int = 1  # 12.5
    warnings_ms: tuple[int, ...] = field(default=(10_000, 5_000, 4_000, 3_000, 2_000, 1_000))
    # Extensions per player in the deciding frame (both players one frame from the race,
    # or a tie-break frame after the match's time limit); None: as extensions_per_frame.
    # Some Russian events' regulations give two there.
    extensions_deciding_frame: int | None = None
    # Limit of the first shot after the break (WPA §20: up to 60 s); None: the round's limit.
    after_break_ms: int | None = None
    # The clock is shown to the players only once this much time is left (a countdown
    # that appears late, as some arenas show it); None: always shown.
    show_from_ms: int | None = None
    # The shot limit when the referee switches the clock on for slow play (shot_clock_on)
    # in a match played without one (12.1), or at a match's time limit: one flat limit,
    # no reduction by round. "1 minute per shot once play is clearly stalled".
    slow_play_ms: int = 60_000
    # The preset the numbers came from (its name), for people; None: set by hand.
    preset: str | None = None

    def __post_init__(self) -> None:
        for name in ("shot_ms", "floor_ms", "extension_ms", "slow_play_ms"):
            _whole(name, getattr(self, name), 1)
        for name in ("full_rounds", "step_ms", "extensions_per_frame"):
            _whole(name, getattr(self, name), 0)
        _whole("extensions_deciding_frame", self.extensions_deciding_frame, 0, optional=True)
        _whole("after_break_ms", self.after_break_ms, 1, optional=True)
        _whole("show_from_ms", self.show_from_ms, 1, optional=True)
        if self.floor_ms > self.shot_ms:
            raise InvalidProfile(
                f"floor_ms ({self.floor_ms}) must not be above shot_ms ({self.shot_ms}) (12.3)"
            )
        if self.preset is not None and (not isinstance(self.preset, str)
                                        or not 0 < len(self.preset) <= MAX_TEXT):
            raise InvalidProfile(f"preset must be a name of 1..{MAX_TEXT} characters, "
                                 f"got {self.preset!r}")
        warnings = tuple(self.warnings_ms)
        for w in warnings:
            if not isinstance(w, int) or isinstance(w, bool) or not 0 < w <= MAX_MS:
                raise InvalidProfile(f"warnings_ms must hold positive whole ms, got {w!r}")
        # Stored sorted from the largest so the clock announces them in order.
        object.__setattr__(self, "warnings_ms", tuple(sorted(set(warnings), reverse=True)))

    @classmethod
    def from_partial(cls, partial: Mapping[str, Any] | None) -> Profile:
        """Defaults from the rules, overridden by the fields given; unknown fields are refused."""
        partial = dict(partial or {})
        unknown = sorted(set(partial) - set(PROFILE_FIELDS))
        if unknown:
            raise InvalidProfile(
                f"unknown profile field(s) {unknown}; known: {sorted(PROFILE_FIELDS)}")
        if "warnings_ms" in partial:
            if not isinstance(partial["warnings_ms"], list | tuple):
                raise InvalidProfile(f"warnings_ms must be a list, got {partial['warnings_ms']!r}")
            partial["warnings_ms"] = tuple(partial["warnings_ms"])
        return cls(**partial)

    def shot_limit(self, round_: int) -> int:
        """Limit of a shot in round ``round_`` (12.2-12.3): 35, 35, 30, 25, 20, 20, ... s."""
        if round_ < 1:
            raise ValueError(f"round must be >= 1, got {round_}")
        if round_ <= self.full_rounds:
            return self.shot_ms
        return max(self.floor_ms, self.shot_ms - self.step_ms * (round_ - self.full_rounds))

    def extensions(self, deciding: bool) -> int:
        """Extensions per player in a frame (12.5), or in the deciding frame when the
        profile gives that frame its own number."""
        if deciding and self.extensions_deciding_frame is not None:
            return self.extensions_deciding_frame
        return self.extensions_per_frame

    def shown(self, remaining_ms: int | None) -> bool:
        """Whether the clock is shown with ``remaining_ms`` left (``show_from_ms``)."""
        return (remaining_ms is None or self.show_from_ms is None
                or remaining_ms <= self.show_from_ms)

    @cached_property
    def _fields(self) -> dict[str, Any]:
        # Made once per profile (it is frozen): dataclasses.asdict deep-copies every field
        # and was half the cost of a table's state (87 of 164 us per state, issue 25).
        return {name: getattr(self, name) for name in PROFILE_FIELDS}

    def to_dict(self) -> dict[str, Any]:
        out = dict(self._fields)  # a new dict for each caller; the values are immutable
        out["warnings_ms"] = list(self.warnings_ms)
        return out


PROFILE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Profile))
