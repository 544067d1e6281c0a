"""The fields every shape shares: the command envelope's words, human text (one rule,
clock_service/core/text.py), identifiers with their patterns, bounded numbers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PlainValidator,
    StrictInt,
    StringConstraints,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

from clock_service.core.commands import (
    PRESS_FUTURE_MS,
    PRESS_STALE_MS,
)
from clock_service.core.ids import TABLE_ID_PATTERN
from clock_service.core.match_clock import (
    AT_LIMIT,
)
from clock_service.core.presets import NAME as PRESET_NAME
from clock_service.core.profile import MAX_MS
from clock_service.core.text import LINE, NAME, TextKind, clean, pattern, refusal

__all__ = ["ARCHIVE_ID_PATTERN", "ArchiveId", "LOG_ID_PATTERN", "LogId", "MATCH_ID_PATTERN",
           "MAX_SEQ", "MatchId", "PersonName", "PlayerIndex", "PresetName", "TableId", "TextLine"]


# The command envelope (TEAM convention 1), described once for HTTP and WebSocket.
AT_DOC = ("when the press (or camera frame) happened at the table, unix ms on the service's "
          "clock (a remote bridge corrects its clock offset). Older than "
          f"{PRESS_STALE_MS} ms on arrival: 409 stale_press; more than {PRESS_FUTURE_MS} ms "
          "ahead: 422 press_in_future. start, shot, pause and resume take effect at "
          "max(last step, min(arrival, at)); an expiry already due at arrival stands (I17).")


BY_DOC = "who decided it: referee (default) or camera; recorded in its events"


SOURCE_DOC = ("where it came from (console, button, pedal, camera, mqtt ...); recorded in "
              "its events")


def _human_text(kind: TextKind) -> tuple[PlainValidator, WithJsonSchema]:
    """The pydantic side of every human-readable string a request carries (docs/policy.md,
    "Human text"): the core's rule (clock_service/core/text.py), so a refusal is a 422 that
    names the field and the character, and the value is kept stripped and in NFC. Its JSON
    Schema carries the rule as ``pattern`` and ``maxLength``, and ``x-human-text`` (the
    kind): tests/test_human_text.py walks every request schema for it."""

    def check(value: Any) -> str:
        reason = refusal(value, kind)
        if reason is not None:
            raise PydanticCustomError("human_text", "{reason}", {"reason": reason})
        return clean(value, kind)

    return PlainValidator(check), WithJsonSchema({
        "type": "string", "minLength": 1, "maxLength": kind.cap, "pattern": pattern(kind),
        "x-human-text": kind.name})


_NAME_CHECK, _NAME_SCHEMA = _human_text(NAME)


_LINE_CHECK, _LINE_SCHEMA = _human_text(LINE)


# A person's name (players, referee, a token's holder, who made a correction) and a line of
# text (event, round, reasons, notes, a foul's rule, a command's source).
PersonName = Annotated[str, _NAME_CHECK, _NAME_SCHEMA]


TextLine = Annotated[str, _LINE_CHECK, _LINE_SCHEMA]


# Integers are strict everywhere: 1.0 or true is not a player, a count or a time.
PlayerIndex = Annotated[StrictInt, Field(ge=0, le=1, description="0 or 1")]


# Strings that are not human text are identifiers, each with its pattern (docs/policy.md);
# the table id's is clock_service/core/ids.py's.
ARCHIVE_ID_PATTERN = r"^[A-Za-z0-9_-]{1,32}~[0-9]{1,9}$"


# A live table's id or an archive's (the match index and the camera's clips know both).
LOG_ID_PATTERN = r"^[A-Za-z0-9_-]{1,32}(?:~[0-9]{1,9})?$"


MATCH_ID_PATTERN = r"^[A-Za-z0-9_-]{1,32}(?:~[0-9]{1,9})?\.[0-9]{1,9}$"


PRESET_NAME_PATTERN = PRESET_NAME.pattern


TableId = Annotated[str, StringConstraints(pattern=TABLE_ID_PATTERN)]


ArchiveId = Annotated[str, StringConstraints(pattern=ARCHIVE_ID_PATTERN)]


LogId = Annotated[str, StringConstraints(pattern=LOG_ID_PATTERN)]


MatchId = Annotated[str, StringConstraints(pattern=MATCH_ID_PATTERN)]


PresetName = Annotated[str, StringConstraints(pattern=PRESET_NAME_PATTERN)]


# Every whole number a request carries is bounded (docs/policy.md, "Numbers"). Seqs, cursors,
# counts of the log and unix ms: exact in every JSON reader (and in SQLite's 64 bits, whose
# overflow was a 500: issue 35, finding 7).
MAX_SEQ = 2**53


_Ms = Annotated[StrictInt, Field(ge=1, le=MAX_MS)]


_Count = Annotated[StrictInt, Field(ge=0, le=MAX_MS)]


# The organiser's choices at a match's time limit (match_clock.AT_LIMIT).
AtLimitCode = Literal["leader_wins", "frame_decides", "tie_break_frame", "shot_clock"]


assert set(AtLimitCode.__args__) == set(AT_LIMIT)  # type: ignore[attr-defined]
