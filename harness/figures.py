"""Percentiles of measured figures, as the benchmark and the attack canary report them."""

from __future__ import annotations

from typing import Any

__all__ = ["pct", "summary"]


def pct(values: list[float], q: float) -> float | None:
    """The q-th percentile (nearest rank); None without values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100.0 * (len(ordered) - 1))))]


def summary(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "p50": pct(values, 50), "p99": pct(values, 99),
            "max": max(values) if values else None}
