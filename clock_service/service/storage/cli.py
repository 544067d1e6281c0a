"""``shotclock store stats`` and ``shotclock store archive``: the store's size and growth.

``stats`` reads the store (beside a running service too: WAL lets it). ``archive`` moves
the finished matches that ended more than ``--days`` days ago (default
``SHOTCLOCK_ARCHIVE_DAYS``, 30) to one compressed file each (storage/archive.py), or puts
one back (``--import FILE``). It needs the store to itself: a running service archives by
itself at start and once a day, so stop it first (exit 75 while it runs).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    store = sub.add_parser("store", help="the event store: size, growth, archive",
                           description=__doc__.split("\n\n")[0])
    store_sub = store.add_subparsers(dest="store_cmd", required=True)
    stats = store_sub.add_parser("stats", help="what the store holds and costs")
    stats.add_argument("--db", default=None, help="the store (default: as serve)")
    stats.add_argument("--json", action="store_true", help="as JSON")
    archive = store_sub.add_parser(
        "archive", help="finished matches older than --days to one compressed file each")
    archive.add_argument("--db", default=None, help="the store (default: as serve)")
    archive.add_argument("--days", type=float, default=None,
                         help="matches that ended more than this many days ago (default "
                         "SHOTCLOCK_ARCHIVE_DAYS, 30; 0: every finished match)")
    archive.add_argument("--import", dest="import_file", default=None, metavar="FILE",
                         help="put an archived match's events back into the store")


def run(args: Any) -> int:
    from clock_service.core.errors import StoreError, StoreLocked
    from clock_service.service.settings import Settings
    from clock_service.service.storage import Store

    settings = Settings.from_env(db=args.db)
    store = Store(settings.db)
    try:
        if args.store_cmd == "stats":
            return _stats(store, args.json)
        store.open()  # takes the lock: refused while a service runs on it
        try:
            if args.import_file:
                match_id = store.import_match(args.import_file)
                print(f"match {match_id} is back in {store.path}")
                return 0
            days = settings.archive_days if args.days is None else args.days
            done = store.archive_matches_now(time.time() * 1000 - days * 86_400_000)
            print(f"archived {len(done)} finished matches to {store.path}.archive/"
                  + (f": {', '.join(done)}" if done else ""))
            return 0
        finally:
            store.close()
    except StoreLocked as exc:
        print(f"shotclock: {exc.message} (a running service archives by itself at start and "
              "once a day: SHOTCLOCK_ARCHIVE_DAYS)", file=sys.stderr)
        return 75
    except (StoreError, OSError, ValueError) as exc:
        print(f"shotclock: {exc}", file=sys.stderr)
        return 1


def _stats(store: Any, as_json: bool) -> int:
    from pathlib import Path

    if not Path(store.path).exists():
        print(f"shotclock: no store at {store.path}", file=sys.stderr)
        return 1
    from clock_service.service.storage.records import open_read_only

    store._local.conn = open_read_only(store.path)  # noqa: SLF001 - read-only, no lock
    stats = store.stats()
    if as_json:
        print(json.dumps(stats, indent=1))
        return 0
    mb = 1e6
    print(f"store            {stats['path']}")
    print(f"file             {stats['file_bytes'] / mb:.2f} MB ({stats['used_bytes'] / mb:.2f} "
          f"MB used, {stats['free_pages']} free pages); WAL {stats['wal_bytes'] / mb:.2f} MB")
    print(f"events           {stats['events']} ({stats['bytes_per_event'] or 0:.0f} bytes each)")
    print(f"tables, matches  {stats['tables']} live, {stats['matches']} matches")
    print(f"archived         {stats['archived_matches']} matches, {stats['archived_events']} "
          f"events, {stats['archive_bytes'] / mb:.2f} MB in {stats['archive_dir']}")
    print(f"disk             {stats['disk_free_bytes'] / mb:.0f} MB free of "
          f"{stats['disk_total_bytes'] / mb:.0f} MB")
    return 0
