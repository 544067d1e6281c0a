"""The draw: the event's matches, each for a table or the next free table. No I/O.

A draw file (CSV or JSON) lists matches with ``number``, the two players, ``race_to``,
``event``, ``round`` and ``table`` (a table id, or empty / ``next`` for the next free
table). ``parse_draw`` checks all of it and refuses the whole file with every bad line and
its reason, so a bad file changes nothing. ``Draw`` keeps each table's queue (in draw
order) and the matches waiting for the next free table, and says which match a table
plays next.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from clock_service.core.commands import MAX_RACE_TO
from clock_service.core.ids import is_table_id
from clock_service.core.text import LINE, NAME, TextKind, clean, refusal

__all__ = ["DrawMatch", "DrawError", "Problem", "parse_draw", "Draw", "NEXT_FREE",
           "CSV_COLUMNS", "MAX_DRAW_MATCHES", "MAX_DRAW_BYTES", "MAX_DRAW_NUMBER"]

NEXT_FREE = "next"
CSV_COLUMNS = ("number", "player1", "player2", "race_to", "event", "round", "table")
REQUIRED = ("number", "player1", "player2", "race_to")
MAX_DRAW_MATCHES = 2000
MAX_DRAW_BYTES = 1_000_000
MAX_DRAW_NUMBER = 999_999
# Besides the rule of every human text (core/text.py): a cell of a draw starting with one
# of these was a formula in the spreadsheet the draw came from (CSV injection, OWASP), so
# it is refused rather than imported as a name (every CSV written quotes such a cell too).
FORMULA_START = ("=", "+", "-", "@")


@dataclass(frozen=True)
class Problem:
    """A bad line: ``reason`` in English, ``code`` and ``data`` for a page to say it in
    its own language (web_ui/static/js/tournament.js)."""

    line: int  # 1-based line of the file (CSV: the header is line 1); JSON: item index + 1
    reason: str
    code: str = "invalid_draw"
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason, "code": self.code,
                "data": dict(self.data)}


class DrawError(ValueError):
    """A draw file refused: every bad line with its reason (nothing was imported)."""

    code = "invalid_draw"

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        first = "; ".join(f"line {p.line}: {p.reason}" for p in problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"the draw was refused, nothing imported: {first}{more}")


@dataclass(frozen=True)
class DrawMatch:
    number: int
    players: tuple[str, str]
    race_to: int
    event: str | None = None
    round: str | None = None
    table: str | None = None  # None: the next free table
    status: str = "queued"  # queued | playing | done
    playing_on: str | None = None  # the table it was started on
    match_id: str | None = None  # the table's match id once started ("<table>.<n>")
    # Its place among the queued (each queue is sorted by it): its number until the
    # director reorders a queue; unique in the draw (a reorder deals the queue's own out).
    order: int = 0

    def __post_init__(self) -> None:
        if not self.order:
            object.__setattr__(self, "order", self.number)

    @property
    def title(self) -> str:
        return f"{self.players[0]} – {self.players[1]}"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["players"] = list(self.players)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DrawMatch:
        return cls(number=int(data["number"]), players=(data["players"][0], data["players"][1]),
                   race_to=int(data["race_to"]), event=data.get("event"),
                   round=data.get("round"), table=data.get("table"),
                   status=data.get("status", "queued"), playing_on=data.get("playing_on"),
                   match_id=data.get("match_id"), order=int(data.get("order") or 0))


# What is wrong with a cell: (English reason, code, data for the page's own words).
_Wrong = tuple[str, str, dict[str, Any]]


def _wrong(reason: str, code: str, **data: Any) -> _Wrong:
    return reason, code, data


def _human(value: Any, column: str, kind: TextKind) -> _Wrong | None:
    """Why a cell is not a human text of ``kind`` (core/text.py's rule), or None."""
    reason = refusal(value, kind)  # the reason the API gives for the same text
    if reason is None:
        return None
    said = f"{column}: {reason}"
    if not isinstance(value, str):
        return _wrong(said, "draw_not_text", column=column, value=repr(value)[:40])
    if len(value) > kind.cap:
        return _wrong(said, "draw_too_long", column=column, value=value.strip()[:20],
                      max=kind.cap)
    return _wrong(said, "draw_bad_text", column=column, why=reason[:120])


def _formula(column: str, text: str, why: str) -> _Wrong:
    return _wrong(f"{column} {text!r} starts with {text[0]!r}: {why}", "draw_formula",
                  column=column, value=text[:40], char=text[0])


def _name(value: Any, column: str) -> tuple[str | None, _Wrong | None]:
    if value is None or isinstance(value, str) and not value.strip(" "):  # an empty cell
        return None, _wrong(f"{column} is missing", "draw_missing", column=column)
    wrong = _human(value, column, NAME)
    if wrong is not None:
        return None, wrong
    name = clean(value, NAME)
    if name.startswith(FORMULA_START):
        return None, _formula(column, name, "a spreadsheet would run it as a formula (=, +, "
                              "-, @ are refused at the start of a name)")
    return name, None


def _text(value: Any, column: str) -> tuple[str | None, _Wrong | None]:
    if value is None or isinstance(value, str) and not value.strip(" "):  # an empty cell
        return None, None
    wrong = _human(value, column, LINE)
    if wrong is not None:
        return None, wrong
    text = clean(value, LINE)
    if text.startswith(FORMULA_START):
        return None, _formula(column, text, "refused as a formula")
    return text, None


def _whole(value: Any, column: str, low: int, high: int,
           cell: bool) -> tuple[int | None, _Wrong | None]:
    """A whole number: JSON's own, or a CSV cell's digits (``cell``)."""
    if cell and isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        shown = "a whole number" if isinstance(value, bool) else f"a whole number in {low}..{high}"
        return None, _wrong(f"{column} must be {shown}, got {value!r}", "draw_not_whole",
                            column=column, low=low, high=high, value=repr(value)[:40])
    return value, None


def _match(line: int, row: Mapping[str, Any], kind: str, tables: Iterable[str],
           problems: list[Problem]) -> DrawMatch | None:
    start = len(problems)

    def check(result: tuple[Any, _Wrong | None]) -> Any:
        value, wrong = result
        if wrong:
            reason, code, data = wrong
            problems.append(Problem(line, reason, code, data))
        return value

    cell = kind == "csv"  # a CSV has only text: its numbers are digits
    number = check(_whole(row.get("number"), "number", 1, MAX_DRAW_NUMBER, cell))
    players = row.get("players")
    if players is not None:  # JSON: "players": [a, b]
        if not isinstance(players, list) or len(players) != 2:
            problems.append(Problem(line, f"players must be two names, got {players!r}"[:200],
                                    code="draw_two_players"))
            a = b = None
        else:
            a = check(_name(players[0], "player1"))
            b = check(_name(players[1], "player2"))
    else:
        a = check(_name(row.get("player1"), "player1"))
        b = check(_name(row.get("player2"), "player2"))
    race_to = check(_whole(row.get("race_to"), "race_to", 1, MAX_RACE_TO, cell))
    event = check(_text(row.get("event"), "event"))
    round_ = check(_text(row.get("round"), "round"))
    table = row.get("table")
    table = None if table is None else table.strip() if isinstance(table, str) else table
    if table in ("", NEXT_FREE, "next free table"):
        table = None
    elif table is not None and not isinstance(table, str):
        problems.append(Problem(line, f"table must be a table id (text), got {table!r}"[:200],
                                code="draw_not_text",
                                data={"column": "table", "value": repr(table)[:40]}))
    elif table is not None and (not is_table_id(table) or table not in set(tables)):
        known = sorted(set(tables))
        problems.append(Problem(line, f"unknown table {table!r}: tables are {known} (or "
                                "'next' for the next free table)", code="draw_unknown_table",
                                data={"table": table[:40], "tables": ", ".join(known)}))
    if len(problems) > start:
        return None
    assert number is not None and a is not None and b is not None and race_to is not None
    return DrawMatch(number, (a, b), race_to, event, round_, table)


def parse_draw(text: str, *, kind: str, tables: Iterable[str],
               taken: Iterable[int] = ()) -> list[DrawMatch]:
    """The matches of a draw file (``kind`` ``csv`` or ``json``), every one checked;
    ``tables``: the live table ids; ``taken``: match numbers already in the draw. Refused
    as a whole with every problem (``DrawError``)."""
    tables = list(tables)
    if len(text.encode("utf-8", "replace")) > MAX_DRAW_BYTES:
        raise DrawError([Problem(1, f"the file is larger than {MAX_DRAW_BYTES} bytes",
                                 code="draw_too_large", data={"max": MAX_DRAW_BYTES})])
    rows: list[tuple[int, Mapping[str, Any]]] = []
    if kind == "json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise DrawError([Problem(getattr(exc, "lineno", 1), f"not JSON: {exc}",
                                     code="draw_not_json")]) from None
        if isinstance(data, dict) and isinstance(data.get("matches"), list):
            data = data["matches"]
        if not isinstance(data, list):
            raise DrawError([Problem(1, "JSON must be a list of matches (or {\"matches\": "
                                        "[...]})", code="draw_not_a_list")])
        for i, item in enumerate(data, start=1):
            if not isinstance(item, dict):
                raise DrawError([Problem(i, f"match {i} must be an object, got {item!r}"[:200],
                                         code="draw_not_an_object")])
            rows.append((i, item))
    elif kind == "csv":
        reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
        header = [h.strip().lower() for h in (reader.fieldnames or [])]
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise DrawError([Problem(1, f"missing column(s) {missing}; the columns are "
                                        f"{list(CSV_COLUMNS)} (event, round and table may be "
                                        "left out)", code="draw_missing_columns",
                                     data={"columns": ", ".join(missing),
                                           "all": ",".join(CSV_COLUMNS)})])
        reader.fieldnames = header
        for cells in reader:
            line = reader.line_num
            if not any((v or "").strip() for v in cells.values() if isinstance(v, str)):
                continue  # a blank line
            if None in cells:  # more cells than columns
                raise DrawError([Problem(line, "more cells than columns",
                                         code="draw_extra_cells")])
            rows.append((line, cells))
    else:
        raise DrawError([Problem(1, f"unknown draw format {kind!r}: csv or json",
                                 code="draw_unknown_format")])
    if len(rows) > MAX_DRAW_MATCHES:
        raise DrawError([Problem(1, f"more than {MAX_DRAW_MATCHES} matches",
                                 code="draw_too_many", data={"max": MAX_DRAW_MATCHES})])
    problems: list[Problem] = []
    seen: dict[int, int] = {}
    taken_numbers = set(taken)
    matches = []
    for line, item in rows:
        match = _match(line, item, kind, tables, problems)
        if match is None:
            continue
        if match.number in seen:
            problems.append(Problem(line, f"duplicate match number {match.number} (also on "
                                          f"line {seen[match.number]})", code="draw_duplicate",
                                    data={"number": match.number, "other": seen[match.number]}))
            continue
        if match.number in taken_numbers:
            problems.append(Problem(line, f"match number {match.number} is already in the "
                                          "draw", code="draw_number_taken",
                                    data={"number": match.number}))
            continue
        seen[match.number] = line
        matches.append(match)
    if not rows:
        problems.append(Problem(1, "the draw holds no match", code="draw_empty"))
    if problems:
        raise DrawError(problems)
    return matches


def _folded(name: str) -> str:
    return " ".join(name.split()).casefold()


class Draw:
    """The imported matches, in draw order (by number)."""

    def __init__(self, matches: Iterable[DrawMatch] = ()) -> None:
        self.matches: dict[int, DrawMatch] = {m.number: m for m in matches}
        # Bumped by every change (each method here that writes ``matches``): what is read
        # from the draw at every feed poll is kept until it moves (Tournament.feed_info).
        self.version = 0

    def add(self, matches: Iterable[DrawMatch]) -> None:
        for match in matches:
            self.matches[match.number] = match
        self.version += 1

    def get(self, number: int) -> DrawMatch | None:
        return self.matches.get(number)

    def queue(self, table: str | None) -> list[DrawMatch]:
        """The table's queue (None: the next free table's): its matches not yet started, in
        the queue's order (the draw's, unless the director reordered it)."""
        return sorted((m for m in self.matches.values()
                       if m.table == table and m.status == "queued"),
                      key=lambda m: (m.order, m.number))

    def unassigned(self) -> list[DrawMatch]:
        """Matches for the next free table, not yet started."""
        return self.queue(None)

    def playing(self, table: str) -> DrawMatch | None:
        return next((m for m in self.matches.values()
                     if m.status == "playing" and m.playing_on == table), None)

    def next_for(self, table: str) -> DrawMatch | None:
        """What the table plays next: its own queue first, then the next free table's."""
        own = self.queue(table)
        if own:
            return own[0]
        free = self.unassigned()
        return free[0] if free else None

    def assign(self, number: int, table: str | None,
               position: int | None = None) -> list[DrawMatch]:
        """Put a queued match in ``table``'s queue (None: the next free table's), at
        ``position`` (0: first; None: where its order puts it). Returns the matches that
        changed, the moved one first."""
        match = self.matches[number]
        if match.status != "queued":
            raise ValueError(f"match {number} is {match.status}: only a queued match moves")
        moved = replace(match, table=table)
        self.version += 1
        if position is None:
            self.matches[number] = moved
            return [moved]
        queue = [m for m in self.queue(table) if m.number != number]
        queue.insert(max(0, min(position, len(queue))), moved)
        # The queue's own orders dealt out again in the new sequence: the other queues and
        # the matches imported later keep their places.
        changed = []
        for m, order in zip(queue, sorted(m.order for m in queue), strict=True):
            if m is moved or m.order != order:
                changed.append(replace(m, order=order))
                self.matches[m.number] = changed[-1]
        changed.sort(key=lambda m: m.number != number)
        return changed

    def same_pair(self, players: Iterable[str], table: str) -> DrawMatch | None:
        """The queued match between these two players (either way round, case and spaces
        aside) that ``table`` would take: its own queue's, the next free table's, then
        another table's."""
        pair = sorted(_folded(p) for p in players)
        candidates = self.queue(table) + self.unassigned() + sorted(
            (m for m in self.matches.values()
             if m.status == "queued" and m.table not in (None, table)),
            key=lambda m: (m.order, m.number))
        return next((m for m in candidates if sorted(map(_folded, m.players)) == pair), None)

    def start(self, number: int, table: str, match_id: str) -> list[DrawMatch]:
        """The match starts on ``table``; a match still playing there is done. Returns the
        matches that changed."""
        changed = []
        done = self.playing(table)
        if done is not None:
            changed.append(replace(done, status="done"))
            self.matches[done.number] = changed[-1]
        started = replace(self.matches[number], status="playing", playing_on=table,
                          match_id=match_id, table=table)
        self.matches[number] = started
        self.version += 1
        return [*changed, started]

    def finish(self, table: str, match_id: str) -> DrawMatch | None:
        match = self.playing(table)
        if match is None or match.match_id != match_id:
            return None
        finished = replace(match, status="done")
        self.matches[match.number] = finished
        self.version += 1
        return finished

    def to_dict(self, tables: Iterable[str]) -> dict[str, Any]:
        return {
            "tables": {t: {"queue": [m.to_dict() for m in self.queue(t)],
                           "playing": (None if (p := self.playing(t)) is None else p.to_dict()),
                           "next": (None if (n := self.next_for(t)) is None else n.to_dict())}
                       for t in sorted(tables)},
            "unassigned": [m.to_dict() for m in self.unassigned()],
            "matches": [m.to_dict() for m in sorted(self.matches.values(),
                                                    key=lambda m: m.number)],
        }
