"""A state machine as one table, and the one function that moves it (h11's ``_state.py``).

The core's three machines, the table's clock (``transitions``), the match clock
(``match_clock``) and the frame's rules (``rules.frame``), are each one table: state ->
input -> a cell. The cell says what the input does in that state:

- ``Go``: where it leads, the events the move makes (``makes``: always; ``may``: when the
  rules or the time say so) and, when the rules decide otherwise, where it leads instead
  (``instead``: an outcome named by the caller -> the state);
- ``Back``: undo: back to the state of the step taken back;
- ``Ignore``: nothing happens (an internal input that does not apply here);
- ``No``: refused, with the code, the message and the rule the refusal cites.

``Machine`` checks when it is built that its table is total (every state has a cell for
every input) and closed (every target is one of its states, every event a known one).
``Current`` holds one machine's state: ``apply`` is the only code that moves it; a state
read back from the store comes in through ``restore``, and nothing else assigns one
(tests/test_state_machines.py walks the source for it).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from operator import attrgetter
from typing import Any, Generic, TypeVar

__all__ = ["Go", "Back", "Ignore", "No", "Cell", "Machine", "Current", "mermaid",
           "moves_table", "refusals_table"]

S = TypeVar("S", bound=StrEnum)


@dataclass(frozen=True)
class Go(Generic[S]):
    """The input leads to ``to`` (or, for an outcome the caller names, to ``instead[it]``)."""

    to: S
    makes: tuple[str, ...] = ()
    may: tuple[str, ...] = ()
    instead: Mapping[str, S] = field(default_factory=dict)

    def targets(self) -> tuple[S, ...]:
        return (self.to, *(t for t in self.instead.values() if t != self.to))


@dataclass(frozen=True)
class Back:
    """Undo: the machine goes back to the state of the step taken back (read back with the
    rest of that step's state)."""

    makes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ignore:
    """The input changes nothing in this state and makes no event; ``why`` says why."""

    why: str


@dataclass(frozen=True)
class No:
    """The input is refused in this state: a stable ``code``, the ``message`` (the fact;
    the owner adds the command and the state) and the ``rule`` it cites, where one does.
    ``invalid``: the request describes what cannot happen here (422), not what the rules
    forbid now (409)."""

    code: str
    message: str
    rule: str | None = None
    invalid: bool = False


Cell = Go[S] | Back | Ignore | No


class Machine(Generic[S]):
    """One table: ``table[state][input]`` is a ``Cell``. Built once, at import."""

    def __init__(self, name: str, states: type[S], inputs: Sequence[str],
                 table: Mapping[S, Mapping[str, Cell[S]]], *,
                 events: Collection[str] | None = None) -> None:
        self.name = name
        self.states = states
        self.inputs = tuple(inputs)
        self.table = table
        self._check(events)

    def _check(self, events: Collection[str] | None) -> None:
        """Total and closed, or a ValueError naming the first hole (the module fails to import)."""
        if len(set(self.inputs)) != len(self.inputs):
            raise ValueError(f"{self.name}: an input is listed twice: {self.inputs}")
        if set(self.table) != set(self.states):
            raise ValueError(f"{self.name}: the table has the states {sorted(self.table)}, "
                             f"not {sorted(self.states)}")
        for state, row in self.table.items():
            if set(row) != set(self.inputs):
                raise ValueError(f"{self.name}: {state} has no cell for "
                                 f"{sorted(set(self.inputs) - set(row))}, or one for an "
                                 f"unknown input in {sorted(set(row) - set(self.inputs))}")
            for name, cell in row.items():
                where = f"{self.name}: ({state}, {name})"
                if not isinstance(cell, Go | Back | Ignore | No):
                    raise ValueError(f"{where}: {cell!r} is no cell")
                if isinstance(cell, No) and not (cell.code and cell.message):
                    raise ValueError(f"{where}: a refusal needs a code and a message")
                if isinstance(cell, Go):
                    stray = [t for t in cell.targets() if not isinstance(t, self.states)]
                    if stray:
                        raise ValueError(f"{where}: {stray} are not states of {self.name}")
                if isinstance(cell, Go | Back):
                    made = (*cell.makes, *(cell.may if isinstance(cell, Go) else ()))
                    unknown = sorted(set(made) - set(events)) if events is not None else []
                    if unknown:
                        raise ValueError(f"{where}: unknown event types {unknown}")

    def __copy__(self) -> Machine[S]:
        return self  # a table never changes: copies of a clock share it

    def __deepcopy__(self, memo: dict[int, Any]) -> Machine[S]:
        return self

    def cell(self, state: S, name: str) -> Cell[S]:
        return self.table[state][name]

    def cells(self) -> Iterator[tuple[S, str, Cell[S]]]:
        """Every (state, input, cell): the states in their enum's order, the inputs in
        ``inputs``' order."""
        for state in self.states:
            for name in self.inputs:
                yield state, name, self.table[state][name]

    def legal(self, name: str) -> frozenset[S]:
        """The states in which ``name`` is not refused."""
        return frozenset(s for s in self.states if not isinstance(self.table[s][name], No))

    def refusals(self) -> Iterator[No]:
        for _, _, cell in self.cells():
            if isinstance(cell, No):
                yield cell


class Current(Generic[S]):
    """The state of one machine. ``apply`` moves it by the table; ``restore`` puts back a
    state read from the store (or a correction's snapshot that is put back whole)."""

    __slots__ = ("machine", "_state")

    def __init__(self, machine: Machine[S], state: S) -> None:
        self.machine = machine
        self._state = machine.states(state)

    # Read-only (no setter), read in C: the phases are read on every step and every state.
    state: S = property(attrgetter("_state"))  # type: ignore[assignment]

    def acts(self, name: str) -> bool:
        """Whether ``name`` does anything here (its cell is no ``Ignore`` and no ``No``)."""
        return isinstance(self.machine.table[self._state][name], Go | Back)

    def apply(self, name: str, outcome: str | None = None, *, back: S | None = None) -> S:
        """The one move: ``name`` (with the ``outcome`` the rules gave, or, for undo, the
        state it goes ``back`` to) moves the machine where its table says; the new state.

        Applying a refused input is a bug (the owner checks legality first): it raises
        ``AssertionError`` naming the cell, and the state stays as it was."""
        cell = self.machine.table[self._state][name]
        where = f"{self.machine.name}: {name} in {self._state}"
        if isinstance(cell, Go):
            if outcome is None:
                to = cell.to
            elif outcome in cell.instead:
                to = cell.instead[outcome]
            else:
                raise AssertionError(f"{where}: the table has no outcome {outcome!r}")
        elif isinstance(cell, Back):
            if back is None or outcome is not None:
                raise AssertionError(f"{where}: undo needs the state it goes back to")
            to = back
        elif isinstance(cell, Ignore):
            if outcome is not None or back is not None:
                raise AssertionError(f"{where}: ignored, yet given an outcome")
            return self._state
        else:
            raise AssertionError(f"{where}: the table refuses it ({cell.code})")
        if not isinstance(to, self.machine.states):  # a Go's targets were checked at build
            raise AssertionError(f"{where}: {to!r} is not a state")
        self._state = to
        return to

    def restore(self, state: S | str) -> None:
        """A state read back from the store: not a move of the table."""
        self._state = self.machine.states(state)

    def __repr__(self) -> str:
        return f"Current({self.machine.name}: {self._state})"


# -- the table as text (docs/state-machines.md is written from these) ---------------------

def _names(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def moves_table(machine: Machine[S]) -> str:
    """Every move the table allows, one row per (state, input): where it leads (and where
    instead, for what the rules made of it) and the events it makes."""
    events = any(isinstance(c, Go | Back) and c.makes or isinstance(c, Go) and c.may
                 for _, _, c in machine.cells())
    head = ["in", "input", "leads to", *(("makes", "may make") if events else ())]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for state, name, cell in machine.cells():
        if isinstance(cell, Go):
            to = "; ".join([f"`{cell.to}`",
                            *(f"{outcome}: `{t}`" for outcome, t in cell.instead.items())])
            made = [_names(cell.makes), _names(cell.may)]
        elif isinstance(cell, Back):
            to, made = "back to the state of the step taken back", [_names(cell.makes), ""]
        else:
            continue
        lines.append(" | ".join([f"| `{state}`", f"`{name}`", to, *(made if events else ())])
                     + " |")
    return "\n".join(lines) + "\n"


def refusals_table(machine: Machine[S]) -> str:
    """Input by state: the code (and rule) of each refusal; ✓ where it moves, · where it
    changes nothing."""
    states = list(machine.states)
    lines = ["| input | " + " | ".join(f"`{s}`" for s in states) + " |",
             "| --- |" + " --- |" * len(states)]
    for name in machine.inputs:
        cells = []
        for state in states:
            cell = machine.table[state][name]
            if isinstance(cell, No):
                cells.append(f"`{cell.code}`" + (f" ({cell.rule})" if cell.rule else ""))
            else:
                cells.append("·" if isinstance(cell, Ignore) else "✓")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def mermaid(machine: Machine[S], initial: S) -> str:
    """The moves as a Mermaid state diagram: one arrow per pair of states, labelled with
    every input (and outcome) that leads along it. Undo, which goes back to whichever
    state its step was taken in, and the inputs that change nothing are left to the
    tables."""
    arrows: dict[tuple[S, S], list[str]] = {}
    for state, name, cell in machine.cells():
        if isinstance(cell, Go):
            arrows.setdefault((state, cell.to), []).append(name)
            for outcome, to in cell.instead.items():
                arrows.setdefault((state, to), []).append(f"{name} ({outcome})")
    lines = ["stateDiagram-v2", f"    [*] --> {initial}"]
    for (source, target), names in arrows.items():
        lines.append(f"    {source} --> {target}: {', '.join(names)}")
    return "\n".join(lines) + "\n"
