"""Issue 11 point 13: the published HTTP contract is exact. schemathesis (a third-party
OpenAPI fuzzer) runs against a real ``shotclock serve``: the examples, coverage, fuzzing and
stateful phases (links from ``POST /api/tables`` reach the table routes), every check, a
bounded number of examples so it fits the test budget. Its findings before this work: a 500
for ``since`` beyond 64 bits, requests the schema called valid that the service refused (an
empty ``command``, unknown profile keys), an undocumented 400 for a body that is not JSON,
an ``Allow`` header without POST; and, on the way, a 500 for ``"at": {}`` in ``call``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.thread_server import ThreadServer

pytestmark = pytest.mark.e2e

TOKEN = "contract-t0ken"
HERE = Path(__file__).parent
# Examples per operation and phase: enough to find the defects above (each was found with
# these), few enough for make test (about 40 s on the shared 2-core machine).
MAX_EXAMPLES = int(os.environ.get("SHOTCLOCK_SCHEMATHESIS_EXAMPLES", "10"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadServer]:
    # The limits off: schemathesis sends hundreds of requests from one address, and is to
    # see what every route answers, not the rate limit's 429.
    proc = ThreadServer(tmp_path_factory.mktemp("contract") / "contract.db", env={
        "SHOTCLOCK_REFEREE_TOKEN": TOKEN, "SHOTCLOCK_COMMAND_RATE": "0",
        "SHOTCLOCK_READ_RATE": "0", "SHOTCLOCK_MESSAGE_RATE": "0",
        "SHOTCLOCK_HANDSHAKE_RATE": "0"}).start()
    try:
        yield proc
    finally:
        proc.stop()


def test_schemathesis_finds_nothing(server: ThreadServer, tmp_path: Path) -> None:
    command = [
        str(Path(sys.executable).with_name("schemathesis")), "--config-file",
        str(HERE / "schemathesis.toml"), "run", f"{server.url}/openapi.json",
        "--header", f"Authorization: Bearer {TOKEN}",
        "--phases", "examples,coverage,fuzzing,stateful", "--checks", "all",
        "--max-examples", str(MAX_EXAMPLES), "--generation-deterministic",
        "--request-timeout", "10", "--report-dir", str(tmp_path),
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                         check=False)
    assert run.returncode == 0, run.stdout[-12000:] + run.stderr[-3000:]
    assert "Stateful" in run.stdout and "Coverage" in run.stdout  # every phase ran


def test_405_names_every_method_of_the_path(server: ThreadServer) -> None:
    response = httpx.put(f"{server.url}/api/tables")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD, POST"
    assert response.json()["error"]["code"] == "method_not_allowed"
    response = httpx.patch(f"{server.url}/api/tables/1")
    assert response.headers["allow"] == "DELETE, GET, HEAD"


def test_the_command_schema_is_one_of_the_known_commands(server: ThreadServer) -> None:
    from clock_service.core.commands import COMMANDS

    document = httpx.get(f"{server.url}/openapi.json").json()
    operation = document["paths"]["/api/tables/{table_id}/commands"]["post"]
    assert operation["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Command"}
    command = document["components"]["schemas"]["Command"]
    assert set(command["discriminator"]["mapping"]) == set(COMMANDS)
    for name, ref in command["discriminator"]["mapping"].items():
        model = document["components"]["schemas"][ref.rsplit("/", 1)[-1]]
        assert model["additionalProperties"] is False
        assert model["properties"]["command"]["const"] == name
    assert "400" in operation["responses"]  # a body that is not JSON
    links = document["paths"]["/api/tables"]["post"]["responses"]["201"]["links"]
    assert {link["operationId"] for link in links.values()} <= {
        op["operationId"] for path in document["paths"].values() for op in path.values()}
    profile = document["components"]["schemas"]["ProfileIn"]
    assert profile["additionalProperties"] is False  # a profile takes no other keys


def test_the_human_text_pattern_is_one_the_fuzzer_uses_as_written() -> None:
    """Issue 35: schemathesis dropped a pattern it could not compile (a surrogate range) and
    then sent text the service rightly refused."""
    from schemathesis.core.jsonschema.patterns import enforced_pattern

    from clock_service.core.text import LINE, NAME, pattern

    for kind in (NAME, LINE):
        assert enforced_pattern(pattern(kind)) == pattern(kind)
