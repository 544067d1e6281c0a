"""The result's shape and its CSV, without I/O."""

from __future__ import annotations

import csv
import hashlib
import hmac
import io

import pytest

from clock_service.core.errors import InvalidInput
from clock_service.edges.tournament.results import (
    FORMAT,
    RESULT_COLUMNS,
    result_from,
    results_csv,
)
from clock_service.edges.tournament.webhook import (
    check_url,
    delivery_headers,
    delivery_id,
    redacted,
    scrub,
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


def test_the_signature_covers_the_time_the_delivery_id_and_the_body() -> None:
    body = b'{"a":1}'
    mac = hmac.new(b"k", b'1700000000.1.2:0123456789abcdef.{"a":1}', hashlib.sha256)
    assert signature("k", 1700000000, "1.2:0123456789abcdef", body) == (
        f"t=1700000000,v1={mac.hexdigest()}")
    # Each part changes it.
    values = {signature("k", 1700000000, "1.2:0123456789abcdef", body),
              signature("k", 1700000001, "1.2:0123456789abcdef", body),
              signature("k", 1700000000, "1.3:0123456789abcdef", body),
              signature("k", 1700000000, "1.2:0123456789abcdef", b'{"a":2}'),
              signature("j", 1700000000, "1.2:0123456789abcdef", body)}
    assert len(values) == 5


def test_a_delivery_is_named_by_its_match_and_its_body() -> None:
    body = b'{"match":"1.2"}'
    assert delivery_id("1.2", body) == "1.2:" + hashlib.sha256(body).hexdigest()[:16]
    assert delivery_id("1.2", b'{"match":"1.2","x":1}') != delivery_id("1.2", body)
    headers = delivery_headers("k", "1.2", body, 3, 1700000000.9)
    assert headers["X-Shotclock-Delivery"] == delivery_id("1.2", body)
    assert headers["X-Shotclock-Attempt"] == "3"
    assert headers["X-Shotclock-Signature"] == signature("k", 1700000000, delivery_id(
        "1.2", body), body)
    assert "X-Shotclock-Signature" not in delivery_headers(None, "1.2", body, 1, 0.0)


@pytest.mark.parametrize(("url", "shown"), [  # the service's one policy (redaction.py)
    ("https://results.example.org/hook", "https://results.example.org/hook"),
    ("https://ann:pa55word@results.example.org:8443/hook",
     "https://ann:***@results.example.org:8443/hook"),
    ("http://10.0.0.5/hook?key=k3y-value&event=cup", "http://10.0.0.5/hook?key=***&event=cup"),
    ("http://k3y-in-the-user@h/x", "http://***@h/x"),
    ("http://[::1]:9000/x?%74oken=abcd", "http://[::1]:9000/x?%74oken=***"),
])
def test_a_webhook_url_is_shown_without_its_secrets(url: str, shown: str) -> None:
    assert redacted(url) == shown


def test_an_error_is_scrubbed_of_the_urls_secrets() -> None:
    url = "https://ann:pa55%2Fword@h/hook?key=k3y+v%26lue"
    said = scrub(f"ValueError: unknown url {url}; pa55/word k3y v&lue k3y+v%26lue", url)
    assert "pa55" not in said and "k3y" not in said and "v&lue" not in said, said
    assert "https://ann:***@h/hook?key=***" in said


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://h/x", "http:///x", "h/x",
                                 "https://h:0x1/x"])
def test_a_webhook_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        check_url(url)
    assert refused.value.code == "invalid_results_webhook"


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
