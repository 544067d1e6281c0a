#!/usr/bin/env python3
"""An example receiver of the shot clock's results webhook (docs/results.md). Python's
standard library only: copy it into your tournament software, or run it as it is:

    SHOTCLOCK_RESULTS_SECRET=... python3 webhook_receiver.py --port 9000 --out results/

and point the service at it (``SHOTCLOCK_RESULTS_WEBHOOK=http://HOST:9000/``, the same
secret). Each result it takes is written to ``OUT/<delivery id>.json``.

What it checks, in this order (each refusal answers its status and a line saying why: the
service keeps that line in its outbox, ``GET /api/results/outbox``):

1. The signature: ``X-Shotclock-Signature: t=<unix s>,v1=<hex>``, where ``v1`` is the
   HMAC-SHA256, keyed with the secret, of ``<t>.<X-Shotclock-Delivery>.<raw body>``,
   compared in constant time. Missing, malformed or wrong: 401. (Checked first, so nothing
   else is told to whoever does not hold the secret.)
2. The time: ``t`` more than 5 minutes from this machine's clock: 400. The service signs
   each attempt afresh, so only a captured copy grows old. (Keep both clocks right: a Pi
   at a venue without internet needs its time set.)
3. Replays: the same delivery with the same ``t`` seen in the last 5 minutes: 409.
   Nothing older needs remembering for this: step 2 refuses it.
4. Repeats: a delivery id already taken, signed with a new ``t``, is the service sending
   it again because it did not hear the 2xx (it stopped in between): answered 200 and not
   applied a second time. This record is kept for good (here: the file written in step 5).
5. Taken: the result is applied (here: written to OUT/<delivery id>.json) and 200.

The delivery id is ``<match id>:<16 hex>`` (the body's SHA-256): the same for every
attempt of one result, another for another result even when a store made afresh reuses a
match id.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TOLERANCE_S = 300
MAX_BODY = 1 << 20
DELIVERY = re.compile(r"[A-Za-z0-9_~-]{1,48}\.[0-9]{1,9}:[0-9a-f]{16}")


class Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def verify(secret: bytes, headers: Mapping[str, str], body: bytes, now: float,
           tolerance_s: float = TOLERANCE_S) -> tuple[str, int]:
    """(delivery id, t) of a delivery signed with ``secret`` within ``tolerance_s`` of
    ``now``; Refused otherwise (steps 1 and 2). Header names in any case."""
    headers = {name.lower(): value for name, value in headers.items()}
    delivery = headers.get("x-shotclock-delivery") or ""
    fields: dict[str, str] = {}
    for part in (headers.get("x-shotclock-signature") or "").split(","):
        name, _, value = part.strip().partition("=")
        fields.setdefault(name, value)
    t, v1 = fields.get("t", ""), fields.get("v1", "")
    if not DELIVERY.fullmatch(delivery) or not t.isdigit() or len(t) > 12 or not v1:
        raise Refused(401, "not a signed delivery (X-Shotclock-Delivery and "
                           "X-Shotclock-Signature: t=...,v1=...)")
    signed = f"{t}.{delivery}.".encode() + body
    expected = hmac.new(secret, signed, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, v1):
        raise Refused(401, "the signature does not match (another secret, or the body, the "
                           "delivery id or the time was changed)")
    off = now - int(t)
    if abs(off) > tolerance_s:
        raise Refused(400, f"signed {off:+.0f} s from this receiver's clock (at most "
                           f"{tolerance_s:.0f} s): too old to be taken, or a clock is wrong")
    return delivery, int(t)


class Receiver:
    """Steps 1-5, the results taken in ``out`` (one JSON file each); thread-safe."""

    def __init__(self, secret: bytes, out: Path, now: Callable[[], float] = time.time,
                 tolerance_s: float = TOLERANCE_S) -> None:
        self.secret = secret
        self.out = out
        self.now = now
        self.tolerance_s = tolerance_s
        self.recent: set[tuple[str, int]] = set()  # (delivery, t) taken or repeated
        self.lock = threading.Lock()
        out.mkdir(parents=True, exist_ok=True)

    def take(self, headers: Mapping[str, str], body: bytes) -> tuple[int, dict[str, object]]:
        """The HTTP status and JSON answer for one POST."""
        now = self.now()
        try:
            delivery, t = verify(self.secret, headers, body, now, self.tolerance_s)
        except Refused as refused:
            return refused.status, {"ok": False, "error": refused.reason}
        with self.lock:
            # Kept while its t is within the tolerance: after that, verify refuses it.
            self.recent = {(d, s) for d, s in self.recent if now - s <= self.tolerance_s}
            if (delivery, t) in self.recent:
                return 409, {"ok": False, "error": f"delivery {delivery} signed at {t} was "
                                                   "already received: a replay"}
            self.recent.add((delivery, t))
            path = self.out / (delivery.replace(":", "_") + ".json")
            try:  # O_EXCL: taken once, whichever thread comes first
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return 200, {"ok": True, "delivery": delivery, "duplicate": True}
            with os.fdopen(fd, "wb") as file:
                file.write(body)
        return 200, {"ok": True, "delivery": delivery}


def serve(receiver: Receiver, host: str, port: int) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                status, answer = 413, {"ok": False, "error": f"a body of 1..{MAX_BODY} bytes"}
            else:
                status, answer = receiver.take(dict(self.headers.items()),
                                              self.rfile.read(length))
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            print(f"{status} {self.headers.get('X-Shotclock-Delivery')!r}: "
                  f"{answer.get('error') or ('again' if answer.get('duplicate') else 'taken')}",
                  flush=True)

        def log_message(self, *args: object) -> None:
            pass

    return ThreadingHTTPServer((host, port), Handler)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000, help="0: any free port")
    parser.add_argument("--out", default="results", help="where each result is written")
    args = parser.parse_args(argv)
    secret = os.environ.get("SHOTCLOCK_RESULTS_SECRET")
    if not secret:
        print("set SHOTCLOCK_RESULTS_SECRET to the service's secret", file=sys.stderr)
        return 2
    server = serve(Receiver(secret.encode(), Path(args.out)), args.host, args.port)
    host, port = str(server.server_address[0]), int(server.server_address[1])
    print(f"listening on http://{host}:{port}/", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
