from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server import ServerProcess


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    """A real `shotclock serve` on a free loopback port and a fresh SQLite file."""
    proc = ServerProcess(tmp_path / "shotclock.db").start()
    try:
        yield proc
    finally:
        proc.stop()
