"""The text files for OBS/Wirecast: replaced whole, only when they change; a reader polling
while a clock runs never reads a half-written file. Against a real ``shotclock serve``
(the files kept by serve itself, SHOTCLOCK_FEED_DIR) and ``shotclock feed`` (polling)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from clock_service.edges.broadcast.rows import FIELDS
from clock_service.edges.broadcast.textfiles import FILE_OF, TextFiles
from harness.thread_server import ThreadServer
from tests.server import ROOT
from tests.waiting import until

# 6 s: above 5 s whole seconds, then tenths; the clock runs for the whole test.
PROFILE = {"shot_ms": 6000, "full_rounds": 1, "step_ms": 1000, "floor_ms": 3000,
           "extension_ms": 1000, "warnings_ms": [5000]}
CLOCK = re.compile(r"^(\d+|\d\.\d|--|)$")  # what clock.txt may hold, whole


def wait_for(check, timeout: float = 10.0, what: str = "") -> None:
    until(check, timeout, 0.02, what)


def test_each_file_is_one_line_whatever_a_name_holds(tmp_path: Path) -> None:
    """Issue 35 point 2: a name from a store written before the text rule (a line break, a
    bidi override) is one line in its file, the character shown as U+FFFD."""
    files = TextFiles(tmp_path)
    files.update({k: "" for k in FIELDS} | {"player_a": "Iv\nan\r", "player_b": "\u202eRLO",
                                            "last_event": "Foul:\u2028Ivan"})
    assert (tmp_path / "player_a.txt").read_text() == "Iv\ufffdan\ufffd"
    assert (tmp_path / "player_b.txt").read_text() == "\ufffdRLO"
    assert (tmp_path / "last_event.txt").read_text() == "Foul:\ufffdIvan"
    assert (tmp_path / "player_a.txt").read_bytes().count(b"\n") == 0


def test_a_file_is_written_only_when_its_text_changes(tmp_path: Path) -> None:
    files = TextFiles(tmp_path)
    row = {k: "" for k in FIELDS} | {"remaining": "35", "player_a": "Anna", "score_a": 0}
    assert files.update(row) == len(FILE_OF)  # the first time: everything
    assert (tmp_path / "clock.txt").read_text() == "35"
    assert (tmp_path / "player_a.txt").read_text() == "Anna"
    assert (tmp_path / "score_a.txt").read_text() == "0"
    assert files.update(row) == 0
    assert files.update(row | {"remaining": "34"}) == 1 and files.writes == len(FILE_OF) + 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left
    assert not (tmp_path / "seq.txt").exists() and not (tmp_path / "remaining_ms.txt").exists()


class Reader(threading.Thread):
    """Reads clock.txt and player_a.txt as fast as it can (OBS does ten times a second)."""

    def __init__(self, directory: Path, player: str) -> None:
        super().__init__(daemon=True)
        self.directory = directory
        self.player = player
        self.stop = False
        self.reads = 0
        self.seen: set[str] = set()
        self.bad: list[tuple[str, str]] = []

    def run(self) -> None:
        while not self.stop:
            for name in ("clock.txt", "player_a.txt"):
                try:
                    text = (self.directory / name).read_text(encoding="utf-8")
                except FileNotFoundError:
                    self.bad.append((name, "missing"))
                    continue
                self.reads += 1
                if name == "clock.txt":
                    self.seen.add(text)
                    if not CLOCK.match(text):
                        self.bad.append((name, text))
                elif text != self.player:
                    self.bad.append((name, text))


def run_clock_and_read(server: ThreadServer, directory: Path) -> Reader:
    player = "Анна Каренина " * 4  # long enough that a torn write would show
    status, body = server.post("/api/tables", {"id": "tf", "players": [player.strip(), "B"],
                                               "profile": PROFILE})
    assert status == 201, body
    # Every file there first (the first set is written one file after another).
    wait_for(lambda: all((directory / name).exists() for name in FILE_OF.values())
             and (directory / "player_a.txt").read_text() == player.strip(), what="files")
    reader = Reader(directory, player.strip())
    reader.start()
    status, body = server.command("tf", "start")
    assert status == 200, body
    # Until the clock's own expiry is in the files (the whole countdown was written).
    # (One update writes its files one after another: wait for the last one asked about.)
    wait_for(lambda: (directory / "phase.txt").read_text() == "expired"
             and (directory / "last_event.txt").read_text() not in ("", "5 seconds", "5 с")
             and (directory / "fouls_a.txt").read_text() == "1", timeout=15,
             what="the expiry, its time foul and the turn in the files")
    reader.stop = True
    reader.join(5)
    return reader


@pytest.mark.e2e
def test_serve_keeps_the_files_and_a_reader_never_sees_half_a_file(tmp_path: Path) -> None:
    directory = tmp_path / "obs"
    server = ThreadServer(tmp_path / "s.db", env={
        "SHOTCLOCK_FEED_DIR": str(directory), "SHOTCLOCK_FEED_TABLE": "tf"}).start()
    try:
        reader = run_clock_and_read(server, directory)
    finally:
        server.stop()
    assert reader.bad == [] and reader.reads > 100
    # Whole seconds, then tenths: the countdown went through the files (ten a second;
    # a loaded machine may skip some).
    tenths = {t for t in reader.seen if re.fullmatch(r"\d\.\d", t)}
    assert "6" in reader.seen and len(tenths) >= 10, reader.seen
    assert (directory / "clock.txt").read_text() == "0.0"
    assert (directory / "fouls_a.txt").read_text() == "1"  # the time foul (12.4)
    wait_for(lambda: (directory / "last_event.txt").read_text() == "B to the table",
             what="the expiry's turn in last_event.txt (phase.txt is written first)")


@pytest.mark.e2e
def test_shotclock_feed_polls_and_writes_the_same(tmp_path: Path) -> None:
    directory = tmp_path / "obs"
    server = ThreadServer(tmp_path / "s.db").start()
    feed = subprocess.Popen(
        [sys.executable, "-m", "clock_service", "feed", "--dir", str(directory),
         "--table", "tf", "--server", server.url, "--lang", "ru"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ)
    try:
        reader = run_clock_and_read(server, directory)
        wait_for(lambda: (directory / "last_event.txt").read_text() == "К столу: B",
                 what="the expiry's turn in last_event.txt (phase.txt is written first)")
        server.stop()  # the service goes away: no stale time stays on air
        wait_for(lambda: (directory / "clock.txt").read_text() == "", timeout=10,
                 what="clock.txt emptied")
    finally:
        feed.terminate()
        _, err = feed.communicate(timeout=10)
        server.stop()
    assert reader.bad == [] and reader.reads > 100
    assert len({t for t in reader.seen if re.fullmatch(r"\d\.\d", t)}) >= 10, reader.seen
    assert b"writes" in err  # it says what it wrote on the way out


def test_every_table_in_its_own_directory_and_an_unchanged_feed_writes_nothing(
        tmp_path: Path) -> None:
    """shotclock feed without --table: DIR/<id>/ per table; a 304 writes nothing; an
    unreachable service empties clock.txt after STALE_S (a fake opener: no clock here)."""
    import io
    import json
    import urllib.error

    from clock_service.edges.broadcast import cli

    answers: list[object] = []
    asked: list[str | None] = []

    class Answer(io.BytesIO):
        headers = {"ETag": '"v1"'}

        def __enter__(self) -> Answer:
            return self

        def __exit__(self, *exc: object) -> None:
            self.close()

    def opener(request: object, timeout: float) -> Answer:
        asked.append(request.get_header("If-none-match"))  # type: ignore[attr-defined]
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return Answer(json.dumps(answer).encode())

    row = {k: "" for k in FIELDS}
    answers.append([row | {"table": "1", "remaining": "35"}, row | {"table": "2", "remaining": "7"}])
    poller = cli.Poller("http://service", tmp_path, None, "en", opener=opener)
    poller.step()
    assert (tmp_path / "1" / "clock.txt").read_text() == "35"
    assert (tmp_path / "2" / "clock.txt").read_text() == "7"
    writes = poller.dirs.writes
    answers.append(urllib.error.HTTPError("u", 304, "Not Modified", {}, None))  # type: ignore[arg-type]
    poller.step()
    assert asked == [None, '"v1"'] and poller.dirs.writes == writes
    answers.append(OSError("connection refused"))
    poller.heard_at -= cli.STALE_S + 1  # not heard for longer than STALE_S
    poller.step()
    assert (tmp_path / "1" / "clock.txt").read_text() == ""
    assert (tmp_path / "1" / "player_a.txt").exists()  # only the time is taken off
