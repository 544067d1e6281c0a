"""The results webhook set on the director's desk (issue 36): kept in the store, used at
once and after a restart, signed with its secret (never shown back), stopped when taken
away; the environment's wins and cannot be changed from the desk. In-process over the
real app, a real store and a real local receiver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from clock_service.edges.cli.main import table_service
from clock_service.edges.tournament.webhook import delivery_id, signature
from clock_service.service.settings import Settings
from clock_service.service.timesource import FakeTime
from tests.tournament.test_results_webhook import Receiver
from tests.waiting import until

DIRECTOR = {"Authorization": "Bearer director-token-of-the-webhook-test"}


def _client(db: Path, **settings: Any) -> TestClient:
    return TestClient(table_service(Settings(
        db=str(db), display="none", referee_token=DIRECTOR["Authorization"][7:],
        command_rate=0, read_rate=0, **settings), time=FakeTime()).app)


def _play_a_match(client: TestClient, table: str) -> None:
    assert client.post("/api/tables", json={"id": table, "players": ["Иванов", "Петров"],
                                            "race_to": 1}, headers=DIRECTOR).status_code == 201
    ended = client.post(f"/api/tables/{table}/commands", headers=DIRECTOR, json={
        "command": "new_frame", "winner": 0, "reason": "walkover"})
    assert ended.status_code == 200 and ended.json()["match"]["over"], ended.text


def _until_sent(client: Any, match: str) -> None:
    """Until the outbox says ``match``'s result was taken (its ``sent_at``): a receiver that
    has the request may not have answered yet, and a service stopped before the answer
    sends it again after its restart (at least once, the same delivery id)."""
    def sent() -> bool:
        deliveries = client.get("/api/results/outbox", headers=DIRECTOR).json()["deliveries"]
        return any(d["match"] == match and d["sent_at"] for d in deliveries)

    until(sent, 30, 0.02, f"{match}'s result sent")


def test_a_webhook_set_on_the_desk_is_kept_used_and_taken_away(
        tmp_path: Path, webhook_receiver: Receiver) -> None:
    receiver = webhook_receiver
    with _client(tmp_path / "w.db") as client:
        assert client.get("/api/results/webhook", headers=DIRECTOR).json() == {
            "url": None, "secret_set": False, "source": None, "secret_source": None}
        bad = client.put("/api/results/webhook", headers=DIRECTOR, json={"url": "ftp://x/y"})
        assert bad.status_code == 422 and "url" in bad.json()["error"]["message"]
        assert client.put("/api/results/webhook", json={"url": receiver.url}).status_code == 401
        answer = client.put("/api/results/webhook", headers=DIRECTOR,
                            json={"url": receiver.url, "secret": "desk-secret"})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"url": receiver.url, "secret_set": True, "source": "store",
                                 "secret_source": "store"}
        _play_a_match(client, "a")
        _until_sent(client, "a.1")  # the service's word, not the receiver's: then the restart
        request = receiver.requests[0]
        headers = {k.lower(): v for k, v in request["headers"].items()}
        delivery = headers["x-shotclock-delivery"]
        assert delivery == delivery_id("a.1", request["body"])
        stamp = headers["x-shotclock-signature"].split(",")[0].removeprefix("t=")
        assert headers["x-shotclock-signature"] == signature(
            "desk-secret", int(stamp), delivery, request["body"])  # the desk's secret
    with _client(tmp_path / "w.db") as client:  # a restart: the desk's webhook is kept
        assert client.get("/api/results/webhook", headers=DIRECTOR).json()["url"] == receiver.url
        _play_a_match(client, "b")
        _until_sent(client, "b.1")
        # A new URL keeps the secret (left out); taking the URL away stops sending.
        kept = client.put("/api/results/webhook", headers=DIRECTOR, json={"url": receiver.url})
        assert kept.json()["secret_set"] is True
        off = client.put("/api/results/webhook", headers=DIRECTOR, json={"url": None})
        assert off.json() == {"url": None, "secret_set": True, "source": None,
                              "secret_source": "store"}
        _play_a_match(client, "c")
        until(lambda: client.get("/api/results", headers=DIRECTOR).json()["results"][2:], 10,
              0.02, "match c's result")
        outbox = client.get("/api/results/outbox", headers=DIRECTOR).json()
        assert outbox["webhook"] is False
        assert [d["match"] for d in outbox["deliveries"]] == ["b.1", "a.1"]  # c not queued
        assert len(receiver.requests) == 2
        # Set again: the match that ended meanwhile is sent too (nothing is lost).
        client.put("/api/results/webhook", headers=DIRECTOR, json={"url": receiver.url})
        receiver.wait(3)
        assert receiver.requests[2]["headers"]["X-Shotclock-Delivery"].startswith("c.1:")


def test_the_environments_webhook_wins(tmp_path: Path, webhook_receiver: Receiver) -> None:
    receiver = webhook_receiver
    with _client(tmp_path / "e.db", results_webhook=receiver.url) as client:
        assert client.get("/api/results/webhook", headers=DIRECTOR).json() == {
            "url": receiver.url, "secret_set": False, "source": "environment",
            "secret_source": None}
        refused = client.put("/api/results/webhook", headers=DIRECTOR,
                             json={"url": "http://127.0.0.1:9/other"})
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "webhook_from_environment"
