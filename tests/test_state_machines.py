"""The core's three state machines (issue 38 point 2): the table clock (transitions.CLOCK),
the match clock (match_clock.MATCH_CLOCK) and the frame (rules.frame.FRAME).

1. One way in: no code of the core assigns a phase; a machine's state changes only in
   ``machine.Current.apply`` (a move of its table) and ``Current.restore`` (a stored state
   read back, called only by the loaders). The source is walked for it, and the phase
   properties refuse a write.
2. The tables are total and closed (``Machine`` refuses one that is not), every state is
   reachable, and every refusal names the command, the phase and its rule.
3. The tables are what the product does: random referees play the real clock while every
   move is recorded; each command moves its machine exactly once, every event made is one
   its cells declare (and every event a cell always makes is made), the frame's phase is
   the one its facts imply, and every move the tables allow is made at least once (a cell
   nobody reaches is a table that says more than the product does).
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clock_service.core.clock import TableClock
from clock_service.core.commands import (
    AnnounceCall,
    Command,
    Extension,
    Foul,
    HandBack,
    NewFrame,
    NewMatch,
    Pause,
    Result,
    Resume,
    SetTime,
    Shot,
    ShotClockOn,
    Start,
    Turn,
    Undo,
)
from clock_service.core.errors import InvalidCommand, RuleRefusal
from clock_service.core.events import Event
from clock_service.core.machine import Back, Current, Go, Ignore, Machine, No
from clock_service.core.match_clock import AT_LIMIT, MATCH_CLOCK, MatchClock, MatchClockPhase
from clock_service.core.profile import Profile
from clock_service.core.rules import (
    Call,
    FrameRules,
    InvalidResult,
    Route,
    RulesError,
    ShotResult,
)
from clock_service.core.rules.frame import FRAME, Phase
from clock_service.core.transitions import CLOCK, COMMAND_INPUTS, PHASES, ClockPhase

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "clock_service" / "core"
MACHINES: dict[str, Machine[Any]] = {m.name: m for m in (CLOCK, MATCH_CLOCK, FRAME)}
INITIAL = {"clock": ClockPhase.FRAME_OVER, "match clock": MatchClockPhase.WAITING,
           "frame": Phase.BREAK}


# -- 1. one way in -------------------------------------------------------------------------

def _functions(tree: ast.AST) -> Iterator[tuple[str, str, ast.AST]]:
    """(class, function, node) for every node inside a function ('' outside a class)."""
    def walk(node: ast.AST, cls: str, func: str) -> Iterator[tuple[str, str, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from walk(child, child.name, func)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield from walk(child, cls, child.name)
            else:
                yield cls, func, child
                yield from walk(child, cls, func)
    yield from walk(tree, "", "")


def state_writes(source: str) -> list[tuple[str, str, str]]:
    """(what, class.function, line) of every write to a machine's state in ``source``:
    an attribute ``phase``, ``_phase`` or ``_state`` assigned (or given to setattr by
    name), and every call of ``.restore(...)``."""
    found = []
    for cls, func, node in _functions(ast.parse(source)):
        where = f"{cls}.{func}".strip(".")
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = [t for target in node.targets
                       for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr in ("phase", "_phase",
                                                                     "_state"):
                found.append((target.attr, where, str(node.lineno)))
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name == "setattr" and len(node.args) > 1 and isinstance(
                    node.args[1], ast.Constant) and node.args[1].value in ("phase", "_phase",
                                                                           "_state"):
                found.append((f"setattr {node.args[1].value}", where, str(node.lineno)))
            if isinstance(node.func, ast.Attribute) and node.func.attr == "restore":
                found.append(("restore", where, str(node.lineno)))
    return found


# Where a machine's state may be written: Current itself (its one move, its reading back),
# each owner making its machine, and the loaders of a stored state.
ALLOWED_WRITES = {
    ("_state", "Current.__init__"), ("_state", "Current.apply"), ("_state", "Current.restore"),
    ("_phase", "TableClock.__init__"), ("_phase", "MatchClock.__init__"),
    ("_phase", "FrameRules.__init__"),
    ("restore", "TableClock._load"), ("restore", "MatchClock.from_dict"),
    ("restore", "FrameRules.from_dict"),
}


def test_no_code_of_the_core_writes_a_phase_but_the_machines_apply() -> None:
    writes = {path.relative_to(ROOT).as_posix(): state_writes(path.read_text())
              for path in sorted(CORE.rglob("*.py"))}
    assert sum(map(len, writes.values())) >= len(ALLOWED_WRITES)  # the walk sees them
    stray = [(path, *w) for path, found in writes.items() for w in found
             if (w[0], w[1]) not in ALLOWED_WRITES]
    assert stray == [], "a phase written outside machine.Current.apply"
    seen = {(w[0], w[1]) for found in writes.values() for w in found}
    assert seen >= ALLOWED_WRITES, f"stale: {sorted(ALLOWED_WRITES - seen)}"


def test_the_walk_finds_a_phase_written_by_hand() -> None:
    """The check above can fail: each kind of write it looks for, in a made-up class."""
    source = (
        "class TableClock:\n"
        "    def _on_shot(self, command, now):\n"
        "        self.phase = 'ready'\n"
        "        self._phase, x = Current(CLOCK, 'ready'), 1\n"
        "        self.match_clock._state = 'stopped'\n"
        "        setattr(self, 'phase', 'ready')\n"
        "        self._phase.restore('ready')\n")
    assert [(w[0], w[1]) for w in state_writes(source)] == [
        ("phase", "TableClock._on_shot"), ("_phase", "TableClock._on_shot"),
        ("_state", "TableClock._on_shot"), ("setattr phase", "TableClock._on_shot"),
        ("restore", "TableClock._on_shot")]


@pytest.mark.parametrize("owner", [
    lambda: TableClock(["A", "B"]), lambda: MatchClock(60_000), lambda: FrameRules()],
    ids=["clock", "match clock", "frame"])
def test_the_phase_cannot_be_set_from_outside(owner: Any) -> None:
    thing = owner()
    with pytest.raises(AttributeError):
        thing.phase = "running"
    with pytest.raises(AttributeError):
        setattr(thing, "phase", "running")  # noqa: B010  (what a loop over fields would do)


def test_a_refused_move_is_a_bug_and_moves_nothing() -> None:
    current = Current(CLOCK, ClockPhase.READY)
    with pytest.raises(AssertionError, match="clock: shot in ready: the table refuses it"):
        current.apply("shot")
    with pytest.raises(AssertionError, match="no outcome 'nonsense'"):
        current.apply("foul", "nonsense")
    assert current.state is ClockPhase.READY


# -- 2. the tables ------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(MACHINES))
def test_every_state_is_reachable_and_every_state_has_every_input(name: str) -> None:
    machine = MACHINES[name]
    assert len(list(machine.cells())) == len(machine.states) * len(machine.inputs)
    seen, todo = set(), [INITIAL[name]]
    while todo:
        state = todo.pop()
        if state in seen:
            continue
        seen.add(state)
        for _, cell in machine.table[state].items():
            if isinstance(cell, Go):
                todo.extend(cell.targets())
    assert seen == set(machine.states)


def test_the_clock_table_has_every_command_and_every_handler_one() -> None:
    from clock_service.core.commands import COMMANDS

    assert set(COMMAND_INPUTS) == set(COMMANDS) == set(TableClock._handlers)


def test_every_refusal_of_the_clock_names_the_command_the_phase_and_its_rule() -> None:
    clocks = _clocks_in_every_phase()
    for phase, name, cell in CLOCK.cells():
        if not isinstance(cell, No):
            continue
        refusal = clocks[phase].refusal(name, clocks[phase].last_step_at or 0)
        assert refusal is not None, (phase, name)
        rule = f" ({cell.rule})" if cell.rule else ""
        assert str(refusal) == f"{name} refused in phase {phase}: {cell.message}{rule}"
        assert (refusal.code, refusal.rule) == (cell.code, cell.rule)


def test_every_refusal_of_the_frame_names_the_command_and_its_rule() -> None:
    def frame_in(phase: Phase) -> FrameRules:
        frame = FrameRules()
        if phase is Phase.PLAY:
            frame.pass_turn()
        elif phase is Phase.CHOICE:
            frame.record_foul(0, "12.4", "time")
        elif phase is Phase.OVER:
            frame.end_by_referee(None, "abandoned")
        assert frame.phase is phase
        return frame

    press = {
        "shot": lambda f: f.shot(ShotResult()), "call": lambda f: f.announce(CALL),
        "record_foul": lambda f: f.record_foul(0, "9", "x"), "pass_turn": lambda f: f.pass_turn(),
        "end_by_referee": lambda f: f.end_by_referee(None, "r"), "accept": lambda f: f.accept(),
        "hand_back": lambda f: f.hand_back()}
    assert set(press) == set(FRAME.inputs)
    refused = 0
    for phase, name, cell in FRAME.cells():
        if not isinstance(cell, No):
            continue
        frame = frame_in(phase)
        with pytest.raises(RulesError) as caught:
            press[name](frame)
        rule = "" if cell.invalid else f" ({cell.rule})"
        assert str(caught.value) == f"{name}: {cell.message}{rule}"
        assert caught.value.code == cell.code
        assert isinstance(caught.value, InvalidResult) == cell.invalid
        refused += 1
    assert refused == 14


@pytest.mark.parametrize(("broken", "message"), [
    ({"a": {"go": Go(Phase.PLAY)}}, "has the states"),
    ({"a": {"go": Go(Phase.PLAY)}, "b": {}}, "b has no cell for ['go']"),
    ({"a": {"go": Go(ClockPhase.READY)}, "b": {"go": Ignore("x")}}, "are not states"),
    ({"a": {"go": Go(Phase.PLAY, ("no.such.event",))}, "b": {"go": Ignore("x")}},
     "unknown event types"),
    ({"a": {"go": No("", "refused")}, "b": {"go": Ignore("x")}}, "needs a code"),
])
def test_a_table_with_a_hole_does_not_build(broken: dict[str, Any], message: str) -> None:
    from enum import StrEnum

    class Two(StrEnum):
        A = "a"
        B = "b"

    table = {Two(k): {i: (Go(Two.B, c.makes) if isinstance(c, Go) and c.to is Phase.PLAY
                           else c) for i, c in row.items()} for k, row in broken.items()}
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Machine("two", Two, ("go",), table, events={"clock.started"})


# -- 3. the tables are what the product does ----------------------------------------------

T0 = 1_000_000.0
PROFILE = Profile(shot_ms=3000, full_rounds=1, step_ms=500, floor_ms=2000, extension_ms=1500,
                  warnings_ms=(2000, 1000), slow_play_ms=3000)
CALL = Call("bottom_left", ["right_bottom"], ["cue>colour"])
ROUTE = Route("bottom_left", ["cue>colour", "right_bottom"])


def _clocks_in_every_phase() -> dict[ClockPhase, TableClock]:
    """A clock in each phase (frame_over after a technical loss)."""
    out = {}
    for phase, steps in {
        ClockPhase.READY: [],
        ClockPhase.RUNNING: [Start()],
        ClockPhase.PAUSED: [Start(), Pause()],
        ClockPhase.EXPIRED: [Start(), "expire"],
        ClockPhase.FRAME_OVER: [Foul(reason="x"), HandBack(), Foul(reason="x")],
    }.items():
        clock = TableClock(["A", "B"], profile=PROFILE)
        clock.open(T0)
        at = T0
        for step in steps:
            at += 100
            if step == "expire":
                at += 10_000
                clock.advance(at)
            else:
                clock.handle(step, at)  # type: ignore[arg-type]
        assert clock.phase is phase
        out[phase] = clock
    return out


class Moves:
    """Every move of every machine while it is installed: (machine, state, input, outcome
    or the state undo went back to, state after)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.all: list[tuple[str, str, str, str | None, str]] = []
        original = Current.apply

        def apply(current: Current[Any], name: str, outcome: str | None = None, *,
                  back: Any = None) -> Any:
            before = current.state
            after = original(current, name, outcome, back=back)
            self.all.append((current.machine.name, before, name,
                             outcome if back is None else str(back), after))
            return after

        monkeypatch.setattr(Current, "apply", apply)

    def since(self, mark: int) -> list[tuple[str, str, str, str | None, str]]:
        return self.all[mark:]


def _declared(moves: list[tuple[str, str, str, str | None, str]]) -> tuple[set[str], set[str]]:
    """The events the cells of these moves may make, and those they always make."""
    may: set[str] = set()
    always: set[str] = set()
    for machine, state, name, _, _ in moves:
        cell = MACHINES[machine].cell(MACHINES[machine].states(state), name)
        if isinstance(cell, Go | Back):
            always |= set(cell.makes)
            may |= set(cell.makes) | set(cell.may if isinstance(cell, Go) else ())
    return may, always


def _check_events(events: list[Event], moves: list[tuple[str, str, str, str | None, str]],
                  what: str) -> None:
    made = {e.type for e in events}
    may, always = _declared(moves)
    assert made <= may, f"{what}: {sorted(made - may)} made but no cell declares them: {moves}"
    assert always <= made, f"{what}: {sorted(always - made)} declared always, not made: {moves}"


def _command(rng: random.Random, name: str, clock: TableClock) -> Command:
    on_break = not clock.match.frame.break_done
    if name == "foul":
        return rng.choice([Foul(reason="touched a ball"), Foul(reason="x", player=1 - clock.player),
                           Foul(code="out_of_turn"), Foul(code="push_shot")])
    if name == "new_frame":
        return NewFrame(winner=rng.choice([None, 0, 1]), reason=rng.choice([None, "abandoned"]))
    if name == "new_match":
        return NewMatch(reason="abandoned", race_to=rng.choice([None, 1, 2]),
                        timer=rng.random() < 0.8,
                        match_limit_ms=rng.choice([None, 4000, 9000]),
                        at_match_limit=rng.choice(sorted(AT_LIMIT)))
    if name == "result":
        whites = rng.choice([0, 0, 1, 1, 2, 3, 4])
        if on_break:
            return Result(whites_potted=whites, legal_break=rng.random() < 0.8,
                          colour_potted=rng.random() < 0.1)
        if rng.random() < 0.15:  # the coloured ball, called and potted (3.2) or not
            return Result(colour_potted=True, call=CALL, route=ROUTE)
        return Result(whites_potted=whites,
                      referee_foul=rng.choice([None, None, None, None, "push shot"]))
    return {
        "start": Start(), "shot": Shot(), "extension": Extension(), "pause": Pause(),
        "resume": Resume(), "turn": Turn(), "hand_back": HandBack(), "undo": Undo(),
        "set_time": SetTime(remaining_ms=rng.choice([1, 500, 2500])),
        "call": AnnounceCall(pocket="bottom_left", cushions=["right_bottom"],
                             contacts=["cue>colour"]),
        "shot_clock_on": ShotClockOn(reason="slow play", scope=rng.choice(["frame", "match"])),
    }[name]


def _referee(seed: int, moves: Moves, steps: int = 160) -> None:
    """One random referee: presses (mostly legal ones), waits, restarts."""
    rng = random.Random(seed)
    clock = TableClock(["A", "B"], timer=rng.random() < 0.8, profile=PROFILE,
                       race_to=rng.choice([None, 1, 2, 3]),
                       match_limit_ms=rng.choice([None, 4000, 9000, 20_000, 660_000]),
                       at_match_limit=rng.choice(sorted(AT_LIMIT)))
    now = T0
    mark = len(moves.all)
    _check_events(clock.open(now), moves.since(mark), "open")
    for _ in range(steps):
        roll = rng.random()
        if roll < 0.25:  # time passes; the runtime wakes the clock at each deadline
            target = now + rng.choice([100, 700, 1500, 3500, 3500, 60_000])
            while (wake := clock.next_wakeup()) is not None and wake <= target:
                mark = len(moves.all)
                _check_events(clock.advance(wake), moves.since(mark), "advance")
                now = wake
            now = target
            continue
        if roll < 0.28:  # the service restarts (a kill, or the power)
            mark = len(moves.all)
            events = clock.recover(now - rng.choice([0, 300]), now,
                                   power_lost=rng.random() < 0.5)
            _check_events(events, moves.since(mark), "recover")
            continue
        allowed = clock.allowed(now)
        name = rng.choice(allowed if allowed and rng.random() < 0.9 else COMMAND_INPUTS)
        command = _command(rng, name, clock)
        mark = len(moves.all)
        try:
            events = clock.handle(command, now)
        except (RuleRefusal, InvalidCommand):
            assert not [m for m in moves.since(mark) if m[0] == "clock" and m[2] == name]
            continue
        finally:
            frame = clock.match.frame
            assert frame.phase is frame._phase_of_facts(), (seed, name, frame.to_dict())
        made = moves.since(mark)
        # Exactly one move of the clock for the command (undo: then "undone" if it ran).
        assert [m[2] for m in made if m[0] == "clock" and m[2] in COMMAND_INPUTS] == [name]
        _check_events(events, made, name)
        now += rng.choice([0, 50])


SEEDS = range(60)


@pytest.fixture(scope="module")
def walked() -> list[tuple[str, str, str, str | None, str]]:
    with pytest.MonkeyPatch.context() as patch:
        moves = Moves(patch)
        for seed in SEEDS:
            _referee(seed, moves)
        # The frame's rarer moves, on the frame itself: a breaker who fouled before the
        # break (a time foul) and loses the frame on an illegal break (10.5, D6).
        frame = FrameRules()
        frame.record_foul(0, "12.4", "time")
        frame.hand_back()
        frame.shot(ShotResult(legal_break=False))
        assert frame.phase is Phase.OVER
        return list(moves.all)


def test_random_referees_check_every_command_against_its_cell(
        walked: list[tuple[str, str, str, str | None, str]]) -> None:
    assert len(walked) > 5000  # the checks ran inside the walk (_referee)


@pytest.mark.parametrize("name", list(MACHINES))
def test_every_move_the_table_allows_is_made(
        name: str, walked: list[tuple[str, str, str, str | None, str]]) -> None:
    machine = MACHINES[name]
    # Undo goes back to whatever phase its step was taken in: any one of them counts.
    made = {(state, inp, None if isinstance(machine.cell(state, inp), Back) else outcome)
            for m, state, inp, outcome, _ in walked if m == name}
    wanted = set()
    for state, inp, cell in machine.cells():
        if isinstance(cell, Go):
            wanted |= {(state, inp, None), *((state, inp, o) for o in cell.instead)}
        elif isinstance(cell, Back):
            wanted.add((state, inp, None))
    assert sorted(wanted - made) == []
    # ... and nothing else: a move outside the table cannot be made (Current.apply).
    assert made <= wanted


def test_the_clock_phases_are_the_wire_strings() -> None:
    assert [str(p) for p in PHASES] == ["ready", "running", "paused", "expired", "frame_over"]
    assert [str(p) for p in MatchClockPhase] == ["waiting", "running", "paused", "expired",
                                                 "stopped"]


# -- 4. the documents made from the tables ---------------------------------------------------

def test_the_generated_documents_are_current() -> None:
    """docs/state-machines.md (the diagrams) and web_ui/static/js/phases.js are what the
    tables make now (docs/asyncapi.json: tests/test_asyncapi.py)."""
    from clock_service.edges.api import machines

    for path, make in ((machines.PHASES_JS, machines.phases_js),
                       (machines.STATE_MACHINES_MD, machines.state_machines_md)):
        assert path.read_text(encoding="utf-8") == make(), (
            f"{path} is stale: run `python -m clock_service.edges.api.asyncapi` and commit")


def test_a_stale_document_is_found(tmp_path: Path) -> None:
    from clock_service.edges.api.asyncapi import GENERATED, main, stale
    from clock_service.edges.api.machines import PHASES_JS, STATE_MACHINES_MD, phases_js

    assert {PHASES_JS, STATE_MACHINES_MD} <= set(GENERATED)  # written and checked with it

    path = tmp_path / "phases.js"
    path.write_text(phases_js().replace('"frame_over"', '"frame-over"'))
    assert stale({path: phases_js}) == [path]
    path.write_text(phases_js())
    assert stale({path: phases_js}) == []
    assert main(["--check", "-o", str(tmp_path / "missing.json")]) == 1


def test_the_diagrams_draw_every_move_of_the_tables() -> None:
    """Read back from the committed file: each machine's diagram has an arrow for every
    move its table allows, and no other."""
    from clock_service.edges.api.machines import STATE_MACHINES_MD

    text = STATE_MACHINES_MD.read_text()
    diagrams = [block.split("```")[0] for block in text.split("```mermaid\n")[1:]]
    assert len(diagrams) == 3
    for machine, diagram in zip((CLOCK, MATCH_CLOCK, FRAME), diagrams, strict=True):
        drawn = set()
        for line in diagram.splitlines()[2:]:
            arrow, labels = line.strip().split(": ", 1)
            source, target = arrow.split(" --> ")
            drawn |= {(source, label, target) for label in labels.split(", ")}
        moves = set()
        for state, name, cell in machine.cells():
            if isinstance(cell, Go):
                moves.add((str(state), name, str(cell.to)))
                moves |= {(str(state), f"{name} ({o})", str(t)) for o, t in cell.instead.items()}
        assert drawn == moves, machine.name
