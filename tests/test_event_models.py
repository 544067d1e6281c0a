"""Every event the core emits matches its model (issue 18 point 3).

Each event type is defined once (clock_service/core/events.py ``EVENTS``: name, payload
TypedDict, description); the core makes every event through its type, and schemas.py
derives the payload's model and the message model from that. Here the runtime, over the
real cores with the fake clock and a real SQLite file, plays scripted matches that make
every event type at least once, and each event, as its JSON goes on the wire and into the
store, is validated strictly against its model: the envelope, ``data`` and the ``state``.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any, NotRequired, TypedDict, get_type_hints

import pytest
from pydantic import Field, ValidationError

from clock_service.core.commands import parse_command
from clock_service.core.events import EVENT_TYPES, EVENTS, INDEXED_TYPES
from clock_service.edges.api.asyncapi import EVENT_MESSAGES
from clock_service.service.hub import Hub, encode
from clock_service.service.runtime import Runtime
from clock_service.service.signing import MatchSigner, Signer
from clock_service.service.storage import Store
from clock_service.service.storage.index import OPENING, REFRESH_TYPES
from clock_service.service.timesource import FakeTime
from clock_service.service.wire.events import EVENT_MODELS, PAYLOAD_MODELS, _payload
from tests.waiting import settle, until_async

SHORT = {"shot_ms": 3000, "floor_ms": 2000, "step_ms": 500, "extension_ms": 2000,
         "warnings_ms": [2000, 1000]}
HOUR = 3_600_000


class Recorded:
    """The runtime, and every event it made, as JSON text, in order."""

    def __init__(self, runtime: Runtime, time: FakeTime) -> None:
        self.runtime = runtime
        self.time = time
        self.texts: list[str] = []
        runtime.listen(
            lambda table_id, wires, state: self.texts.extend(encode(w) for w in wires))

    async def ok(self, table: str, command: str, **fields: Any) -> list[str]:
        """The types of the events the command made."""
        before = len(self.texts)
        await self.runtime.command(table, parse_command({"command": command, **fields}))
        return self.types(before)

    def types(self, since: int) -> list[str]:
        """The types since, without the signatures: they come when the signer is done."""
        import json

        kinds = [json.loads(text)["type"] for text in self.texts[since:]]
        return [kind for kind in kinds if kind != "match.signed"]


async def _play(db: Path) -> list[str]:
    time = FakeTime()
    runtime = Runtime(Store(db), time, Hub())
    await runtime.start(default_table=None)
    rec = Recorded(runtime, time)
    # Each match's record is signed when it ends (match.signed; serve attaches the signer).
    signer = MatchSigner(runtime, Signer(db.with_suffix(".key")))
    signer.attach()
    try:
        await runtime.create_table("c", ["Ivanov", "Petrov"], profile=SHORT, race_to=2,
                                   event="Cup", referee="Orlov")
        assert rec.types(0) == ["table.created", "frame.started"]
        # Frame 1: Ivanov breaks.
        assert await rec.ok("c", "start") == ["clock.started"]
        assert await rec.ok("c", "extension") == ["clock.extended"]
        assert await rec.ok("c", "pause") == ["clock.paused"]
        assert await rec.ok("c", "resume") == ["clock.resumed"]
        assert await rec.ok("c", "shot") == ["clock.stopped"]
        assert await rec.ok("c", "turn") == ["turn"]
        assert await rec.ok("c", "foul", reason="touched a ball") == ["foul", "turn"]
        assert await rec.ok("c", "hand_back") == ["turn"]
        assert await rec.ok("c", "undo", by="referee", reason="misheard") == [
            "correction.undone"]
        assert await rec.ok("c", "set_time", remaining_ms=2500, reason="test") == [
            "clock.corrected"]
        assert await rec.ok("c", "start") == ["clock.started"]
        before = len(rec.texts)
        time.advance(3000)  # the warnings at 2 s and 1 s, then the expiry (12.4)
        assert rec.types(before) == ["clock.warning", "clock.warning", "clock.expired",
                                     "foul", "turn"]
        assert await rec.ok("c", "new_frame", reason="abandoned") == [
            "frame.ended", "frame.started"]
        # Frame 2: Petrov breaks; a foul with balls to put back.
        assert await rec.ok("c", "start") == ["clock.started"]
        assert await rec.ok("c", "shot") == ["clock.stopped"]
        assert await rec.ok("c", "result", whites_potted=2, legal_break=True) == [
            "shot.result"]
        assert await rec.ok("c", "start") == ["clock.started"]
        assert await rec.ok("c", "shot") == ["clock.stopped"]
        assert await rec.ok("c", "result", whites_potted=1, referee_foul="push shot") == [
            "shot.result", "foul", "respot", "turn"]
        assert await rec.ok("c", "new_frame", winner=1, reason="walkover") == [
            "frame.ended", "frame.started"]
        # Frame 3: Ivanov breaks, nothing credited; Petrov pots the called colour (7.1,
        # 3.2): 0-2, the match.
        assert await rec.ok("c", "start") == ["clock.started"]
        assert await rec.ok("c", "shot") == ["clock.stopped"]
        assert await rec.ok("c", "result", whites_potted=0, legal_break=True) == [
            "shot.result", "turn"]
        assert await rec.ok("c", "start") == ["clock.started"]
        assert await rec.ok("c", "call", pocket="bottom_left", cushions=["right_bottom"],
                            contacts=["cue>colour"], shot_type="early_cushion") == [
            "call.announced"]
        assert await rec.ok("c", "shot") == ["clock.stopped"]
        assert await rec.ok("c", "result", colour_potted=True, route={
            "pocket": "bottom_left", "path": ["cue>colour", "right_bottom"]}) == [
            "shot.result", "frame.ended", "match.ended"]
        # The next matches: one without the shot clock, switched on for one frame (12.1).
        assert await rec.ok("c", "new_match", players=["Sidorov", "Petrov"], race_to=1) == [
            "match.started", "frame.started"]
        assert await rec.ok("c", "new_match", timer=False, reason="slow-play check") == [
            "match.started", "frame.started"]
        assert await rec.ok("c", "shot_clock_on", reason="play is stalled",
                            scope="frame") == ["shot_clock.on"]
        assert await rec.ok("c", "new_frame", winner=0, reason="conceded") == [
            "frame.ended", "shot_clock.off", "match.ended"]
        # A match with a time limit (12.1): its clock starts with the break, pauses with
        # the referee, warns, expires; level at the limit, a tie-break frame is applied.
        await runtime.create_table("m", ["Ivanov", "Petrov"], timer=False, race_to=3,
                                   match_limit_ms=HOUR, at_match_limit="tie_break_frame")
        assert await rec.ok("m", "start") == ["clock.started", "match_clock.started"]
        assert await rec.ok("m", "pause") == ["clock.paused", "match_clock.paused"]
        assert await rec.ok("m", "resume") == ["clock.resumed", "match_clock.resumed"]
        before = len(rec.texts)
        time.advance(HOUR)
        assert rec.types(before) == ["match_clock.warning", "match_clock.warning",
                                     "match_clock.expired"]
        assert "match_clock.applied" in await rec.ok("m", "new_frame", reason="abandoned")
        ended = rec.types(0).count("match.ended")
        # the signatures are made off the loop, then recorded
        await until_async(lambda: signer.signed == ended, 10, 0.005, "the signatures")
        assert signer.signed == ended >= 1, (signer.signed, ended)
        signer.detach()
        # A clock running when the service stops comes back paused (restart).
        await runtime.create_table("r", ["A", "B"], profile=SHORT)
        await rec.ok("r", "start")
        await settle(runtime)
    finally:
        await runtime.stop()
    again = Runtime(Store(db), time, Hub())
    rec.runtime = again
    again.listen(
        lambda table_id, wires, state: rec.texts.extend(encode(w) for w in wires))
    before = len(rec.texts)
    await again.start(default_table=None)
    try:
        assert rec.types(before) == ["clock.paused"]
        await again.archive_table("r")
        assert rec.types(before)[-1] == "table.archived"
        await settle(again)
    finally:
        await again.stop()
    return rec.texts


def test_every_event_the_core_emits_matches_its_model(tmp_path: Path) -> None:
    import json

    texts = asyncio.run(_play(tmp_path / "events.db"))
    seen = set()
    for text in texts:
        kind = json.loads(text)["type"]
        model = EVENT_MODELS.get(kind)
        assert model is not None, f"{kind!r} is not defined in events.EVENTS: {text}"
        try:
            model.model_validate_json(text, strict=True)
        except ValidationError as exc:
            pytest.fail(f"{kind} does not match {model.__name__}:\n{exc}\n{text}")
        seen.add(kind)
    assert seen == EVENT_TYPES, f"never emitted: {EVENT_TYPES - seen}"


def test_a_field_the_model_does_not_define_fails() -> None:
    """The validation above can fail: an extra field in data, or a field missing."""
    import json

    event = {"type": "clock.extended", "seq": 1, "table": "1", "at": 1,
             "data": {"player": 0, "extension_ms": 2000, "remaining_ms": 100,
                      "deadline": None, "surprise": 1}, "state": {}}
    with pytest.raises(ValidationError) as info:
        EVENT_MODELS["clock.extended"].model_validate_json(json.dumps(event), strict=True)
    assert "surprise" in str(info.value)


def test_every_list_of_event_types_comes_from_the_one_definition() -> None:
    assert list(EVENT_MODELS) == list(EVENTS) and set(EVENTS) == EVENT_TYPES
    for name, kind in EVENTS.items():
        model = EVENT_MODELS[name]
        assert model.__name__ == kind.message
        data = model.model_fields["data"].annotation
        assert data is PAYLOAD_MODELS[kind.payload]
        assert data.__name__ == kind.payload.__name__
        assert EVENT_MESSAGES[name] == (model, kind.description)
    # The match index reads exactly the events the definition marks: those opening a
    # match, those changing its summary, and the archive.
    assert OPENING | REFRESH_TYPES | {"table.archived"} == INDEXED_TYPES <= EVENT_TYPES


def test_each_payload_model_has_exactly_its_payloads_fields() -> None:
    """The model of each payload is derived from its TypedDict: the same fields in the same
    order, required exactly where the payload requires them (absent ones default to null)."""
    for kind in EVENTS.values():
        model = PAYLOAD_MODELS[kind.payload]
        assert list(model.model_fields) == list(get_type_hints(kind.payload)), kind.name
        required = {name for name, info in model.model_fields.items() if info.is_required()}
        assert required == kind.payload.__required_keys__, kind.name


# Written as a call: with this module's string annotations, Python 3.11's TypedDict would
# not see NotRequired (events.py has none for that reason).
_Sample = TypedDict("_Sample", {"player": int, "note": NotRequired[str]})  # noqa: UP013


def test_a_model_cannot_differ_from_its_payload() -> None:
    """The derivation refuses, at import, a field the payload does not have and a default
    that disagrees with the payload's NotRequired."""
    ok = _payload(_Sample, note=(str | None, Field(None, description="absent unless given")))
    assert list(ok.model_fields) == ["player", "note"]
    with pytest.raises(RuntimeError, match="not fields of its payload"):
        _payload(_Sample, note=(str | None, Field(None)), surprise=int)
    with pytest.raises(RuntimeError, match="may leave it out"):
        _payload(_Sample)  # note has no default
    with pytest.raises(RuntimeError, match="requires it"):
        _payload(_Sample, player=(int, Field(0)), note=(str | None, Field(None)))


def test_the_service_makes_events_only_through_their_types() -> None:
    """No ``Event(...)`` outside events.py: every payload is written against its TypedDict
    (``CLOCK_STARTED({...})``), so mypy checks its fields where it is made."""
    root = Path(__file__).resolve().parents[1] / "clock_service"
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "core" / "events.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "Event"):
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    assert found == []
