"""``shotclock draw import FILE``: send a draw file to the running service.

The service holds the store (one writer), so the command goes through its HTTP API
(``POST /api/draw``) with the referee token (``--token`` or SHOTCLOCK_REFEREE_TOKEN, read
by the settings). A refused file prints every bad line with its reason and exits 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    draw = sub.add_parser("draw", help="the event's draw: each table's queue of matches")
    draw_sub = draw.add_subparsers(dest="draw_cmd", required=True)
    imp = draw_sub.add_parser(
        "import", help="import a draw file (CSV: number,player1,player2,race_to,event,round,"
        "table; or JSON) into the running service")
    imp.add_argument("file", help="the draw file (.csv or .json)")
    imp.add_argument("--server", default="http://127.0.0.1:8000", help="service base URL")
    imp.add_argument("--token", default=None,
                     help="the referee token (default: SHOTCLOCK_REFEREE_TOKEN)")


def run(args: argparse.Namespace, token: str | None) -> int:
    path = Path(args.file)
    try:
        body = path.read_bytes()
    except OSError as exc:
        print(f"shotclock draw import: cannot read {path}: {exc}", file=sys.stderr)
        return 2
    kind = "application/json" if path.suffix.lower() == ".json" else "text/csv"
    request = urllib.request.Request(
        args.server.rstrip("/") + "/api/draw", data=body, method="POST",
        headers={"Content-Type": f"{kind}; charset=utf-8",
                 **({"Authorization": f"Bearer {args.token or token}"}
                    if (args.token or token) else {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            error = json.loads(exc.read()).get("error", {})
        except ValueError:
            error = {"message": f"HTTP {exc.code}"}
        print(f"shotclock draw import: {path} refused ({exc.code} {error.get('code', '')}):",
              file=sys.stderr)
        for problem in error.get("problems") or []:
            print(f"  line {problem['line']}: {problem['reason']}", file=sys.stderr)
        if not error.get("problems"):
            print(f"  {error.get('message', '')}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"shotclock draw import: cannot reach {args.server}: {exc}", file=sys.stderr)
        return 2
    print(f"shotclock draw import: {answer['imported']} matches imported from {path}")
    for match in answer["matches"]:
        where = f"table {match['table']}" if match["table"] else "next free table"
        print(f"  {match['number']}: {match['players'][0]} – {match['players'][1]}, race to "
              f"{match['race_to']} ({where})")
    return 0
