"""``shotclock config``: the effective settings and where each came from (issue 18 point 4).

Every setting of clock_service/service/settings.py with its variable, its value (secrets redacted:
the referee token as ***, an MQTT URL without its password) and its source: ``default``,
``env``, ``file`` (``SHOTCLOCK_CONFIG``'s TOML) or ``flag``. ``--markdown`` prints the
table of docs/settings.md instead, ``--json`` the effective values as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("config", help="print the effective settings and where each came "
                            "from (secrets redacted)")
    parser.add_argument("--db", default=None, help="as serve's --db (shown as a flag)")
    parser.add_argument("--host", default=None, help="as serve's --host (shown as a flag)")
    parser.add_argument("--port", type=int, default=None,
                        help="as serve's --port (shown as a flag)")
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--markdown", action="store_true",
                       help="docs/settings.md's table (every setting, its default and help)")
    shape.add_argument("--json", action="store_true", help="the effective settings as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from clock_service.service import settings as config

    if args.markdown:
        sys.stdout.write(config.markdown_table())
        return 0
    loaded = config.load(db=args.db, host=args.host, port=args.port)
    rows = config.effective(loaded)
    if args.json:
        print(json.dumps({"file": loaded.file, "settings": rows}, indent=2, ensure_ascii=False))
        return 0
    width = max(len(r["env"]) for r in rows)
    if loaded.file:
        print(f"# {config.CONFIG_ENV}={loaded.file}")
    for row in rows:
        print(f"{row['env']:<{width}}  {row['source']:<7}  {config.shown(row['value'])}")
    return 0
