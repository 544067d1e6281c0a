"""What names a camera source and what its failure is: shared by the sources (source.py,
picamera.py) so the optional Pi camera source need not import the module that picks it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SourceSpec", "SourceError"]


class SourceError(OSError):
    """The camera cannot be opened or stopped giving frames."""


@dataclass(frozen=True)
class SourceSpec:
    kind: str  # device | stream | file | picamera2
    target: str | int

    @property
    def live(self) -> bool:
        return self.kind != "file"
