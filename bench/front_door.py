"""What the layers every request passes cost (issue 35 points 4 and 7): the host check
(clock_service/service/hosts.py ``HostGuard``) and the headers
(clock_service/edges/api/headers.py ``SecurityHeaders``), over an app that does nothing,
in a loop on one core; then one whole in-process ``GET /api/tables/1`` and ``HEAD`` of the
real app (every middleware, the route, the JSON), for scale.

    .venv/bin/python bench/front_door.py [-n 200000]

Prints microseconds per request; asserts nothing (benchmarks are not tests). On a tree
before these layers existed it prints only the whole-app figure (the comparison).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def scope_of(host: bytes, *, path: str = "/api/tables/1", query: bytes = b"",
             extra: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:
    headers = [(b"host", host), (b"user-agent", b"Mozilla/5.0 (X11; Linux aarch64)"),
               (b"accept", b"*/*"), (b"accept-language", b"ru,en;q=0.8"),
               (b"accept-encoding", b"gzip, deflate"), (b"connection", b"keep-alive"),
               *(extra or [])]
    return {"type": "http", "method": "GET", "path": path, "query_string": query,
            "headers": headers, "client": ("192.168.1.20", 50000),
            "server": ("192.168.1.7", 8000), "scheme": "http", "root_path": ""}


async def _nothing(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"{}"})


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b""}


async def _send(message: Any) -> None:
    return None


async def per_request(app: Any, scope: dict[str, Any], n: int) -> float:
    """CPU microseconds per call of ``app`` (the best of five runs of ``n``)."""
    best = float("inf")
    for _ in range(5):
        started = time.process_time()  # CPU time: the machine is shared
        for _ in range(n):
            await app(dict(scope), _receive, _send)
        best = min(best, time.process_time() - started)
    return best / n * 1e6


async def layers(n: int) -> None:
    try:
        from clock_service.edges.api.headers import SecurityHeaders
        from clock_service.service.hosts import HostGuard, Hosts
    except ImportError:  # the tree before: its header layer alone
        from clock_service.edges.api.app import SecurityHeaders  # type: ignore[attr-defined]

        base = await per_request(_nothing, scope_of(b"192.168.1.7:8000"), n)
        old = await per_request(SecurityHeaders(_nothing), scope_of(b"192.168.1.7:8000"), n)
        print(f"no host check in this tree; its header layer: {old - base:.2f} us per request")
        return
    hosts = Hosts(listen=["0.0.0.0"], allowed=["clock.hall.example"])
    guard = HostGuard(_nothing, hosts=hosts)
    both = SecurityHeaders(guard)
    base = await per_request(_nothing, scope_of(b"192.168.1.7:8000"), n)
    print(f"the app that does nothing, alone: {base:.2f} us per request")
    cases = {
        "by address (the usual)": scope_of(b"192.168.1.7:8000"),
        "by name (pi.local)": scope_of(b"clock.hall.example"),
        "with Authorization": scope_of(b"192.168.1.7:8000",
                                       extra=[(b"authorization", b"Bearer abcdef")]),
        "page with ?table=3&kiosk=1": scope_of(b"192.168.1.7:8000", path="/display",
                                               query=b"table=3&kiosk=1"),
        "page with ?token=": scope_of(b"192.168.1.7:8000", path="/referee",
                                      query=b"table=3&token=abcdef"),
        "refused (evil.test)": scope_of(b"evil.test"),
    }
    print(f"{'request':32} {'host check':>11} {'+ headers':>10}   (us over the bare app)")
    for name, scope in cases.items():
        alone = await per_request(guard, scope, n) - base
        total = await per_request(both, scope, n) - base
        print(f"{name:32} {alone:11.2f} {total:10.2f}")


async def whole_app(n: int) -> None:
    from clock_service.edges.cli.main import table_app
    from clock_service.service.settings import Settings

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(db=str(Path(tmp) / "front.db"), display="none", read_rate=0)
        app = table_app(settings)
        async with app.router.lifespan_context(app):
            for method in ("GET", "HEAD"):
                scope = {**scope_of(b"127.0.0.1:8000"), "method": method, "client":
                         ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
                         "http_version": "1.1", "raw_path": b"/api/tables/1"}
                took = await per_request(app, scope, max(200, n // 100))
                print(f"the whole app, {method} /api/tables/1: {took:.0f} us per request")


def main() -> None:
    logging.disable(logging.WARNING)  # the refusals' log lines are not what is measured
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=200_000, help="requests per measurement")
    args = parser.parse_args()
    asyncio.run(layers(args.n))
    asyncio.run(whole_app(args.n))


if __name__ == "__main__":
    main()
