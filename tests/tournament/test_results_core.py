"""The result's shape and its CSV, without I/O."""

from __future__ import annotations

import csv
import hashlib
import hmac
import io

from clock_service.edges.tournament.results import (
    FORMAT,
    RESULT_COLUMNS,
    result_from,
    results_csv,
    signature,
)

STATS = {"shots": 10, "timed_shots": 9, "mean_ms": 12000, "median_ms": 11000, "max_ms": 30000,
         "total_ms": 108000, "extensions": 1, "time_fouls": 0, "fouls": 1, "whites": 3,
         "visits": 5, "frames_won": 2, "breaks": 1, "breaks_won": 1, "p90_ms": 1}
RECORD = {"id": "3.2", "table": "3", "number": 2, "event": "Cup", "referee": None,
          "players": ["=Ivanov", "Petrov"], "race_to": 3, "score": [2, 2], "winner": None,
          "started_at": 1000, "ended_at": 61000, "log_sha256": "ab" * 32, "start_seq": 5,
          "last_seq": 90, "players_stats": [STATS, {**STATS, "frames_won": 2}],
          "frames": [{"number": 1, "winner": 0, "reason": "legal_colour_pot",
                      "duration_ms": 30000, "whites": [3, 1], "breaker": 0}]}


def test_a_drawn_result_at_the_time_limit() -> None:
    result = result_from(RECORD, {"drawn": True, "by_time_limit": True, "winner": None},
                         draw_number=7)
    assert (result["format"], result["winner"], result["winner_name"], result["drawn"],
            result["by_time_limit"], result["duration_ms"], result["draw_number"]) == (
        FORMAT, None, None, True, True, 60000, 7)
    assert result["stats"][0]["name"] == "=Ivanov" and "p90_ms" not in result["stats"][0]
    assert result["frames"] == [{"number": 1, "winner": 0, "reason": "legal_colour_pot",
                                 "duration_ms": 30000, "whites": [3, 1]}]


def test_csv_one_row_a_match_and_no_formula() -> None:
    text = results_csv([result_from({**RECORD, "winner": 1}, None)])
    rows = list(csv.reader(io.StringIO(text)))
    assert tuple(rows[0]) == RESULT_COLUMNS
    row = dict(zip(rows[0], rows[1], strict=True))
    assert row["player1"] == "'=Ivanov"  # text, never a formula
    assert (row["winner"], row["drawn"], row["frames"], row["digest"]) == (
        "Petrov", "0", "1", "ab" * 32)


def test_signature_is_the_hmac_of_the_body() -> None:
    body = b'{"a":1}'
    assert signature("k", body) == "sha256=" + hmac.new(b"k", body, hashlib.sha256).hexdigest()


def test_tournament_routes_on_a_service_without_the_tournament_say_so() -> None:
    """The hall service (shotclock hall) mounts the same routers but keeps no draw or
    results: a clear 404, not a 500 or a 'no table'."""
    from fastapi import FastAPI
    from fastapi.testclient import TestClient

    from clock_service.core.errors import ShotClockError
    from clock_service.edges.api.app import _on_shotclock_error
    from clock_service.edges.tournament.routes import router

    app = FastAPI()
    app.include_router(router(None, None))
    app.exception_handler(ShotClockError)(_on_shotclock_error)
    client = TestClient(app)
    for path in ("/api/draw", "/api/results", "/api/tables/1/next"):
        answer = client.get(path)
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_served_here"
