"""``shotclock report`` against a store file, without a server, run by the test's process
(tests/cli.py; the PDF itself is printed in tests/browser/test_reports.py)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from clock_service.core.commands import Result
from clock_service.service.storage import Store
from harness.reports import Table, write_table
from tests.cli import Ran, shotclock


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "cli.db"
    table = Table(table_id="7")
    table.timed(12000)
    table.do(Result(whites_potted=1, legal_break=True))
    table.timed(8000)
    store = Store(path)
    store.open()
    write_table(store, table)
    store.close()
    return path


def report(*args: str, env: dict[str, str] | None = None) -> Ran:
    return shotclock("report", *args, env={**os.environ, **(env or {})})


def test_a_summary_json_and_csv_from_the_store_file(db: Path) -> None:
    summary = report("7", "--db", str(db))  # a table id: its latest match
    assert summary.returncode == 0, summary.stderr
    assert summary.stdout.splitlines()[0] == "match 7.1 (playing): Ivanov 0 : 0 Petrov"
    assert "Ivanov: 2 shots, mean 10.0 s, longest 12.0 s" in summary.stdout
    both = report("7.1", "--db", str(db), "--json", "-")
    record = json.loads(both.stdout)
    assert [s["used_ms"] for s in record["frames"][0]["shots"]] == [12000, 8000]


def test_pdf_without_chromium_says_what_to_do_and_exits_2(db: Path, tmp_path: Path) -> None:
    done = report("7.1", "--db", str(db), "--pdf", str(tmp_path / "x.pdf"),
                  env={"SHOTCLOCK_CHROMIUM": str(tmp_path / "no-chromium")})
    assert done.returncode == 2
    assert "needs a headless Chromium" in done.stderr and "apt-get install chromium" in (
        done.stderr)
    assert not (tmp_path / "x.pdf").exists()


def test_unknown_match_and_a_store_without_the_index(db: Path, tmp_path: Path) -> None:
    missing = report("7.9", "--db", str(db))
    assert (missing.returncode, "no match '7.9'" in missing.stderr) == (1, True)
    old = tmp_path / "old.db"  # as before the index existed: derived in memory, read-only
    old.write_bytes(db.read_bytes())
    with sqlite3.connect(old) as conn:
        conn.execute("DROP TABLE matches")
    again = report("7.1", "--db", str(old), "--csv", "-")
    assert again.returncode == 0, again.stderr
    assert len(again.stdout.strip().splitlines()) == 3  # the header and two shots
    with sqlite3.connect(old) as conn:  # nothing was written to it
        assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'matches'"
                            ).fetchone() is None
