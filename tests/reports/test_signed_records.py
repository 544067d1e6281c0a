"""Issue 20, finding 8: the protocol's SHA-256 is not a signature. Against a real
``shotclock serve``: a match that ends is signed with the table's Ed25519 key (made at
the first start); its record and protocol say "signed by table 7's key, fingerprint ...";
the store edited by hand (a player renamed) shows as unverified; the printed page
allows nothing to be fetched. The hall's check: tests/mqtt/test_hall_hostile.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from clock_service.edges.reports.protocol import render_protocol
from clock_service.edges.reports.stats import MatchRecord
from harness.thread_server import ThreadServer
from tests.server import http
from tests.waiting import until

pytestmark = pytest.mark.e2e

TOKEN = "signing-token-0123456789"


def wait(check: Any, what: str, timeout: float = 20.0) -> Any:
    """tests.waiting.until, polling the service over HTTP every 50 ms."""
    return until(check, timeout, 0.05, what)


def record(server: ThreadServer, match_id: str) -> dict[str, Any]:
    status, body = http("GET", f"{server.url}/api/matches/{match_id}")
    assert status == 200, body
    return dict(body)


def protocol(server: ThreadServer, match_id: str) -> str:
    import urllib.request

    with urllib.request.urlopen(f"{server.url}/report?match={match_id}&lang=en",
                                timeout=20) as response:
        return str(response.read().decode())


def test_a_finished_match_is_signed_and_an_edited_store_is_not_verified(
        tmp_path: Path) -> None:
    db = tmp_path / "signed.db"
    server = ThreadServer(db, env={"SHOTCLOCK_REFEREE_TOKEN": TOKEN,
                                    "SHOTCLOCK_DEFAULT_TABLE": ""}).start()
    try:
        key = Path(f"{db}.key")
        assert key.exists() and key.stat().st_mode & 0o077 == 0
        fingerprint = server.get("/api/health")["components"]["signing"]["fingerprint"]
        status, body = server.post("/api/tables", {"id": "7", "players": ["Ivanov", "Petrov"],
                                                   "race_to": 1}, token=TOKEN)
        assert status == 201, body
        status, body = server.command("7", "new_frame", token=TOKEN, winner=0,
                                      reason="conceded")
        assert status == 200, body
        events = wait(lambda: [e for e in server.get("/api/tables/7/events?since=0")
                               if e["type"] == "match.signed"], "match.signed")
        signed = events[-1]["data"]
        assert signed["fingerprint"] == fingerprint and signed["algorithm"] == "ed25519"
        match_id = server.get("/api/matches?table=7")["matches"][0]["id"]
        verdict = record(server, match_id)["signature"]
        assert verdict["status"] == "verified", verdict
        page = protocol(server, match_id)
        assert f"Signed by table 7&#x27;s key, fingerprint {fingerprint}" in page, page[-800:]
        assert "default-src &#x27;none&#x27;" in page or "default-src 'none'" in page
    finally:
        server.stop()
    # Someone renames a player in the store by hand, and even fixes the digest's events:
    # the signature no longer matches what is there.
    with sqlite3.connect(db) as conn:
        changed = conn.execute("UPDATE events SET body = replace(body, 'Ivanov', 'Sidorov') "
                               "WHERE table_id = '7'").rowcount
        assert changed > 0
    server.start()
    try:
        verdict = record(server, match_id)["signature"]
        assert verdict["status"] == "unverified" and "differ" in verdict["reason"], verdict
        page = protocol(server, match_id)
        assert "UNVERIFIED record" in page and "Signed by" not in page
    finally:
        server.stop()
    # The signature event itself forged (another key): unverified too, with its fingerprint.
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE events SET body = replace(body, 'Sidorov', 'Ivanov') "
                     "WHERE table_id = '7'")
        conn.execute("UPDATE events SET body = json_set(body, '$.data.signature', ?) "
                     "WHERE table_id = '7' AND type = 'match.signed'", ("A" * 88,))
    server.start()
    try:
        assert record(server, match_id)["signature"]["status"] == "unverified"
    finally:
        server.stop()


def test_the_printed_protocol_page_allows_nothing_to_be_fetched() -> None:
    record = MatchRecord(table="7", number=1, players=["A", "B"], timer=True, race_to=1,
                         profile=None, first_breaker=0, event=None, referee=None,
                         started_at=0, start_seq=1, last_seq=1)
    html = render_protocol({"status": "over", "started_at": 0}, record, links=False,
                           inline_css="body{}")
    head = html.split("</head>")[0]
    assert ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'") in head
    assert "Not signed" in html
