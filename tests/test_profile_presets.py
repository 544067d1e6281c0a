"""Profiles as presets: every profile field through the core, table-driven on a fake
time; each built-in preset against the numbers its source cites; a federation's own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clock_service.core import presets
from clock_service.core.clock import TableClock
from clock_service.core.commands import Extension, NewFrame, NewMatch, Result, Shot, Start, Turn
from clock_service.core.errors import InvalidProfile, RuleRefusal
from clock_service.core.presets import PresetError, PresetLibrary
from clock_service.core.profile import PROFILE_FIELDS, Profile

T0 = 1_000_000.0


def clock_with(profile: Profile | dict, **kwargs: object) -> TableClock:
    built = profile if isinstance(profile, Profile) else presets.build_profile(profile)
    clock = TableClock(["Ivanov", "Petrov"], profile=built, **kwargs)  # type: ignore[arg-type]
    clock.open(T0)
    return clock


def break_then(clock: TableClock, *, breaker_keeps: bool) -> None:
    """The break timed (start, shot) and its result: whites potted or not (4.6-4.7)."""
    clock.handle(Start(), T0)
    clock.handle(Shot(), T0 + 1000)
    clock.handle(Result(legal_break=True, whites_potted=1 if breaker_keeps else 0), T0 + 2000)


# -- each preset against its cited numbers ----------------------------------------------
# (preset, shot limits of rounds 1..6, extension_ms, extensions per frame, in the deciding
#  frame, after-break limit, warnings)
CITED = [
    ("section-12", [35000, 35000, 30000, 25000, 20000, 20000], 15000, 1, 1, None,
     [10000, 5000, 4000, 3000, 2000, 1000]),
    ("wpa-20", [35000] * 6, 25000, 1, 1, 60000, [10000]),
    ("mosconi", [30000] * 6, 30000, 1, 1, None, [10000, 5000, 4000, 3000, 2000, 1000]),
    ("deciding-frame-2-extensions", [35000, 35000, 30000, 25000, 20000, 20000], 15000, 1, 2,
     None, [10000, 5000, 4000, 3000, 2000, 1000]),
]


@pytest.mark.parametrize(("name", "limits", "extension", "per_frame", "deciding", "after_break",
                          "warnings"), CITED, ids=[c[0] for c in CITED])
def test_preset_holds_its_cited_numbers(name: str, limits: list[int], extension: int,
                                        per_frame: int, deciding: int, after_break: int | None,
                                        warnings: list[int]) -> None:
    preset = presets.library().get(name)
    profile = preset.profile
    assert [profile.shot_limit(r) for r in range(1, 7)] == limits
    assert profile.extension_ms == extension
    assert (profile.extensions(False), profile.extensions(True)) == (per_frame, deciding)
    assert profile.after_break_ms == after_break
    assert list(profile.warnings_ms) == warnings
    assert profile.preset == name
    assert preset.source and preset.builtin
    # The numbers the source sentence cites are in it (seconds).
    for seconds in {limits[0] // 1000, extension // 1000}:
        assert f"{seconds} s" in preset.source, preset.source


def test_section_12_preset_is_the_default_profile() -> None:
    assert presets.library().get("section-12").profile == Profile(preset="section-12")
    assert Profile.from_partial(None) == Profile()


def test_wpa_20_in_play_60_s_after_the_break_then_35_s_warning_at_10_s() -> None:
    clock = clock_with({"preset": "wpa-20"})
    assert clock.state(T0)["limit_ms"] == 35000  # the break itself
    break_then(clock, breaker_keeps=False)  # the turn passes: the opponent's first shot
    assert (clock.player, clock.state(T0 + 2000)["limit_ms"]) == (1, 60000)
    clock.handle(Start(), T0 + 3000)
    clock.handle(Shot(), T0 + 4000)
    assert clock.state(T0 + 4000)["limit_ms"] == 35000
    clock.handle(Start(), T0 + 5000)
    events = clock.advance(T0 + 5000 + 25000)
    assert [(e.type, e.data["threshold_ms"]) for e in events] == [("clock.warning", 10000)]
    assert clock.advance(T0 + 5000 + 30000) == []  # no other warning: only 10 s
    clock.handle(Extension(), T0 + 5000 + 30000)
    assert clock.remaining_ms(T0 + 5000 + 30000) == 5000 + 25000
    with pytest.raises(RuleRefusal, match=r"already used the extension this frame \(12.5\)"):
        clock.handle(Extension(), T0 + 5000 + 31000)


def test_after_break_limit_for_the_breaker_who_keeps_the_table() -> None:
    clock = clock_with({"preset": "wpa-20"})
    break_then(clock, breaker_keeps=True)
    assert (clock.player, clock.state(T0 + 2000)["limit_ms"]) == (0, 60000)


def test_after_break_limit_when_the_break_was_not_timed() -> None:
    clock = clock_with({"after_break_ms": 45000})
    clock.handle(Result(legal_break=True), T0)  # the break's result only
    assert clock.state(T0)["limit_ms"] == 45000
    clock.handle(Turn(), T0)  # the first shot after the break was never played
    assert clock.state(T0)["limit_ms"] == 45000
    clock.handle(Start(), T0)
    clock.handle(Shot(), T0 + 100)
    assert clock.state(T0 + 100)["limit_ms"] == 35000


def test_mosconi_30_s_every_round_one_30_s_extension() -> None:
    clock = clock_with({"preset": "mosconi"})
    for _ in range(9):
        clock.handle(Turn(), T0)
    assert (clock.round, clock.state(T0)["limit_ms"]) == (5, 30000)
    clock.handle(Start(), T0)
    clock.handle(Extension(), T0 + 10000)
    assert clock.remaining_ms(T0 + 10000) == 50000


# -- extensions in the deciding frame -------------------------------------------------------
@pytest.mark.parametrize(
    ("race_to", "awards", "deciding", "extensions"),
    [
        (3, [0, 1, 0, 1], True, 2),  # 2-2 in a race to 3: hill-hill
        (3, [0, 1], False, 1),       # 1-1: not yet
        (3, [0, 0], False, 1),       # 2-0: not deciding
        (1, [], True, 2),            # a single frame decides the match
        (None, [0, 1, 0, 1], False, 1),  # open-ended: no frame decides
    ],
)
def test_deciding_frame_gets_its_own_extensions(race_to: int | None, awards: list[int],
                                                deciding: bool, extensions: int) -> None:
    clock = clock_with({"preset": "deciding-frame-2-extensions"}, race_to=race_to)
    for winner in awards:
        clock.handle(NewFrame(winner=winner, reason="awarded"), T0)
    state = clock.state(T0)
    assert state["deciding_frame"] is deciding
    assert state["extensions_left"] == [extensions, extensions]
    for _ in range(extensions):
        clock.handle(Extension(), T0)
    with pytest.raises(RuleRefusal) as info:
        clock.handle(Extension(), T0)
    assert info.value.code == "extension_used" and info.value.rule == "12.5"


def test_no_extension_at_all_is_refused_with_the_reason() -> None:
    clock = clock_with({"extensions_per_frame": 0})
    with pytest.raises(RuleRefusal, match="the profile gives no extension in this frame"):
        clock.handle(Extension(), T0)


# -- show_from_ms -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("show_from_ms", "elapsed", "shown"),
    [(None, 0, True), (10000, 0, False), (10000, 24999, False), (10000, 25000, True),
     (10000, 30000, True)],
)
def test_clock_shown_only_from_show_from_ms(show_from_ms: int | None, elapsed: int,
                                           shown: bool) -> None:
    clock = clock_with({"show_from_ms": show_from_ms})
    clock.handle(Start(), T0)
    assert clock.state(T0 + elapsed)["clock_shown"] is shown


def test_clock_shown_without_a_timer() -> None:
    assert clock_with({"show_from_ms": 5000}, timer=False).state(T0)["clock_shown"] is True


# -- every field of the profile: given, round-tripped, and refused when wrong --------------
FIELD_VALUES = {
    "shot_ms": (40000, 0), "full_rounds": (3, -1), "step_ms": (1000, -1),
    "floor_ms": (15000, 50000), "extension_ms": (20000, 0),
    "extensions_per_frame": (2, -1), "warnings_ms": ([3000], [0]),
    "extensions_deciding_frame": (3, -1), "after_break_ms": (60000, 0),
    "show_from_ms": (10000, 0), "slow_play_ms": (60000, 0), "preset": ("mine", ""),
}


def test_every_profile_field_is_in_the_table() -> None:
    assert set(FIELD_VALUES) == set(PROFILE_FIELDS)


@pytest.mark.parametrize("name", sorted(FIELD_VALUES))
def test_profile_field_given_and_refused(name: str) -> None:
    good, bad = FIELD_VALUES[name]
    profile = Profile.from_partial({name: good})
    assert profile.to_dict()[name] == good
    assert Profile.from_partial(profile.to_dict()) == profile  # stored and read back
    with pytest.raises(InvalidProfile, match=name):
        Profile.from_partial({name: bad})


def test_profile_survives_the_clock_store_round_trip() -> None:
    clock = clock_with({"preset": "wpa-20", "show_from_ms": 15000}, race_to=3)
    break_then(clock, breaker_keeps=False)
    again = TableClock.from_dict(json.loads(json.dumps(clock.to_dict())))
    assert again.profile == clock.profile and again.state(T0) == clock.state(T0)


def test_old_stored_state_without_frame_shots_is_past_the_break() -> None:
    clock = clock_with({"preset": "wpa-20"})
    stored = clock.to_dict()
    del stored["frame_shots"]
    assert TableClock.from_dict(stored).state(T0)["limit_ms"] == 35000


# -- a preset named in a table's or a match's profile ------------------------------------
def test_fields_beside_a_preset_override_it() -> None:
    profile = presets.build_profile({"preset": "wpa-20", "extension_ms": 20000})
    assert (profile.preset, profile.shot_ms, profile.extension_ms) == ("wpa-20", 35000, 20000)


@pytest.mark.parametrize(("partial", "fragment"), [
    ({"preset": "nope"}, "unknown preset 'nope'"),
    ({"preset": 5}, "preset must be a name"),
    ({"preset": "wpa-20", "shot_sec": 1}, "unknown profile field"),
])
def test_bad_preset_references_are_refused(partial: dict, fragment: str) -> None:
    with pytest.raises(InvalidProfile, match=fragment):
        presets.build_profile(partial)


def test_new_match_takes_a_preset() -> None:
    clock = clock_with({})
    clock.handle(NewMatch(profile={"preset": "mosconi"}, reason="test"), T0)
    assert clock.profile.preset == "mosconi" and clock.state(T0)["limit_ms"] == 30000


# -- a federation's own presets, without code ----------------------------------------------
def test_federation_directory_adds_presets(tmp_path: Path) -> None:
    (tmp_path / "fbsr-lower.toml").write_text(
        'name = "fbsr-lower"\ntitle = "Lower bracket"\n'
        'source = "Federation regulation 2026, 4.2: 40 s per shot, two 20 s extensions"\n'
        "[profile]\nshot_ms = 40000\nfloor_ms = 40000\nstep_ms = 0\n"
        "extension_ms = 20000\nextensions_per_frame = 2\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("ignored", encoding="utf-8")
    library = PresetLibrary(tmp_path)
    preset = library.get("fbsr-lower")
    assert not preset.builtin and preset.profile.shot_limit(7) == 40000
    assert library.build({"preset": "fbsr-lower"}).extensions(False) == 2
    assert {"section-12", "wpa-20", "mosconi", "fbsr-lower"} <= set(library.presets)


@pytest.mark.parametrize(("text", "fragment"), [
    ('{"name": "x", "title": "t", "source": "s"}', r"missing field\(s\) \['profile'\]"),
    ('{"name": "Bad Name", "title": "t", "source": "s", "profile": {}}', "name must be"),
    ('{"name": "x", "title": "t", "source": "", "profile": {}}', "source: is empty"),
    ('{"name": "x", "title": "t\\u202e", "source": "s", "profile": {}}',
     r"title: U\+202E \(RIGHT-TO-LEFT OVERRIDE\) is a bidirectional control"),
    ('{"name": "x", "title": "t", "source": "s", "profile": {"shot_ms": -1}}',
     "profile: shot_ms"),
    ('{"name": "wpa-20", "title": "t", "source": "s", "profile": {}}', "a built-in name"),
    ("{not json", "not valid JSON"),
])
def test_bad_preset_files_stop_loading_with_the_file_and_reason(
        tmp_path: Path, text: str, fragment: str) -> None:
    (tmp_path / "bad.json").write_text(text, encoding="utf-8")
    with pytest.raises(PresetError, match=fragment) as info:
        PresetLibrary(tmp_path)
    assert "bad.json" in str(info.value)


# -- over HTTP ------------------------------------------------------------------------------
def test_http_presets_listed_and_named_at_table_creation(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from clock_service.edges.cli.main import table_app
    from clock_service.service.settings import Settings
    from clock_service.service.timesource import FakeTime

    own = tmp_path / "presets"
    own.mkdir()
    (own / "club.json").write_text(json.dumps({
        "name": "club", "title": "Club nights", "source": "Club rule 3: 45 s per shot",
        "profile": {"shot_ms": 45000, "floor_ms": 45000, "step_ms": 0}}), encoding="utf-8")
    settings = Settings(db=str(tmp_path / "c.db"), display="none", presets_dir=str(own))
    try:
        with TestClient(table_app(settings, time=FakeTime())) as client:
            listed = client.get("/api/presets").json()
            names = [p["name"] for p in listed]
            assert {"section-12", "wpa-20", "mosconi", "deciding-frame-2-extensions",
                    "club"} <= set(names)
            assert client.get("/api/presets/wpa-20").json()["profile"]["after_break_ms"] == 60000
            assert client.get("/api/presets/nope").status_code == 404
            made = client.post("/api/tables", json={
                "id": "2", "players": ["Ivanov", "Petrov"],
                "profile": {"preset": "club", "extension_ms": 20000}})
            assert made.status_code == 201, made.text
            state = made.json()
            assert (state["profile"]["preset"], state["limit_ms"],
                    state["profile"]["extension_ms"]) == ("club", 45000, 20000)
            bad = client.post("/api/tables", json={
                "id": "3", "players": ["A", "B"], "profile": {"preset": "nope"}})
            assert bad.status_code == 422 and bad.json()["error"]["code"] == "unknown_preset"
            assert client.get("/api/tables/3").status_code == 404
    finally:
        presets.configure(None)
