"""Issue 35, findings 3, 6 and 9 from outside (build points 4 and 7): a real ``shotclock
serve`` and real HTTP and WebSocket clients. Each test fails on the code before:

- DNS rebinding: ``Host: evil.test`` with ``Origin: http://evil.test`` created a table,
  ran a command and opened a referee WebSocket (101) on the shipped default (loopback, no
  token); now 421 ``host_not_allowed`` before any handler;
- one ``GET /api/health?token=x`` with ``--access-log`` wrote 93 log lines (uvicorn's
  formatter failed on the redacted record), and ``?%74oken=`` was logged in clear;
- ``/api/health`` showed the signing key's path;
- ``HEAD`` was 405 on every page and most routes;
- no ``Cache-Control: no-store`` on the answers that carry tokens, no HSTS over TLS.

The pure parts (names, the Origin table, the redaction): tests/test_hosts.py.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Origin

from tests.server import ServerProcess, free_port
from tests.waiting import until

pytestmark = pytest.mark.e2e

PROXY = "127.0.0.2"  # SHOTCLOCK_TRUSTED_PROXIES: a reverse proxy on this machine
TOKEN = "hosts-director-t0ken-5b1c"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The shipped default (loopback, no token), its access log on, one more name and a
    trusted proxy."""
    server = ServerProcess(tmp_path_factory.mktemp("hosts") / "hosts.db", log_level="info",
                           args=["--access-log"],
                           env={"SHOTCLOCK_ALLOWED_HOSTS": "clock.hall.example",
                                "SHOTCLOCK_TRUSTED_PROXIES": PROXY,
                                "SHOTCLOCK_COMMAND_RATE": "0", "SHOTCLOCK_READ_RATE": "0",
                                "SHOTCLOCK_HANDSHAKE_RATE": "0"}).start()
    try:
        yield server
    finally:
        server.stop()


def _client(source: str = "127.0.0.1") -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=10)


# -- finding 3: DNS rebinding ------------------------------------------------------------------

def test_a_rebinding_page_is_refused_before_any_handler(served: ServerProcess) -> None:
    """What a page on evil.test, rebound to 127.0.0.1, sends from a browser on the Pi."""
    evil = {"host": f"evil.test:{served.port}", "origin": f"http://evil.test:{served.port}"}
    before = served.get("/api/tables/1")["seq"]
    with _client() as http:
        created = http.post(f"{served.url}/api/tables", headers=evil,
                            json={"id": "rebound", "players": ["A", "B"]})
        command = http.post(f"{served.url}/api/tables/1/commands", headers=evil,
                            json={"command": "turn"})
        page = http.get(f"{served.url}/referee?table=1", headers={"host": "evil.test"})
    for answer in (created, command, page):
        assert answer.status_code == 421, answer.text
        assert answer.json()["error"]["code"] == "host_not_allowed"
        assert "evil.test" in answer.json()["error"]["message"]
    assert served.get("/api/tables/1")["seq"] == before  # the command did nothing
    with _client() as http:
        assert http.get(f"{served.url}/api/tables/rebound").status_code == 404
    log = served.log.read_text()
    assert "refused a request for 'evil.test" in log and "SHOTCLOCK_ALLOWED_HOSTS" in log


def test_a_rebinding_page_gets_no_referee_socket(served: ServerProcess) -> None:
    """The browser connects to 127.0.0.1 naming evil.test: refused before it is accepted
    (the code before answered 101, and the socket took commands)."""
    with pytest.raises(InvalidStatus) as refused:
        connect(f"ws://evil.test:{served.port}/ws/tables/1",
                sock=socket.create_connection(("127.0.0.1", served.port), timeout=10),
                origin=Origin(f"http://evil.test:{served.port}"), open_timeout=10)
    assert refused.value.response.status_code == 421
    assert b"host_not_allowed" in refused.value.response.body


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "clock.hall.example"])
def test_its_own_names_work(served: ServerProcess, name: str) -> None:
    """By address (every test client, Playwright), localhost, and a name the setting
    adds: pages, commands and the referee socket of the service's own pages."""
    own = f"http://{name}:{served.port}"
    with _client() as http:
        assert http.get(f"{served.url}/referee?table=1",
                        headers={"host": f"{name}:{served.port}"}).status_code == 200
        turned = http.post(f"{served.url}/api/tables/1/commands", json={"command": "turn"},
                           headers={"host": f"{name}:{served.port}", "origin": own})
        assert turned.status_code == 200, turned.text
    with connect(f"ws://{name}:{served.port}/ws/tables/1", origin=Origin(own),
                 sock=socket.create_connection(("127.0.0.1", served.port), timeout=10),
                 open_timeout=10) as ws:
        assert json.loads(ws.recv(timeout=10))["referee"] is True


def test_a_page_of_another_port_on_our_name_is_another_site(served: ServerProcess) -> None:
    with _client() as http:
        answer = http.post(f"{served.url}/api/tables/1/commands", json={"command": "turn"},
                           headers={"origin": "http://localhost:3000"})
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "origin_not_allowed"


@pytest.mark.parametrize(("source", "forwarded", "status"), [
    ("127.0.0.1", "evil.test", 200),  # not a proxy: its X-Forwarded-Host is ignored
    (PROXY, "evil.test", 421),
    (PROXY, "clock.hall.example", 200),
    (PROXY, "clock.hall.example, evil.test", 421),  # a proxy that appends to a client's
])
def test_a_trusted_proxy_passes_the_browser_s_name(served: ServerProcess, source: str,
                                                    forwarded: str, status: int) -> None:
    with _client(source) as http:
        answer = http.get(f"{served.url}/api/tables/1",
                          headers={"x-forwarded-host": forwarded})
    assert answer.status_code == status, answer.text


# -- finding 6: the log, health ----------------------------------------------------------------

def test_a_token_in_a_query_is_one_redacted_log_line(served: ServerProcess) -> None:
    mark = served.log.stat().st_size
    with _client() as http:
        for query in ("token=x-first", "%74oken=x-second&TOKEN=x-third"):
            assert http.get(f"{served.url}/api/health?{query}").status_code == 200
        assert http.get(f"{served.url}/api/tables/1").status_code == 200  # logged after them
    until(lambda: "GET /api/tables/1 " in served.log.read_bytes()[mark:].decode(), 10,
          what="the access log's line of the last request")
    lines = served.log.read_bytes()[mark:].decode().splitlines()
    assert len(lines) == 3, f"{len(lines)} log lines for 3 requests: " + "\n".join(lines[:20])
    shown = [line.split(" - ", 1)[1] for line in lines]
    assert shown == ['"GET /api/health?token=*** HTTP/1.1" 200 OK',
                     '"GET /api/health?%74oken=***&TOKEN=*** HTTP/1.1" 200 OK',
                     '"GET /api/tables/1 HTTP/1.1" 200 OK']


def test_health_says_signing_is_on_not_where_the_key_lives(served: ServerProcess) -> None:
    with _client() as http:
        health = http.get(f"{served.url}/api/health")
    signing = health.json()["components"]["signing"]
    assert signing["on"] is True and len(signing["fingerprint"]) > 20
    assert ".key" not in health.text and str(served.db.parent) not in health.text


# -- finding 9: HEAD --------------------------------------------------------------------------

def _get_paths(served: ServerProcess) -> list[str]:
    """Every GET route of the app (its OpenAPI document) and every page, path parameters
    filled with table 1's, and one static file."""
    from web_ui import PAGES

    fill = {"{table_id}": "1", "{id}": "1", "{match_id}": "1.1", "{name}": "standard"}
    paths = list(PAGES) + ["/static/js/i18n.js", "/openapi.json", "/docs"]
    for path, operations in httpx.get(f"{served.url}/openapi.json").json()["paths"].items():
        if "get" in operations:
            for placeholder, value in fill.items():
                path = path.replace(placeholder, value)
            if "{" not in path:
                paths.append(path)
    return paths


def test_head_works_wherever_get_does(served: ServerProcess) -> None:
    paths = _get_paths(served)
    assert len(paths) > 25, paths
    with _client() as http:
        for path in paths:
            got = http.get(served.url + path)
            head = http.head(served.url + path)
            assert head.status_code == got.status_code, (path, head.status_code, head.text)
            assert head.content == b"", path
            assert head.headers.get("content-type") == got.headers.get("content-type"), path
            assert ("content-length" in head.headers) == ("content-length" in got.headers)
        page = http.head(f"{served.url}/referee")
        assert int(page.headers["content-length"]) == len(http.get(f"{served.url}/referee")
                                                          .content)
        # Other methods a path does not take: still 405 naming every one it does.
        put = http.put(f"{served.url}/api/tables")
        assert put.status_code == 405 and put.headers["allow"] == "GET, HEAD, POST"
        assert http.delete(f"{served.url}/referee").headers["allow"] == "GET, HEAD"


# -- finding 6: caching and HSTS ---------------------------------------------------------------

@contextlib.contextmanager
def _served_over_tls(tmp: Path) -> Iterator[tuple[str, Path]]:
    """A table service over HTTPS (the hall CA of `shotclock tls init`), in this process:
    the headers are what is tested, not a process boundary."""
    import uvicorn

    from clock_service.edges.api.server import uvicorn_config
    from clock_service.edges.cli.main import table_app
    from clock_service.service.settings import Settings
    from clock_service.service.tls import init, parse_device

    init(tmp / "tls", [parse_device("table-1=127.0.0.1,localhost")])
    settings = Settings(db=str(tmp / "tls.db"), port=free_port(), display="none",
                        referee_token=TOKEN, tls_cert=str(tmp / "tls" / "table-1.crt"),
                        tls_key=str(tmp / "tls" / "table-1.key"), read_rate=0,
                        command_rate=0, request_timeout_s=60)
    server = uvicorn.Server(uvicorn_config(table_app(settings), settings, log_level="warning",
                                           access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        until(lambda: server.started or not thread.is_alive(), 60, what="uvicorn started")
        assert server.started
        yield f"https://127.0.0.1:{settings.port}", tmp / "tls" / "ca.crt"
    finally:
        server.should_exit = True
        thread.join(30)


def test_token_answers_are_not_stored_and_tls_answers_say_hsts(tmp_path: Path) -> None:
    bearer = {"authorization": f"Bearer {TOKEN}"}
    with _served_over_tls(tmp_path) as (url, ca), httpx.Client(
            verify=ssl.create_default_context(cafile=str(ca)), timeout=10) as http:
        issued = http.post(f"{url}/api/tokens", headers=bearer,
                           json={"role": "referee", "tables": ["1"], "name": "table 1"})
        assert issued.status_code == 201 and issued.json()["token"]
        referee = {"authorization": f"Bearer {issued.json()['token']}"}
        private = [issued, http.get(f"{url}/api/tokens", headers=bearer),
                   http.get(f"{url}/api/tokens/me", headers=referee),
                   http.get(f"{url}/api/tokens/me"),  # 401: under /api/tokens all the same
                   http.get(f"{url}/api/tables/1", headers=referee),
                   http.post(f"{url}/api/tables/1/commands", headers=referee,
                             json={"command": "turn"}),
                   http.get(f"{url}/referee?table=1&token={TOKEN}"),
                   http.get(f"{url}/referee?table=1&%74oken={TOKEN}")]
        for answer in private:
            assert answer.headers.get_list("cache-control") == ["no-store"], (
                answer.request.url, answer.headers)
        public = [http.get(f"{url}/referee?table=1"), http.get(f"{url}/api/tables/1"),
                  http.get(f"{url}/api/health")]
        assert public[0].headers["cache-control"] == "no-cache"  # a page: revalidated
        assert "no-store" not in public[1].headers.get("cache-control", "")
        for answer in private + public:
            assert answer.headers["strict-transport-security"] == "max-age=604800"


def test_no_hsts_over_plain_http_unless_a_trusted_proxy_served_it_over_tls(
        served: ServerProcess) -> None:
    tls = {"x-forwarded-proto": "https"}
    with _client() as http:
        assert "strict-transport-security" not in http.get(f"{served.url}/").headers
        # a client's claim is not believed
        assert "strict-transport-security" not in http.get(f"{served.url}/",
                                                           headers=tls).headers
    with _client(PROXY) as http:
        assert http.get(f"{served.url}/", headers=tls).headers[
            "strict-transport-security"] == "max-age=604800"
        assert "strict-transport-security" not in http.get(f"{served.url}/").headers


def test_shotclock_config_redacts_every_url_and_lists_the_hosts(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from tests.server import ROOT

    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "SHOTCLOCK_RESULTS_WEBHOOK": "https://fed:hunter2@hooks.example/r?key=k3y&x=1",
           "SHOTCLOCK_SERVER": "ws://hall:8000/?token=t0ken-in-url",
           "SHOTCLOCK_CAMERA": "rtsp://admin:cam-pw@10.0.0.5/stream",
           "SHOTCLOCK_ALLOWED_HOSTS": "clock.hall.example"}
    out = subprocess.run([sys.executable, "-m", "clock_service", "config"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    lines = {line.split()[0]: line.split(maxsplit=2)[1:] for line in out.splitlines()
             if line.startswith("SHOTCLOCK_")}
    assert lines["SHOTCLOCK_RESULTS_WEBHOOK"] == [
        "env", "https://fed:***@hooks.example/r?key=***&x=1"]
    assert lines["SHOTCLOCK_SERVER"] == ["env", "ws://hall:8000/?token=***"]
    assert lines["SHOTCLOCK_CAMERA"] == ["env", "rtsp://admin:***@10.0.0.5/stream"]
    assert lines["SHOTCLOCK_ALLOWED_HOSTS"] == ["env", "clock.hall.example"]
    for secret in ("hunter2", "k3y", "t0ken-in-url", "cam-pw"):
        assert secret not in out



def test_a_wrong_allowed_host_stops_the_start(tmp_path: Path) -> None:
    """A typo would start a service that refuses its own pages: exit 78 naming it."""
    import os
    import subprocess
    import sys

    from tests.server import ROOT

    done = subprocess.run(
        [sys.executable, "-m", "clock_service", "serve", "--port", str(free_port()),
         "--db", str(tmp_path / "typo.db")], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "SHOTCLOCK_DISPLAY": "none", "SHOTCLOCK_REFEREE_TOKEN": "",
             "SHOTCLOCK_ALLOWED_HOSTS": "clock.hall.example, http://clock.hall.example"},
        timeout=60, check=False)
    assert done.returncode == 78, done.stderr[-2000:]
    assert "'http://clock.hall.example' (SHOTCLOCK_ALLOWED_HOSTS" in done.stderr
