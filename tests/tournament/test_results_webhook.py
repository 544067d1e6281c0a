"""Results out on a real service: the result as JSON and CSV, and the webhook delivered
exactly once (one 2xx) to a real local HTTP receiver that answers 500 twice, across a
SIGKILL of the service and a restart after it; a 302 is a failed attempt, never followed
(issue 35 point 6); the example receiver (integrations/webhook_receiver.py, run as its
own process) takes the service's real deliveries and refuses forged, old and replayed
ones."""

from __future__ import annotations

import base64
import csv
import hashlib
import hmac
import importlib.util
import io
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.server import ROOT, ServerProcess, free_port, http
from tests.waiting import until

SECRET = "s3cret"
EXAMPLE_PATH = ROOT / "integrations" / "webhook_receiver.py"
_spec = importlib.util.spec_from_file_location("webhook_receiver", EXAMPLE_PATH)
assert _spec is not None and _spec.loader is not None
EXAMPLE = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(EXAMPLE)

Answer = Callable[["Receiver"], tuple[int, dict[str, str]]]


def fail_first(count: int) -> Answer:
    """500 for the first ``count`` requests, then 200."""
    return lambda receiver: (500 if len(receiver.requests) <= count else 200, {})


class Receiver:
    """A webhook receiver on a free loopback port; ``answer`` decides each status (and
    headers). Every request is recorded, whatever its method."""

    def __init__(self, fail: int = 0, answer: Answer | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.answer = answer or fail_first(fail)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                receiver.requests.append({"method": self.command, "path": self.path,
                                          "headers": dict(self.headers), "body": body,
                                          "at": time.monotonic(), "wall": time.time()})
                status, headers = receiver.answer(receiver)
                receiver.requests[-1]["status"] = status
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", "0")
                self.end_headers()

            do_GET = do_PUT = do_HEAD = do_POST  # noqa: N815 (a followed redirect)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def wait(self, count: int, timeout: float = 30.0) -> None:
        until(lambda: len(self.requests) >= count, timeout, 0.02, f"{count} requests")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver(fail=2)
    try:
        yield r
    finally:
        r.close()


def test_webhook_delivered_exactly_once_across_a_restart_and_two_500s(
        tmp_path: Path, receiver: Receiver) -> None:
    env = {"SHOTCLOCK_RESULTS_WEBHOOK": receiver.url, "SHOTCLOCK_RESULTS_SECRET": SECRET,
           "SHOTCLOCK_RESULTS_RETRY_S": "1.0"}
    server = ServerProcess(tmp_path / "r.db", env=env).start()
    try:
        status, _ = server.post("/api/tables", {"id": "w", "players": ["Ivanov", "Petrov"],
                                                "race_to": 1, "event": "City cup"})
        assert status == 201
        assert server.command("w", "start")[0] == 200
        assert server.command("w", "shot")[0] == 200
        status, state = server.command("w", "new_frame", winner=0, reason="walkover")
        assert status == 200 and state["match"]["over"]
        receiver.wait(1)  # the first attempt: 500
        server.kill()  # a crash with the result still in the outbox
        assert len(receiver.requests) == 1
        server.start()
        receiver.wait(3)  # 500 again, then 200
        assert [r["status"] for r in receiver.requests] == [500, 500, 200]

        bodies = {r["body"] for r in receiver.requests}
        assert len(bodies) == 1  # the same result every time, made once
        body = bodies.pop()
        delivery = "w.1:" + hashlib.sha256(body).hexdigest()[:16]
        for request in receiver.requests:
            assert _signed(request, body) == delivery  # each attempt signed afresh
        result = json.loads(body)
        assert (result["format"], result["match"], result["score"], result["winner_name"],
                result["event"], len(result["frames"])) == (
            "shotclock.result/1", "w.1", [1, 0], "Ivanov", "City cup", 1)
        assert len(result["digest"]) == 64 and result["stats"][0]["name"] == "Ivanov"
        assert result["duration_ms"] >= 0 and result["by_time_limit"] is False

        # The receiver counts a request before it answers; the service records the 2xx
        # only when the answer is back, so wait for that record before reading it.
        until(lambda: server.get("/api/results/outbox")["deliveries"][0]["sent_at"]
              is not None, 10.0, 0.02, "the 2xx recorded in the outbox")
        outbox = server.get("/api/results/outbox")
        attempts = outbox["deliveries"][0]["attempts"]
        # 3: the first 500 was recorded before the kill; 2: the kill came first, and the
        # service, not knowing it had tried, sent again at its restart (a receiver tells
        # the same delivery by its X-Shotclock-Delivery).
        assert attempts in (2, 3), attempts
        # Each attempt numbered as the service counts them: from the restart on one behind
        # the receiver's count when the kill came before the first was recorded (it was
        # asserted "the receiver's count or one more", and failed so on a loaded machine).
        assert [_header(r, "x-shotclock-attempt") for r in receiver.requests] == (
            ["1", "2", "3"] if attempts == 3 else ["1", "1", "2"])
        # Backoff: a retry after a recorded failure waits at least the first step (1 s,
        # +-10 %), across a restart too; the second failure is always recorded.
        gaps = [b["at"] - a["at"] for a, b in zip(receiver.requests, receiver.requests[1:],
                                                 strict=False)]
        assert gaps[1] >= 0.85, gaps
        if attempts == 3:
            assert gaps[0] >= 0.85, gaps
        assert server.get("/api/results?event=City%20cup")["results"] == [result]
        assert server.get("/api/results?event=Other")["results"] == []
        with urllib.request.urlopen(server.url + "/api/results.csv", timeout=10) as response:
            rows = list(csv.DictReader(io.StringIO(response.read().decode())))
        assert [(r["match"], r["player1"], r["score1"], r["winner"], r["digest"])
                for r in rows] == [("w.1", "Ivanov", "1", "Ivanov", result["digest"])]
        assert http("GET", server.url + "/api/results/w.9")[0] == 404

        # A restart after the 2xx sends nothing again. Proof that it would have by now: a
        # match that ends after the restart is delivered, and the outbox sends in order.
        server.stop()
        server.start()
        status, _ = server.post("/api/tables", {"id": "m", "players": ["Orlov", "Belov"],
                                                "race_to": 1, "event": "Later"})
        assert status == 201
        assert server.command("m", "start")[0] == 200
        status, state = server.command("m", "new_frame", winner=1, reason="walkover")
        assert status == 200 and state["match"]["over"]
        receiver.wait(4)
        deliveries = [_header(r, "x-shotclock-delivery").split(":")[0]
                      for r in receiver.requests]
        assert deliveries == ["w.1", "w.1", "w.1", "m.1"], deliveries
    finally:
        server.stop()


def _header(request: dict[str, Any], name: str) -> str:
    return {k.lower(): v for k, v in request["headers"].items()}[name]


def _signed(request: dict[str, Any], body: bytes) -> str:
    """The delivery id of a request the example receiver's ``verify`` takes at the time it
    came (its t within a second or two of then)."""
    delivery, t = EXAMPLE.verify(SECRET.encode(), request["headers"], body, request["wall"])
    assert -1 <= request["wall"] - t <= 2, (t, request["wall"])
    return delivery


def _sent(server: ServerProcess) -> bool:
    """Whether the outbox's newest delivery is sent (its 2xx recorded)."""
    rows = server.get("/api/results/outbox")["deliveries"]
    return bool(rows) and rows[0]["sent_at"] is not None


def _finish_a_match(server: ServerProcess, table: str) -> None:
    status, _ = server.post("/api/tables", {"id": table, "players": ["Ivanov", "Petrov"],
                                            "race_to": 1, "event": "City cup"})
    assert status == 201
    assert server.command(table, "start")[0] == 200
    status, state = server.command(table, "new_frame", winner=0, reason="walkover")
    assert status == 200 and state["match"]["over"]


SECRETS_IN_URLS = ("k3y-s3cret", "l0c-key")


def test_a_redirect_is_a_failed_attempt_retried_and_never_followed(tmp_path: Path) -> None:
    """Before issue 35 urllib followed a 302: a GET without the body, the signature headers
    sent to the Location's host, and that host's 200 taken for the delivery."""
    elsewhere = Receiver()  # where the 302 points: must never be asked anything
    location = f"http://127.0.0.1:{elsewhere.port}/hook?key=l0c-key"
    hook = Receiver(answer=lambda _: (302, {"Location": location}))
    url = hook.url + "?key=k3y-s3cret"
    server = ServerProcess(tmp_path / "r.db", env={
        "SHOTCLOCK_RESULTS_WEBHOOK": url, "SHOTCLOCK_RESULTS_SECRET": SECRET,
        "SHOTCLOCK_RESULTS_RETRY_S": "0.3"}, log_level="info").start()
    try:
        _finish_a_match(server, "r")

        def two_302s() -> bool:  # two attempts, each answered 302, and nothing elsewhere
            assert elsewhere.requests == [], [
                (r["method"], r["path"], sorted(r["headers"])) for r in elsewhere.requests]
            return len(hook.requests) >= 2

        until(two_302s, 30.0, 0.02, "two attempts answered 302")

        def two_attempts() -> dict[str, Any] | None:
            outbox = server.get("/api/results/outbox")
            rows = outbox["deliveries"]
            return outbox if rows and rows[0]["attempts"] >= 2 else None

        outbox = until(two_attempts, 10.0, 0.1, "two failed attempts in the outbox")
        row = outbox["deliveries"][0]
        assert row["sent_at"] is None and row["next_at"] is not None  # to be tried again
        assert row["last_error"] == (
            f"HTTP 302 Found, Location: http://127.0.0.1:{elsewhere.port}/hook?key=*** "
            "(redirects are not followed)")
        faults = [f for f in server.get("/api/health")["faults"]
                  if f["code"] == "results_webhook_failing"]
        assert faults and "HTTP 302 Found" in faults[0]["message"], faults
        # Backoff: the second attempt waited the first step (0.3 s, +-10 %).
        assert hook.requests[1]["at"] - hook.requests[0]["at"] >= 0.25
        # One delivery, each attempt signed afresh, on the hook's own path.
        body = hook.requests[0]["body"]
        assert {r["method"] for r in hook.requests} == {"POST"}
        assert {_signed(r, body) for r in hook.requests} == {row["delivery"]}
        assert elsewhere.requests == []

        # The receiver takes it at last: delivered, once, by the hook.
        hook.answer = lambda _: (200, {})
        until(lambda: _sent(server), 15.0, 0.1, "the delivery taken")
        assert elsewhere.requests == [] and hook.requests[-1]["body"] == body
        assert [f for f in server.get("/api/health")["faults"]
                if f["code"] == "results_webhook_failing"] == []
    finally:
        server.stop()
        hook.close()
        elsewhere.close()
    # The URLs' secrets were never shown: not in the outbox, the health, nor the log.
    log = server.log.read_text()
    assert f"POSTed to http://127.0.0.1:{hook.port}/hook?key=***" in log
    for secret in SECRETS_IN_URLS:
        assert secret not in log and secret not in json.dumps(outbox), secret


def test_a_webhook_url_with_a_user_and_password_logs_in_and_never_shows_them(
        tmp_path: Path) -> None:
    """``https://user:password@host/`` as curl takes it (Basic); urllib alone took the user
    info for a part of the host name and never reached the receiver."""
    hook = Receiver(fail=1)
    url = hook.url.replace("http://", "http://ann:pa55word@")
    server = ServerProcess(tmp_path / "r.db", env={
        "SHOTCLOCK_RESULTS_WEBHOOK": url, "SHOTCLOCK_RESULTS_SECRET": SECRET,
        "SHOTCLOCK_RESULTS_RETRY_S": "0.3"}, log_level="info").start()
    try:
        _finish_a_match(server, "u")
        until(lambda: _sent(server), 15.0, 0.1, "the delivery taken")
        outbox = server.get("/api/results/outbox")
        health = server.get("/api/health")
    finally:
        server.stop()
        hook.close()
    assert [r["status"] for r in hook.requests] == [500, 200]
    assert {_header(r, "authorization") for r in hook.requests} == {
        "Basic " + base64.b64encode(b"ann:pa55word").decode()}
    assert {r["path"] for r in hook.requests} == {"/hook"}
    log = server.log.read_text()
    assert f"POSTed to http://ann:***@127.0.0.1:{hook.port}/hook" in log
    for shown in (log, json.dumps(outbox), json.dumps(health)):
        assert "pa55word" not in shown


class Relay:
    """Between the service and the example receiver, recording what passes (as anyone on
    the network could): each POST forwarded as it came, its answer sent back."""

    def __init__(self, target: str) -> None:
        self.passed: list[dict[str, Any]] = []
        relay = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.title(): v for k, v in self.headers.items()
                           if k.lower() not in ("host", "content-length", "connection")}
                status, answer = post(target, headers, body)
                relay.passed.append({"headers": headers, "body": body, "status": status})
                self.send_response(status)
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/results"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def post(url: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _sign(headers: dict[str, str], body: bytes, t: int, delivery: str | None = None
          ) -> dict[str, str]:
    """``headers`` signed again as the service would at ``t`` (the test knows the secret)."""
    delivery = delivery or headers["X-Shotclock-Delivery"]
    mac = hmac.new(SECRET.encode(), f"{t}.{delivery}.".encode() + body, hashlib.sha256)
    return headers | {"X-Shotclock-Delivery": delivery,
                      "X-Shotclock-Signature": f"t={t},v1={mac.hexdigest()}"}


def test_the_example_receiver_takes_real_deliveries_and_refuses_forged_old_and_replayed(
        tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    example = subprocess.Popen(
        [sys.executable, str(EXAMPLE_PATH), "--port", "0", "--out", str(taken)],
        env=os.environ | {"SHOTCLOCK_RESULTS_SECRET": SECRET}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    relay = None
    server = None
    try:
        assert example.stdout is not None
        first = example.stdout.readline()
        assert first.startswith("listening on http://127.0.0.1:"), first
        target = first.split()[-1]
        relay = Relay(target)
        server = ServerProcess(tmp_path / "r.db", env={
            "SHOTCLOCK_RESULTS_WEBHOOK": relay.url, "SHOTCLOCK_RESULTS_SECRET": SECRET,
            "SHOTCLOCK_RESULTS_RETRY_S": "0.5"}).start()
        _finish_a_match(server, "x")
        until(lambda: _sent(server), 15.0, 0.1, "the example receiver's 200 in the outbox")
        assert [p["status"] for p in relay.passed] == [200], relay.passed  # the first attempt
        headers, body = relay.passed[0]["headers"], relay.passed[0]["body"]
        delivery = server.get("/api/results/outbox")["deliveries"][0]["delivery"]
        assert headers["X-Shotclock-Delivery"] == delivery
        assert [p.name for p in taken.iterdir()] == [delivery.replace(":", "_") + ".json"]
        assert (taken / (delivery.replace(":", "_") + ".json")).read_bytes() == body

        def refused(status: int, said: str, headers: dict[str, str], body: bytes) -> None:
            got, answer = post(target, headers, body)
            assert (got, said in answer.decode()) == (status, True), (got, answer)

        now = int(time.time())
        # Replayed as captured: refused.
        refused(409, "a replay", headers, body)
        # Tampered: another score under the same signature.
        assert b'"score":[1,0]' in body
        refused(401, "does not match", headers, body.replace(b'"score":[1,0]', b'"score":[0,1]'))
        # Another delivery id under the same signature (another match's result, say).
        refused(401, "does not match", headers | {"X-Shotclock-Delivery": "x.2:" + "0" * 16},
                body)
        # Unsigned, or signed with another secret.
        refused(401, "not a signed delivery", {k: v for k, v in headers.items()
                                               if k != "X-Shotclock-Signature"}, body)
        # Old: signed rightly, 6 minutes ago (what a captured copy becomes).
        refused(400, "too old", _sign(headers, body, now - 360), body)
        # Sent again by the service (it stopped before it heard the 200), signed at another
        # second: answered 200, not taken twice.
        signed_at = int(headers["X-Shotclock-Signature"].split(",")[0].removeprefix("t="))
        got, answer = post(target, _sign(headers, body, signed_at + 1), body)
        assert got == 200 and json.loads(answer) == {"ok": True, "delivery": delivery,
                                                     "duplicate": True}
        assert len(list(taken.iterdir())) == 1
        assert (taken / (delivery.replace(":", "_") + ".json")).read_bytes() == body
    finally:
        if server is not None:
            server.stop()
        if relay is not None:
            relay.close()
        example.terminate()
        said = example.communicate(timeout=10)[0]
    assert f"200 '{delivery}': taken" in said and f"409 '{delivery}'" in said, said


@pytest.mark.e2e
@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://results.example.org/x"])
def test_serve_refuses_a_webhook_that_is_not_http(tmp_path: Path, url: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "clock_service", "serve", "--db", str(tmp_path / "r.db"),
         "--port", str(free_port())], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env=os.environ | {"SHOTCLOCK_RESULTS_WEBHOOK": url, "SHOTCLOCK_DISPLAY": "none"})
    assert proc.returncode != 0
    assert "SHOTCLOCK_RESULTS_WEBHOOK must be an http:// or https:// URL" in proc.stderr, \
        proc.stderr[-2000:]
