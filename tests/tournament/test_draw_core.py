"""The draw file and the tables' queues, without I/O: every bad file refused with the line
and the reason, nothing half-imported; queues, next free table, start and finish."""

from __future__ import annotations

import json

import pytest

from clock_service.edges.tournament.draw import Draw, DrawError, DrawMatch, parse_draw

TABLES = ["1", "2"]
HEADER = "number,player1,player2,race_to,event,round,table\n"
GOOD_CSV = HEADER + ("1,Ivanov,Petrov,3,City cup,Round 1,1\n"
                     "2,Sidorov,Orlov,3,City cup,Round 1,2\n"
                     "3,Smirnov,Kuznetsov,2,City cup,Round 1,next\n"
                     "\n"
                     "4,Popov,Vasiliev,2,City cup,Round 1,\n")


def test_a_good_csv_draw() -> None:
    matches = parse_draw(GOOD_CSV, kind="csv", tables=TABLES)
    assert [(m.number, m.players, m.race_to, m.table) for m in matches] == [
        (1, ("Ivanov", "Petrov"), 3, "1"), (2, ("Sidorov", "Orlov"), 3, "2"),
        (3, ("Smirnov", "Kuznetsov"), 2, None), (4, ("Popov", "Vasiliev"), 2, None)]
    assert matches[0].event == "City cup" and matches[0].round == "Round 1"


def test_a_good_json_draw() -> None:
    text = json.dumps({"matches": [
        {"number": 7, "players": ["Ivanov", "Petrov"], "race_to": 3, "table": "1"},
        {"number": 8, "players": ["A", "B"], "race_to": 1, "table": None, "round": "Final"}]})
    matches = parse_draw(text, kind="json", tables=TABLES)
    assert [(m.number, m.table, m.round) for m in matches] == [(7, "1", None), (8, None, "Final")]


# (file, kind, expected problems as (line, fragment of the reason))
BAD = [
    ("missing column", "number,player1,race_to\n1,A,3\n", "csv",
     [(1, "missing column(s) ['player2']")]),
    ("unknown table", HEADER + "1,A,B,3,,,1\n2,C,D,3,,,9\n", "csv",
     [(3, "unknown table '9'")]),
    ("duplicate number", HEADER + "1,A,B,3,,,1\n2,C,D,3,,,1\n1,E,F,3,,,2\n", "csv",
     [(4, "duplicate match number 1 (also on line 2)")]),
    ("formula =", HEADER + '1,"=HYPERLINK(""http://x"")",B,3,,,1\n', "csv",
     [(2, "player1 '=HYPERLINK(\"http://x\")' starts with '='")]),
    ("formula +", HEADER + "1,A,+7,3,,,1\n", "csv", [(2, "player2 '+7' starts with '+'")]),
    ("formula -", HEADER + "1,-2+3,B,3,,,1\n", "csv", [(2, "starts with '-'")]),
    ("formula @", HEADER + "1,A,@SUM(A1),3,,,1\n", "csv", [(2, "starts with '@'")]),
    ("formula after a blank", HEADER + "1, =1+1,B,3,,,1\n", "csv", [(2, "starts with '='")]),
    ("formula in event", HEADER + "1,A,B,3,=cmd,,1\n", "csv", [(2, "event '=cmd'")]),
    ("bad race", HEADER + "1,A,B,zero,,,1\n", "csv", [(2, "race_to must be a whole number")]),
    ("missing player", HEADER + "1,A,,3,,,1\n", "csv", [(2, "player2 is missing")]),
    ("every problem, each line", HEADER + "1,A,B,3,,,9\n1,=x,B,0,,,1\n", "csv",
     [(2, "unknown table '9'"), (3, "player1 '=x'"), (3, "race_to")]),
    ("json duplicate", json.dumps([{"number": 1, "players": ["A", "B"], "race_to": 1},
                                   {"number": 1, "players": ["C", "D"], "race_to": 1}]), "json",
     [(2, "duplicate match number 1")]),
    ("json formula", json.dumps([{"number": 1, "players": ["@A", "B"], "race_to": 1}]), "json",
     [(1, "player1 '@A' starts with '@'")]),
    ("json not a list", json.dumps({"number": 1}), "json", [(1, "JSON must be a list")]),
    ("empty", HEADER, "csv", [(1, "the draw holds no match")]),
]


@pytest.mark.parametrize(("text", "kind", "problems"), [b[1:] for b in BAD],
                         ids=[b[0] for b in BAD])
def test_bad_draw_files_are_refused_with_the_line_and_the_reason(
        text: str, kind: str, problems: list[tuple[int, str]]) -> None:
    with pytest.raises(DrawError) as info:
        parse_draw(text, kind=kind, tables=TABLES)
    got = [(p.line, p.reason) for p in info.value.problems]
    assert len(got) == len(problems), got
    for (line, reason), (want_line, fragment) in zip(got, problems, strict=True):
        assert line == want_line and fragment in reason, (line, reason)
    assert "nothing imported" in str(info.value)


def test_numbers_already_in_the_draw_are_refused() -> None:
    with pytest.raises(DrawError, match="match number 1 is already in the draw"):
        parse_draw(HEADER + "1,A,B,3,,,1\n", kind="csv", tables=TABLES, taken=[1])


def test_queues_next_free_table_start_and_finish() -> None:
    draw = Draw(parse_draw(GOOD_CSV, kind="csv", tables=TABLES))
    assert [m.number for m in draw.queue("1")] == [1]
    assert [m.number for m in draw.unassigned()] == [3, 4]
    assert draw.next_for("1").number == 1  # type: ignore[union-attr]
    changed = draw.start(1, "1", "1.2")
    assert [(m.number, m.status) for m in changed] == [(1, "playing")]
    assert draw.next_for("1").number == 3  # type: ignore[union-attr]  # the next free one
    assert draw.finish("1", "1.1") is None  # another match ended: not this one
    assert draw.finish("1", "1.2").status == "done"  # type: ignore[union-attr]
    changed = draw.start(3, "1", "1.3")
    assert draw.get(3).playing_on == "1" and draw.unassigned()[0].number == 4  # type: ignore
    draw.assign(4, "2")
    assert [m.number for m in draw.queue("2")] == [2, 4] and draw.unassigned() == []
    with pytest.raises(ValueError, match="only a queued match moves"):
        draw.assign(3, "2")
    view = draw.to_dict(TABLES)
    assert view["tables"]["1"]["playing"]["number"] == 3
    assert view["tables"]["2"]["next"]["number"] == 2


def test_starting_a_match_finishes_the_one_playing_on_that_table() -> None:
    draw = Draw(parse_draw(GOOD_CSV, kind="csv", tables=TABLES))
    draw.start(1, "1", "1.2")
    changed = draw.start(3, "1", "1.3")
    assert [(m.number, m.status) for m in changed] == [(1, "done"), (3, "playing")]


# -- the director's reorder (issue 36): (moves as (number, table, position), queues after) ---
REORDERS = [
    ("to the front of its queue", [(6, "1", 0)], {"1": [6, 1, 5], None: [3, 4]}),
    ("to the end of its queue", [(1, "1", 9)], {"1": [5, 6, 1], None: [3, 4]}),
    ("one up", [(6, "1", 1)], {"1": [1, 6, 5], None: [3, 4]}),
    ("into another queue, first", [(4, "1", 0)], {"1": [4, 1, 5, 6], None: [3]}),
    ("to the next free table, second", [(5, None, 1)], {"1": [1, 6], None: [3, 5, 4]}),
    ("without a place: by its order", [(6, None, None)], {"1": [1, 5], None: [3, 4, 6]}),
    ("two moves", [(6, "1", 0), (5, "1", 0)], {"1": [5, 6, 1], None: [3, 4]}),
    ("back where it was", [(6, "1", 0), (6, "1", 2)], {"1": [1, 5, 6], None: [3, 4]}),
]


@pytest.mark.parametrize(("moves", "queues"), [r[1:] for r in REORDERS],
                         ids=[r[0] for r in REORDERS])
def test_a_queue_is_reordered_and_the_others_keep_their_places(
        moves: list[tuple[int, str | None, int | None]],
        queues: dict[str | None, list[int]]) -> None:
    draw = Draw(parse_draw(GOOD_CSV + "5,A,B,1,,,1\n6,C,D,1,,,1\n", kind="csv", tables=TABLES))
    for number, table, position in moves:
        changed = draw.assign(number, table, position)
        assert changed[0].number == number and changed[0].table == table
    assert {t: [m.number for m in draw.queue(t)] for t in queues} == queues
    assert [m.number for m in draw.queue("2")] == [2]  # untouched
    orders = [m.order for m in draw.matches.values()]
    assert len(set(orders)) == len(orders)  # still one place each
    again = Draw(DrawMatch.from_dict(json.loads(json.dumps(m.to_dict())))
                 for m in draw.matches.values())  # as the store keeps it
    assert {t: [m.number for m in again.queue(t)] for t in queues} == queues


# -- a pair started by hand (issue 36, "Queued pair") ------------------------------------------
PAIRS = [
    ("the table's own queue", ["Ivanov", "Petrov"], "1", 1),
    ("either way round", ["Petrov", "Ivanov"], "1", 1),
    ("case and spaces aside", [" ivanov ", "PETROV"], "1", 1),
    ("the next free table's", ["Smirnov", "Kuznetsov"], "1", 3),
    ("another table's queue", ["Sidorov", "Orlov"], "1", 2),
    ("Cyrillic", ["сидоров", "Орлов"], "2", 7),
    ("not in the draw", ["Ivanov", "Orlov"], "1", None),
]


@pytest.mark.parametrize(("players", "table", "number"), [p[1:] for p in PAIRS],
                         ids=[p[0] for p in PAIRS])
def test_the_queued_match_of_a_pair(players: list[str], table: str, number: int | None) -> None:
    draw = Draw(parse_draw(GOOD_CSV + "7,Сидоров,Орлов,1,,,next\n", kind="csv",
                           tables=TABLES))
    found = draw.same_pair(players, table)
    assert (found.number if found else None) == number
    draw.start(1, "1", "1.1")  # a match started is no longer queued
    if number == 1:
        assert draw.same_pair(players, table) is None
