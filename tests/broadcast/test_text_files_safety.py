"""The text files are written only where they belong (issue 35 point 5).

From outside: ``shotclock feed`` (its own process) polls a real HTTP server that answers the
feed's JSON with hostile table ids, into directories with symlinks planted where files and
table directories go. In-process: the writer's own refusals (the directory checks, the
temporary file opened ``O_EXCL | O_NOFOLLOW``), table by table."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from clock_service.core.errors import UnsafeDirectory
from clock_service.edges.broadcast import textfiles
from clock_service.edges.broadcast.rows import FIELDS
from clock_service.edges.broadcast.textfiles import FILE_OF, Directory, TextFiles
from tests.server import ROOT, ServerProcess, free_port
from tests.waiting import until

ROW = {k: "" for k in FIELDS}
VICTIM = "precious: not the shot clock's"


class FeedServer:
    """Answers every GET with ``rows`` as JSON (what a hostile or broken service could)."""

    def __init__(self, rows: list[Any]) -> None:
        self.rows = rows
        self.gets = 0
        feed = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                feed.gets += 1
                body = json.dumps(feed.rows).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def feed_server() -> Iterator[FeedServer]:
    server = FeedServer([])
    try:
        yield server
    finally:
        server.close()


class Feed:
    """``shotclock feed`` in its own process; ``finish()`` stops it and gives its stderr."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "clock_service", "feed", "--interval", "0.05", *args],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def wait_for(self, check: Any, what: str) -> None:
        def done() -> bool:
            if self.proc.poll() is not None:  # it ended (crashed): no use waiting
                raise AssertionError(f"shotclock feed ended ({self.proc.returncode}) before "
                                     f"{what}: {self.proc.communicate()[1]}")
            return bool(check())
        until(done, 20.0, 0.02, what)

    def finish(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.communicate(timeout=20)[1]


def _everything(top: Path) -> set[str]:
    return {str(p.relative_to(top)) for p in top.rglob("*")}


@pytest.mark.e2e
def test_hostile_table_ids_are_refused_and_reported_and_nothing_leaves_the_directory(
        tmp_path: Path, feed_server: FeedServer) -> None:
    directory = tmp_path / "a" / "b" / "obs"
    outside = tmp_path / "abs"
    hostile: list[Any] = [
        "../../escaped", "..", ".", "", "a/b", "/".join(["..", "..", "..", "x"]),
        str(outside), "nul\x00byte", "newline\n", "x" * 33, "y" * 5000, "Стол",
        7, None, ["1"],
    ]
    # The good table last: once its files are there, every hostile row was read first.
    feed_server.rows = [ROW | {"table": t, "remaining": "13"} for t in hostile]
    feed_server.rows.append(ROW | {"table": "1", "remaining": "35", "player_a": "Anna"})
    feed = Feed("--dir", str(directory), "--server", feed_server.url)
    try:
        feed.wait_for(lambda: (directory / "1" / "player_a.txt").exists(), "table 1's files")
        gets = feed_server.gets
        feed.wait_for(lambda: feed_server.gets >= gets + 2, "two more polls")
    finally:
        err = feed.finish()
    assert (directory / "1" / "clock.txt").read_text() == "35"
    # Nothing anywhere but DIR/1/ and the directories leading to DIR.
    expected = {"a", "a/b", "a/b/obs", "a/b/obs/1"} | {f"a/b/obs/1/{n}" for n in FILE_OF.values()}
    assert _everything(tmp_path) == expected
    assert not outside.exists()
    # Each refused id is said once (not at every poll), and the count at the end.
    for table_id in hostile:
        shown = repr(table_id)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        assert err.count(f"refused the rows of table {shown} from the service") == 1, (shown, err)
    refused = re.search(r"; (\d+) rows refused", err)
    assert refused and int(refused[1]) >= 3 * len(hostile), err  # three polls at least


@pytest.mark.e2e
def test_symlinks_planted_in_the_directory_are_never_followed(
        tmp_path: Path, feed_server: FeedServer) -> None:
    """A symlink at a file's name is replaced, not written through; a table directory that
    is a symlink (DIR/2 -> elsewhere) is refused and said; the other table is written."""
    directory = tmp_path / "obs"
    (directory / "1").mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (directory / "1" / "clock.txt").symlink_to(victim)
    (directory / "1" / "player_a.txt").symlink_to(tmp_path / "created-by-a-link.txt")
    (directory / "2").symlink_to(elsewhere, target_is_directory=True)
    feed_server.rows = [ROW | {"table": "2", "remaining": "9"},
                        ROW | {"table": "1", "remaining": "35", "player_a": "Anna"}]
    feed = Feed("--dir", str(directory), "--server", feed_server.url)
    try:
        feed.wait_for(lambda: (directory / "1" / "player_a.txt").is_file()
                      and not (directory / "1" / "player_a.txt").is_symlink(),
                      "table 1's files")
        gets = feed_server.gets
        feed.wait_for(lambda: feed_server.gets >= gets + 2, "two more polls")
    finally:
        err = feed.finish()
    assert victim.read_text() == VICTIM
    assert not (tmp_path / "created-by-a-link.txt").exists()
    assert (directory / "1" / "clock.txt").read_text() == "35"
    assert not (directory / "1" / "clock.txt").is_symlink()
    assert list(elsewhere.iterdir()) == []  # table 2's files are not written through DIR/2
    assert (directory / "2").is_symlink()  # and the link is left for its owner to see
    assert err.count("refused the rows of table '2' from the service") == 1, err
    assert f"{directory / '2'} is a symlink" in err


@pytest.mark.e2e
@pytest.mark.parametrize("unsafe", ["symlink", "group-writable", "world-writable"])
def test_shotclock_feed_refuses_a_directory_that_is_not_its_own(
        tmp_path: Path, feed_server: FeedServer, unsafe: str) -> None:
    real = tmp_path / "real"
    real.mkdir()
    directory = real
    if unsafe == "symlink":
        directory = tmp_path / "obs"
        directory.symlink_to(real, target_is_directory=True)
    else:
        real.chmod(0o775 if unsafe == "group-writable" else 0o1777)
    feed_server.rows = [ROW | {"table": "1", "remaining": "35"}]
    proc = subprocess.run(
        [sys.executable, "-m", "clock_service", "feed", "--dir", str(directory), "--table",
         "1", "--server", feed_server.url], cwd=ROOT, capture_output=True, text=True,
        timeout=60)
    assert proc.returncode == 78, proc.stderr
    assert f"cannot write the files in {directory}" in proc.stderr
    assert ("is a symlink" if unsafe == "symlink" else "can be written by") in proc.stderr
    assert list(real.iterdir()) == [] and feed_server.gets == 0


@pytest.mark.e2e
def test_shotclock_feed_refuses_a_table_that_is_not_a_table_id(
        tmp_path: Path, feed_server: FeedServer) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "clock_service", "feed", "--dir", str(tmp_path / "obs"),
         "--table", "../x", "--server", feed_server.url], cwd=ROOT, capture_output=True,
        text=True, timeout=60)
    assert proc.returncode == 2 and "'../x' is not a table id" in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == [] and feed_server.gets == 0


# -- the writer itself ------------------------------------------------------------------------
def test_a_link_at_the_old_temporary_name_is_not_written_through(tmp_path: Path) -> None:
    """Before issue 35 the temporary was .NAME.<pid>.tmp, opened O_CREAT | O_TRUNC: a link
    planted there had the service overwrite any file it could write."""
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    directory = tmp_path / "obs"
    directory.mkdir()
    files = TextFiles(directory)
    for name in FILE_OF.values():
        (directory / f".{name}.{os.getpid()}.tmp").symlink_to(victim)
    files.update(ROW | {"remaining": "35"})
    assert victim.read_text() == VICTIM
    assert (directory / "clock.txt").read_text() == "35"


def test_a_taken_temporary_name_is_skipped_and_never_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text(VICTIM)
    directory = tmp_path / "obs"
    files = TextFiles(directory)
    names = iter(["0" * 16, "1" * 16, *["2" * 16] * textfiles.TEMP_TRIES])
    monkeypatch.setattr(textfiles.secrets, "token_hex", lambda n: next(names))
    (directory / f".clock.txt.{'0' * 16}.tmp").symlink_to(victim)  # a link planted there
    files.directory.replace("clock.txt", b"35")
    assert victim.read_text() == VICTIM and (directory / "clock.txt").read_text() == "35"
    assert (directory / f".clock.txt.{'0' * 16}.tmp").is_symlink()  # left as it was
    assert not (directory / f".clock.txt.{'1' * 16}.tmp").exists()  # renamed into place
    # Every name taken: refused, nothing written anywhere.
    (directory / f".clock.txt.{'2' * 16}.tmp").symlink_to(victim)
    with pytest.raises(FileExistsError):
        files.directory.replace("clock.txt", b"99")
    assert victim.read_text() == VICTIM and (directory / "clock.txt").read_text() == "35"
    # The temporaries a crash left (ours, and links) are swept when the directory is opened.
    (directory / ".clock.txt.4242.tmp").write_text("half")
    TextFiles(directory).close()
    assert sorted(p.name for p in directory.iterdir()) == ["clock.txt"]


def test_the_temporary_is_opened_exclusive_without_following_links() -> None:
    for flag in (os.O_CREAT, os.O_EXCL, os.O_NOFOLLOW, os.O_CLOEXEC):
        assert textfiles.TEMP_FLAGS & flag
    assert not textfiles.TEMP_FLAGS & os.O_TRUNC


def _other_owner(path: Path) -> None:
    os.chown(path, 4242, -1)


UNSAFE = [  # (how the directory is made unsafe, what the refusal says)
    (lambda p: p.chmod(0o775), "can be written by its group (mode 775)"),
    (lambda p: p.chmod(0o757), "can be written by anyone (mode 757)"),
    (lambda p: p.chmod(0o1777), "can be written by anyone (mode 1777)"),
    (_other_owner, "belongs to user id 4242"),
]


@pytest.mark.parametrize(("make_unsafe", "said"), UNSAFE)
def test_a_directory_others_can_write_in_is_refused(tmp_path: Path, make_unsafe: Any,
                                                    said: str) -> None:
    if make_unsafe is _other_owner and os.geteuid() != 0:
        pytest.skip("only root can give a directory to another user")
    directory = tmp_path / "obs"
    directory.mkdir()
    make_unsafe(directory)
    with pytest.raises(UnsafeDirectory, match=re.escape(said)):
        Directory.open(directory)
    # A table's own directory is held to the same rule.
    (tmp_path / "mine").mkdir(mode=0o755)
    root = Directory.open(tmp_path / "mine")
    (tmp_path / "mine" / "3").mkdir()
    make_unsafe(tmp_path / "mine" / "3")
    with pytest.raises(UnsafeDirectory, match=re.escape(said)):
        root.child("3")
    root.close()
    assert [p.name for p in (tmp_path / "mine" / "3").iterdir()] == []


def test_a_file_or_a_link_is_not_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(UnsafeDirectory, match="is not a directory"):
        Directory.open(tmp_path / "file")
    (tmp_path / "link").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(UnsafeDirectory, match="is a symlink"):
        Directory.open(tmp_path / "link")


@pytest.mark.parametrize("name", ["..", ".", "", "a/b", "/etc", "x\x00", "ok\n", "z" * 33])
def test_a_table_directory_is_made_only_for_a_table_id(tmp_path: Path, name: str) -> None:
    root = Directory.open(tmp_path / "obs")
    with pytest.raises(UnsafeDirectory, match="is not a table id"):
        root.child(name)
    root.close()
    assert list((tmp_path / "obs").iterdir()) == []


def test_a_directory_made_by_the_feed_is_its_own_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o002)
    try:
        root = Directory.open(tmp_path / "made" / "obs")
        child = root.child("7")
    finally:
        os.umask(old)
    for path in (tmp_path / "made" / "obs", tmp_path / "made" / "obs" / "7"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o755
    child.close()
    root.close()


@pytest.mark.e2e
def test_serve_writes_no_file_in_a_directory_others_can_write_and_says_so(
        tmp_path: Path) -> None:
    """SHOTCLOCK_FEED_DIR that is not the service's own: nothing written, the fault in
    /api/health saying why, the clock served all the same."""
    directory = tmp_path / "obs"
    directory.mkdir()
    directory.chmod(0o775)
    server = ServerProcess(tmp_path / "s.db", env={"SHOTCLOCK_FEED_DIR": str(directory)})
    server.start()
    try:
        fault = until(lambda: [f for f in server.get("/api/health")["faults"]
                               if f["code"] == "feed_files_unwritable"], 20.0, 0.1,
                      "the feed's fault in /api/health")
        assert server.command("1", "start")[0] == 200  # the clock runs on
    finally:
        server.stop()
    assert "can be written by its group (mode 775)" in fault[0]["message"], fault
    assert list(directory.iterdir()) == []
