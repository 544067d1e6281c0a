"""The time profile of a match (rules 12.2-12.7) and the shot limit by round."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from clock_service.errors import InvalidProfile

__all__ = ["Profile"]

# Anything longer than this is a typo, not a shot clock.
MAX_MS = 3_600_000


@dataclass(frozen=True)
class Profile:
    shot_ms: int = 35_000  # 12.2
    full_rounds: int = 2  # 12.2: "the first two rounds"
    step_ms: int = 5_000  # 12.3
    floor_ms: int = 20_000  # 12.3
    extension_ms: int = 15_000  # 12.6
    extensions_per_frame: int = 1  # 12.5
    warnings_ms: tuple[int, ...] = field(default=(10_000, 5_000, 4_000, 3_000, 2_000, 1_000))

    def __post_init__(self) -> None:
        for name in ("shot_ms", "floor_ms", "extension_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_MS:
                raise InvalidProfile(
                    f"{name} must be a whole number of ms in 1..{MAX_MS}, got {value!r}")
        for name in ("full_rounds", "step_ms", "extensions_per_frame"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_MS:
                raise InvalidProfile(f"{name} must be a whole number >= 0, got {value!r}")
        if self.floor_ms > self.shot_ms:
            raise InvalidProfile(
                f"floor_ms ({self.floor_ms}) must not be above shot_ms ({self.shot_ms}) (12.3)"
            )
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
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(partial) - known)
        if unknown:
            raise InvalidProfile(f"unknown profile field(s) {unknown}; known: {sorted(known)}")
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

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["warnings_ms"] = list(self.warnings_ms)
        return out
