"""Exports of a match record: JSON (the API's own shape) and CSV (one row per shot). Pure."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from clock_service.core.text import csv_cell
from clock_service.edges.reports.stats import MatchRecord

__all__ = ["record_json", "shots_csv", "CSV_COLUMNS", "dumps"]

# The first ten are the issue's; the rest say more about the same row.
CSV_COLUMNS = ("match", "frame", "visit", "round", "player", "limit_ms", "used_ms",
               "extension", "outcome", "fouls", "shot", "player_index", "extension_ms",
               "whites", "pauses", "corrected", "by", "start_seq", "end_seq")


def record_json(summary: Mapping[str, Any], record: MatchRecord,
                shots: bool = True) -> dict[str, Any]:
    """The match as ``GET /api/matches/{id}`` returns it: the record, with the index's
    status (``playing``, ``over``, or ``closed``: left for the table's next match)."""
    out = record.to_dict(shots)
    out["status"] = summary["status"]
    out["ended_at"] = summary["ended_at"] if summary["ended_at"] is not None else out["ended_at"]
    out["closed_reason"] = summary.get("closed_reason")
    return out


def shots_csv(record: MatchRecord, *, locale: str = "en") -> str:
    """One row per timed attempt or reported shot, in the order they were played.
    ``locale="ru"``: a byte-order mark and ';' between fields (issue 23: Russian Excel,
    whose list separator is ';', read the comma file as one column and its Cyrillic as
    mojibake without the BOM)."""
    out = io.StringIO()
    if locale == "ru":
        out.write("\ufeff")
    writer = csv.writer(out, lineterminator="\r\n", delimiter=";" if locale == "ru" else ",")
    writer.writerow(CSV_COLUMNS)
    for shot in record.shots:
        writer.writerow([csv_cell(v) for v in (
            record.id, shot.frame, shot.visit, shot.round, record.players[shot.player],
            shot.limit_ms, shot.used_ms, shot.extension, shot.outcome, ";".join(shot.fouls),
            shot.number, shot.player, shot.extension_ms, shot.whites, shot.pauses,
            shot.corrected, shot.by, shot.start_seq, shot.end_seq)])
    return out.getvalue()


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)
