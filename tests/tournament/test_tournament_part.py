"""The tournament is a part built by the composition root (issue 18): cli.py builds it,
``create_app`` only mounts its routes and starts and stops it with the other parts."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from clock_service.edges.cli.main import table_service
from clock_service.edges.tournament.part import TournamentPart
from clock_service.service.settings import Settings
from clock_service.service.timesource import FakeTime


def test_the_table_service_starts_and_stops_its_tournament_part(tmp_path: Path) -> None:
    service = table_service(Settings(db=str(tmp_path / "t.db"), display="none",
                                     default_table=None), time=FakeTime())
    app, runtime = service.app, service.runtime
    tournament, results = service.tournament.tournament, service.tournament.results
    assert tournament is not None and results is not None
    assert tournament.runtime is runtime and results.runtime is runtime
    assert tournament._on_events not in runtime._listeners  # built, not started
    with TestClient(app) as client:
        assert tournament._on_events in runtime._listeners  # started with the app
        assert client.get("/api/draw").status_code == 200
    assert tournament._on_events not in runtime._listeners  # stopped with it


class _Step:
    def __init__(self, name: str, log: list[str], fail: bool = False) -> None:
        self.name, self.log, self.fail = name, log, fail

    async def start(self) -> None:
        self.log.append(f"start {self.name}")
        if self.fail:
            raise RuntimeError(f"{self.name} failed")

    async def stop(self) -> None:
        self.log.append(f"stop {self.name}")


def test_the_part_starts_the_draw_first_and_undoes_it_when_the_results_fail() -> None:
    log: list[str] = []
    part = TournamentPart(_Step("draw", log), _Step("results", log))  # type: ignore[arg-type]
    asyncio.run(part.start())
    asyncio.run(part.stop())
    assert log == ["start draw", "start results", "stop results", "stop draw"]
    log.clear()
    failing: Any = _Step("results", log, fail=True)
    part = TournamentPart(_Step("draw", log), failing)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="results failed"):
        asyncio.run(part.start())
    assert log == ["start draw", "start results", "stop draw"]
