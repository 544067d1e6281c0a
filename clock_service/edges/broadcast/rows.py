"""A table as one flat row for a video switcher: pure, no I/O.

vMix, TriCaster, Wirecast and OBS read flat data: a JSON array of objects, XML rows
picked by XPath, CSV, or one text file per field. :func:`row` turns a table's state (as
the WebSocket snapshot has it) and its last notable event into that row, at a given
instant: the remaining time is derived from the deadline then (SPEC, "Accuracy"), shown
as the table-side digits show it (clock_service.core.readout: whole seconds rounded up, tenths
at and below 5 s), and ``remaining_ms`` is rounded up to the tenth while the clock runs, so
that a row changes at most ten times a second and every poller of that tenth shares one
encoded body (routes.py).

The field names are the contract of the feeds (docs/broadcast.md, "Columns"): switchers are
bound to them by name (and a CSV by position), so a column is never renamed, dropped or
moved; a new one goes at the end.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from clock_service.core.match_clock import MatchClockPhase
from clock_service.core.readout import render
from clock_service.core.text import csv_cell, markup
from clock_service.core.transitions import ClockPhase

__all__ = ["FIELDS", "LANGS", "NOTABLE", "row", "row_key", "event_text", "to_json",
           "match_time", "NO_DRAW", "around_key",
           "to_xml", "to_csv", "json_row", "xml_row", "csv_row", "CSV_HEADER", "XML_HEAD",
           "XML_TAIL", "TICK_MS"]

LANGS = ("en", "ru")
TICK_MS = 100  # the feeds' time resolution while a clock runs (the digits' own, under 5 s)

# Every column, in order (CSV header, XML child elements, JSON keys).
FIELDS = (
    "table", "player_a", "player_b", "score_a", "score_b", "race_to", "frame", "round",
    "at_table", "at_table_name", "remaining", "remaining_ms", "phase", "stage",
    "extension_used_a", "extension_used_b", "extensions_left_a", "extensions_left_b",
    "fouls_a", "fouls_b", "whites_a", "whites_b", "last_event", "alert", "alert_kind",
    "live", "seq",
    # issue 36: the match around the frame (new columns go at the end: see the docstring)
    "match_clock", "match_clock_ms", "match_clock_stage", "event", "event_round",
    "frame_winner", "frame_winner_name", "match_winner", "match_winner_name", "match_over",
    "next_player_a", "next_player_b", "next_race_to",
)

# What the draw says about a table (the tournament's ``feed_info``; the feeds have no draw
# of their own): the event and round of its match last started from the draw (shown while
# that match, ``match_id``, is the table's), and the match queued next.
NO_DRAW: Mapping[str, Any] = {"match_id": None, "event": None, "event_round": None,
                              "next": None}

# Events worth a line on air. The rest (clock.started/stopped on every shot, shot.result,
# respot) would overwrite the news a producer wants on screen within a second.
NOTABLE = frozenset({
    "frame.started", "frame.ended", "match.started", "match.ended", "clock.paused",
    "clock.resumed", "clock.extended", "clock.warning", "clock.expired", "clock.corrected",
    "correction.undone", "foul", "turn", "call.announced", "shot_clock.on", "shot_clock.off",
    "match_clock.warning", "match_clock.expired",
})

_TEXTS: dict[str, dict[str, str]] = {
    "en": {
        "frame.started": "Frame {frame}: {breaker} breaks",
        "frame.ended": "Frame {frame} to {winner}",
        "frame.ended.none": "Frame {frame} over",
        "match.started": "Match {number}: {a} v {b}",
        "match.ended": "Match to {winner}, {score}",
        "match.ended.none": "Match over, {score}",
        "clock.paused": "Clock paused",
        "clock.resumed": "Clock running again",
        "clock.extended": "Extension: {name}",
        "clock.warning": "{s} seconds",
        "clock.expired": "Time! {name}",
        "clock.corrected": "Time corrected",
        "correction.undone": "Referee correction",
        "foul": "Foul: {name} ({n})",
        "foul.time": "Time foul: {name} ({n})",
        "foul.technical_loss": "Technical loss: {name}",
        "turn": "{name} to the table",
        "call.announced": "Called: {name}",
        "shot_clock.on": "Shot clock on (slow play)",
        "shot_clock.off": "Shot clock off",
        "match_clock.warning": "{m} minutes of the match left",
        "match_clock.expired": "Match time is up",
    },
    "ru": {
        "frame.started": "Партия {frame}, разбой: {breaker}",
        "frame.ended": "Партия {frame}: {winner}",
        "frame.ended.none": "Партия {frame} окончена",
        "match.started": "Матч {number}: {a} — {b}",
        "match.ended": "Матч: {winner}, {score}",
        "match.ended.none": "Матч окончен, {score}",
        "clock.paused": "Время остановлено",
        "clock.resumed": "Время пошло",
        "clock.extended": "Продление: {name}",
        "clock.warning": "{s} с",
        "clock.expired": "Время! {name}",
        "clock.corrected": "Время исправлено",
        "correction.undone": "Исправление судьи",
        "foul": "Фол: {name} ({n})",
        "foul.time": "Фол по времени: {name} ({n})",
        "foul.technical_loss": "Техническое поражение: {name}",
        "turn": "К столу: {name}",
        "call.announced": "Заказ: {name}",
        "shot_clock.on": "Включены часы на удар (затяжка игры)",
        "shot_clock.off": "Часы на удар выключены",
        "match_clock.warning": "До конца матча {m} мин",
        "match_clock.expired": "Время матча истекло",
    },
}


def _seconds(ms: Any) -> str:
    if not isinstance(ms, int | float):
        return ""
    s = ms / 1000
    return str(int(s)) if float(s).is_integer() else f"{s:.1f}"


def event_text(event: Mapping[str, Any] | None, players: list[str], lang: str) -> str:
    """The event as one line a viewer reads, in ``lang`` ("en" or "ru"); "" for none."""
    if not event:
        return ""
    texts = _TEXTS.get(lang, _TEXTS["en"])
    kind = str(event.get("type", ""))
    data: Mapping[str, Any] = event.get("data") or {}

    def name(index: Any) -> str:
        return players[index] if isinstance(index, int) and 0 <= index < len(players) else ""

    key = kind
    if kind == "foul":
        if data.get("technical_loss"):
            key = "foul.technical_loss"
        elif data.get("rule") == "12.4":
            key = "foul.time"
    elif kind in ("frame.ended", "match.ended") and data.get("winner") is None:
        key = kind + ".none"
    template = texts.get(key)
    if template is None:
        return ""
    fouls = data.get("fouls") or []
    player = data.get("player")
    score = data.get("score") or data.get("frames_won") or []
    return template.format(
        frame=data.get("frame", ""), breaker=name(data.get("breaker")),
        winner=name(data.get("winner")), number=data.get("number", ""),
        a=name(0), b=name(1), name=name(player), s=_seconds(data.get("threshold_ms")),
        m=_seconds((data.get("threshold_ms") or 0) / 60),
        n=fouls[player] if isinstance(player, int) and player < len(fouls) else "",
        score=":".join(str(x) for x in score),
    )


def _pair(value: Any, index: int, default: Any = 0) -> Any:
    if isinstance(value, list | tuple) and len(value) > index:
        return value[index]
    return default


def match_time(ms: float) -> str:
    """The match clock as the pages show it (tournament.js formatMatchTime): whole seconds
    rounded up, ``m:ss`` or ``h:mm:ss``."""
    total = math.ceil(max(0.0, ms) / 1000)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _match_clock_left(state: Mapping[str, Any], when: float) -> float | None:
    """The match clock's time left at ``when`` (ms), or None without one."""
    mc = state.get("match_clock")
    if not isinstance(mc, Mapping):
        return None
    if mc.get("phase") == MatchClockPhase.RUNNING and mc.get("deadline") is not None:
        return max(0.0, float(mc["deadline"]) - when)
    left = mc.get("remaining_ms")
    return None if left is None else float(left)


def _when(state: Mapping[str, Any], now_ms: float) -> float:
    """The instant a table's time is shown at: now, or where a mirrored table went stale."""
    if not state.get("live", True) and state.get("stale_since") is not None:
        return min(now_ms, float(state["stale_since"]))
    return now_ms


def around_key(around: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a row depends on in the draw's answer (a part of the row's cache key)."""
    nxt = around.get("next") or {}
    return (around.get("match_id"), around.get("event"), around.get("event_round"),
            tuple(nxt.get("players") or ()), nxt.get("race_to"))


def row_key(state: Mapping[str, Any], now_ms: float) -> tuple[Any, ...]:
    """What a row depends on at ``now_ms`` besides the language: the state's version and,
    while running, the tenth of a second remaining (``row`` is equal for equal keys).
    Asked for every table at every poll: kept to a few lookups."""
    live = state.get("live", True)
    stale_since = state.get("stale_since")
    deadline = state.get("deadline")
    if deadline is not None and state.get("phase") == ClockPhase.RUNNING:
        when = now_ms if live or stale_since is None else min(now_ms, float(stale_since))
        left = float(deadline) - when
        tick: Any = math.ceil(left / TICK_MS) if left > 0 else 0
    else:
        tick = state.get("remaining_ms")
    # The match clock runs between shots and frames too: its whole second is in the key.
    mc = state.get("match_clock")
    mc_tick: Any = None
    if mc:
        mc_left = _match_clock_left(state, _when(state, now_ms))
        mc_tick = None if mc_left is None else math.ceil(mc_left / 1000)
    return (state.get("seq"), live, stale_since, tick, mc_tick)


def row(state: Mapping[str, Any], last_event: Mapping[str, Any] | None, now_ms: float,
        lang: str = "en", around: Mapping[str, Any] = NO_DRAW,
        event: str | None = None) -> dict[str, Any]:
    """The feed row of a table at ``now_ms`` (unix ms, the service's clock).

    ``state``: the table's state as of its last published event (snapshot), with ``live``
    and ``stale_since`` when the service knows them (a mirrored table whose own service is
    offline is not counted down past ``stale_since``: the hall's rule). ``around``: what
    the draw says about the table (NO_DRAW); ``event``: the match's event as it was
    started (the draw's event and round win over it)."""
    players = [str(p) for p in state.get("players") or ["", ""]]
    live = bool(state.get("live", True))
    when = _when(state, now_ms)
    shown = dict(state)
    if state.get("phase") == ClockPhase.RUNNING and state.get("deadline") is not None:
        # Rounded up to the tenth: the row changes at most ten times a second (the digits
        # are the same as from the exact time: both round up).
        tick = math.ceil(max(0.0, float(state["deadline"]) - when) / TICK_MS)
        shown["deadline"] = when + tick * TICK_MS
        shown["remaining_ms"] = tick * TICK_MS
    frame = render(shown, when)
    stage = frame.stage
    remaining_ms = shown.get("remaining_ms") if state.get("timer", True) else None
    match = state.get("match") or {}
    score = match.get("score") or state.get("frames_won") or [0, 0]
    per = int((state.get("profile") or {}).get("extensions_per_frame", 1))
    left = state.get("extensions_left") or [per, per]
    whites = state.get("whites")
    player = state.get("player")
    over = state.get("phase") == ClockPhase.FRAME_OVER
    alert_kind = ("expired" if stage == "expired"
                  else "warning" if stage in ("warning", "critical") else "")

    def side(index: Any) -> tuple[str, str]:
        if not isinstance(index, int) or not 0 <= index < len(players):
            return "", ""
        return "ab"[index], players[index]

    frame_winner = side(state.get("frame_winner") if over else None)
    match_over = bool(match.get("over"))
    match_winner = side(match.get("winner") if match_over else None)
    mc_left = _match_clock_left(state, when)
    mc = state.get("match_clock") or {}
    mc_ms: int | str = ""
    if mc_left is None:
        mc_text, mc_stage = "", ""
    else:
        # The pages' stages (tournament.js): warn at 10 min, last at 5 min, expired.
        mc_ms = math.ceil(mc_left / 1000) * 1000
        mc_text = match_time(mc_left)
        mc_stage = ("expired" if mc.get("phase") == MatchClockPhase.EXPIRED or match.get("drawn")
                    else "last" if mc_left <= 300_000 else "warn" if mc_left <= 600_000
                    else "ok")
    drawn = around.get("match_id") is not None and around.get("match_id") == match.get("id")
    nxt = around.get("next") or {}
    nxt_players = list(nxt.get("players") or ["", ""])
    return {
        "table": str(state.get("table", "")),
        "player_a": players[0], "player_b": players[1] if len(players) > 1 else "",
        "score_a": int(_pair(score, 0)), "score_b": int(_pair(score, 1)),
        "race_to": match.get("race_to") if match.get("race_to") is not None else "",
        "frame": int(state.get("frame") or 0), "round": int(state.get("round") or 0),
        "at_table": "" if over or player is None else "ab"[int(player)],
        "at_table_name": "" if over or player is None else players[int(player)],
        "remaining": frame.text, "remaining_ms": "" if remaining_ms is None else
        int(remaining_ms),
        "phase": str(state.get("phase", "")), "stage": stage,
        "extension_used_a": max(0, per - int(_pair(left, 0, per))),
        "extension_used_b": max(0, per - int(_pair(left, 1, per))),
        "extensions_left_a": int(_pair(left, 0, per)),
        "extensions_left_b": int(_pair(left, 1, per)),
        "fouls_a": int(_pair(state.get("fouls"), 0)),
        "fouls_b": int(_pair(state.get("fouls"), 1)),
        "whites_a": "" if whites is None else _pair(whites, 0, ""),
        "whites_b": "" if whites is None else _pair(whites, 1, ""),
        "last_event": event_text(last_event, players, lang),
        "alert": 1 if alert_kind else 0, "alert_kind": alert_kind,
        "live": 1 if live else 0, "seq": int(state.get("seq") or 0),
        "match_clock": mc_text, "match_clock_ms": mc_ms, "match_clock_stage": mc_stage,
        "event": (around.get("event") or "") if drawn else (event or ""),
        "event_round": (around.get("event_round") or "") if drawn else "",
        "frame_winner": frame_winner[0], "frame_winner_name": frame_winner[1],
        "match_winner": match_winner[0], "match_winner_name": match_winner[1],
        "match_over": 1 if match_over else 0,
        "next_player_a": str(nxt_players[0]) if nxt else "",
        "next_player_b": str(nxt_players[1]) if nxt and len(nxt_players) > 1 else "",
        "next_race_to": nxt.get("race_to", "") if nxt else "",
    }


# -- encodings: each row alone, so a body of many tables is a join of cached rows ------------
def json_row(values: Mapping[str, Any]) -> str:
    return json.dumps({k: values[k] for k in FIELDS}, ensure_ascii=False,
                      separators=(",", ":"))


def xml_row(values: Mapping[str, Any]) -> str:
    # Escaped for XML, and only characters XML allows (a vertical tab in one player's name
    # made the whole feed ill-formed for every table: issue 35, finding 2).
    cells = "".join(f"<{k}>{markup(values[k])}</{k}>" for k in FIELDS)
    return f"<row>{cells}</row>"


def csv_row(values: Mapping[str, Any]) -> str:
    # A player named "=HYPERLINK(...)" is a text cell, never a formula (core/text.py).
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerow(csv_cell(values[k]) for k in FIELDS)
    return out.getvalue()


CSV_HEADER = ",".join(FIELDS) + "\r\n"
XML_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<feed>'
XML_TAIL = "</feed>\n"


def to_json(rows: Iterable[str]) -> str:
    return "[" + ",".join(rows) + "]"


def to_xml(rows: Iterable[str]) -> str:
    return XML_HEAD + "".join(rows) + XML_TAIL


def to_csv(rows: Iterable[str]) -> str:
    return CSV_HEADER + "".join(rows)
