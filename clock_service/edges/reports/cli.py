"""``shotclock report MATCH``: a match's record from the command line.

Reads the store file directly (read-only; beside a running service too, WAL lets it) or a
running service (``--server``). ``MATCH`` is a match id (``7.2``: table 7, its second
match) or a table id (its latest match). Writes the CSV (one row per shot), the JSON
record, or the protocol as PDF through a headless Chromium; with none of them, prints a
summary. A store whose match index is missing (never opened by this version) is read by
deriving the index in memory from the log, without writing to the file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clock_service.core.errors import UnknownMatch
from clock_service.edges.reports.export import dumps, record_json, shots_csv
from clock_service.edges.reports.protocol import render_protocol, seconds
from clock_service.edges.reports.records import read_match
from clock_service.edges.reports.stats import MatchRecord
from clock_service.service.storage.index import split_match_id
from clock_service.service.storage.records import StoreMissing, open_read_only

__all__ = ["add_parser", "run", "find_chromium", "print_pdf", "CHROMIUM_CANDIDATES"]

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser",
                       "google-chrome", "google-chrome-stable")
PDF_TIMEOUT_S = 90


class ReportError(Exception):
    """Something the user can fix; the message says what."""


def add_parser(sub: Any) -> None:
    report = sub.add_parser(
        "report", help="a match's record: CSV, JSON or the protocol as PDF",
        description=__doc__.split("\n\n")[0])
    report.add_argument("match", help="match id (TABLE.NUMBER, e.g. 1.2) or a table id "
                        "(its latest match)")
    source = report.add_mutually_exclusive_group()
    source.add_argument("--db", default=None,
                        help="the store file (default: serve's, SHOTCLOCK_DB or the state "
                        "directory; see `shotclock config`)")
    source.add_argument("--server", default=None,
                        help="a running service instead, e.g. http://127.0.0.1:8000")
    report.add_argument("--csv", nargs="?", const="-", metavar="FILE",
                        help="one row per shot (FILE, or - for stdout)")
    report.add_argument("--json", nargs="?", const="-", metavar="FILE",
                        help="the match record as JSON (FILE, or - for stdout)")
    report.add_argument("--pdf", nargs="?", const="", metavar="FILE",
                        help="the protocol as PDF (default FILE: match-<id>.pdf); needs a "
                        "headless Chromium (SHOTCLOCK_CHROMIUM, or chromium on the PATH)")
    report.add_argument("--lang", choices=["ru", "en"], default="ru",
                        help="language of the protocol (default ru)")


# -- reading ----------------------------------------------------------------------------------

def _open_store(path: str) -> sqlite3.Connection:
    try:
        return open_read_only(path)
    except StoreMissing:
        raise ReportError(f"no store at {path} (--db PATH, or --server URL)") from None


def _latest(conn: sqlite3.Connection, table: str) -> str:
    row = conn.execute("SELECT max(number) FROM matches WHERE table_id = ?",
                       (table,)).fetchone()
    if row is None or row[0] is None:
        raise UnknownMatch(table)
    return f"{table}.{row[0]}"


def _get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return bytes(response.read())
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read())["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = f"HTTP {exc.code}"
        raise ReportError(f"{url}: {message}") from None
    except OSError as exc:
        raise ReportError(f"cannot reach {url}: {exc}") from None


# -- PDF ----------------------------------------------------------------------------------------

def default_store(environ: Mapping[str, str] | None = None) -> str:
    """The store ``report`` reads without --db: serve's (Settings.db: SHOTCLOCK_DB, else the
    state directory), never a path relative to the working directory."""
    from clock_service.service.settings import Settings

    return Settings.from_env(environ).db


def _configured_chromium() -> str | None:
    from clock_service.service.settings import Settings

    return Settings.from_env().chromium


def find_chromium() -> str | None:
    """SHOTCLOCK_CHROMIUM, else the first of CHROMIUM_CANDIDATES that exists."""
    configured = _configured_chromium()
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    for name in CHROMIUM_CANDIDATES:
        found = name if os.path.isabs(name) and os.access(name, os.X_OK) else shutil.which(name)
        if found:
            return found
    return None


def print_pdf(url: str, out: Path) -> None:
    """Print ``url`` (file:// or http://) to ``out`` with the headless Chromium."""
    chromium = find_chromium()
    if chromium is None:
        where = _configured_chromium() or ", ".join(CHROMIUM_CANDIDATES)
        raise ReportError(
            f"--pdf needs a headless Chromium and none was found (looked for: {where}). "
            "Install it (Debian: apt-get install chromium) or point SHOTCLOCK_CHROMIUM at it; "
            "or open the protocol page (/report?match=ID) in a browser and print it.")
    args = [chromium, "--headless", "--disable-gpu", "--no-pdf-header-footer",
            "--disable-background-networking", "--no-first-run", f"--print-to-pdf={out}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to start its sandbox as root
    with tempfile.TemporaryDirectory() as profile:
        args += [f"--user-data-dir={profile}", url]
        try:
            done = subprocess.run(args, capture_output=True, timeout=PDF_TIMEOUT_S,
                                  check=False)
        except subprocess.TimeoutExpired:
            raise ReportError(f"Chromium did not print within {PDF_TIMEOUT_S} s") from None
    if done.returncode != 0 or not out.exists() or out.stat().st_size == 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise ReportError(f"Chromium could not print the protocol (exit {done.returncode}): "
                          + " | ".join(tail))


# -- the command ----------------------------------------------------------------------------------

def _write(target: str, text: str) -> None:
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        Path(target).write_text(text, encoding="utf-8")
        print(f"wrote {target}", file=sys.stderr)


def _summary_text(summary: dict[str, Any], record: MatchRecord) -> str:
    a, b = record.players
    score = record.score
    lines = [f"match {record.id} ({summary['status']}): {a} {score[0]} : {score[1]} {b}"]
    for i, stats in enumerate(record.stats or ()):
        timing = (f", mean {seconds(stats.mean_ms)} s, longest {seconds(stats.max_ms)} s"
                  if record.timer else "")
        lines.append(f"  {record.players[i]}: {stats.shots} shots{timing}, "
                     f"{stats.fouls} fouls ({stats.time_fouls} on time), "
                     f"{stats.extensions} extensions, {stats.whites} whites")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, stylesheet: Path) -> int:
    """``shotclock report``; ``stylesheet``: the protocol page's (inlined in its HTML)."""
    try:
        return _run(args, stylesheet)
    except ReportError as exc:
        print(f"shotclock report: {exc}", file=sys.stderr)
        return 2
    except UnknownMatch as exc:
        print(f"shotclock report: {exc.message}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace, stylesheet: Path) -> int:
    wanted = args.csv or args.json or args.pdf is not None
    if args.server:
        base = args.server.rstrip("/")
        match_id = args.match
        if split_match_id(match_id) is None:
            page = json.loads(_get(f"{base}/api/matches?table="
                                   f"{urllib.parse.quote(match_id)}&limit=1"))
            if not page["matches"]:
                raise UnknownMatch(match_id)
            match_id = page["matches"][0]["id"]
        quoted = urllib.parse.quote(match_id)
        if args.csv:
            _write(args.csv, _get(f"{base}/api/matches/{quoted}/shots.csv").decode())
        if args.json or not wanted:
            data = json.loads(_get(f"{base}/api/matches/{quoted}"))
            if args.json:
                _write(args.json, dumps(data) + "\n")
            else:
                print(f"match {data['id']} ({data['status']}): {data['players'][0]} "
                      f"{data['score'][0]} : {data['score'][1]} {data['players'][1]}")
        if args.pdf is not None:
            out = Path(args.pdf or f"match-{match_id.replace('.', '-')}.pdf")
            print_pdf(f"{base}/report?match={quoted}&lang={args.lang}", out)
            print(f"wrote {out}", file=sys.stderr)
        return 0

    conn = _open_store(args.db or default_store())
    try:
        match_id = args.match if split_match_id(args.match) else _latest(conn, args.match)
        summary, record = read_match(conn, match_id)
    finally:
        conn.close()
    if args.csv:
        _write(args.csv, shots_csv(record))
    if args.json:
        _write(args.json, dumps(record_json(summary, record)) + "\n")
    if args.pdf is not None:
        out = Path(args.pdf or f"match-{match_id.replace('.', '-')}.pdf").resolve()
        html = render_protocol(summary, record, lang=args.lang, links=False,
                               inline_css=stylesheet.read_text(encoding="utf-8"))
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "protocol.html"
            page.write_text(html, encoding="utf-8")
            print_pdf(page.as_uri(), out)
        print(f"wrote {out}", file=sys.stderr)
    if not wanted:
        sys.stdout.write(_summary_text(summary, record))
    return 0
