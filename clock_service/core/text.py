"""Human text: what a name or a note may hold, and how it is written out. Pure, no I/O.

Every human-readable string the service accepts (players, event, referee, round, a token's
holder, a reason, a note, a command's source; over HTTP, WebSocket, MQTT or from a draw
file) goes through :func:`clean` with its kind, and nowhere else is decided what such a
text may hold (docs/policy.md, "Human text"). The rule:

- **refused anywhere in the text**: control characters (Unicode Cc: C0, DEL, C1, so a tab
  or a line break too), format characters (Cf: the bidirectional overrides, embeddings,
  isolates and marks, zero-width spaces and joiners, the word joiner, the byte-order mark,
  the soft hyphen, ...), surrogates (Cs: an unpaired surrogate from ``"\\ud800"`` in JSON),
  the line and paragraph separators (Zl, Zp) and the noncharacters (U+FDD0..U+FDEF,
  U+xxFFFE, U+xxFFFF). One character of these took every table off a switcher's XML feed
  (issue 35, finding 2); the others reorder or hide what a referee, a player or a viewer
  reads. Private-use characters (Co) are kept: a glyph of a font that has them, visible,
  legal in XML (and refusing them made a fuzzer's text generation ten times slower: their
  130 000 code points in the schema's class).
- **at most** ``kind.cap`` **characters as sent**, at least one that is not a space;
- **kept** without the spaces around it, in Unicode NFC (``"e\\u0301"`` is stored as
  ``"\\u00e9"``, so one name is one string in every search, result and file).

The table of refused characters (``REFUSED``) is the one definition: :func:`clean` looks a
text up in it, :func:`pattern` writes it as the JSON Schema ``pattern`` the API documents
(so the OpenAPI document, the validators and a fuzzer agree), and a test checks it against
the Unicode database of the running Python.

The writers (:func:`markup`, :func:`csv_cell`, :func:`visible`) make any text, checked or
not (a store written before the rule), safe in the grammar it goes into.
"""

from __future__ import annotations

import bisect
import html
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Final

from clock_service.core.errors import InvalidInput

__all__ = ["TextKind", "NAME", "LINE", "NOTE", "KINDS", "REFUSED", "InvalidText", "clean",
           "refusal", "refused_char", "pattern", "describe", "visible", "markup", "csv_cell",
           "FORMULA_START", "REPLACEMENT"]


@dataclass(frozen=True)
class TextKind:
    """A kind of human text and its length cap (characters as sent, spaces around included)."""

    name: str
    cap: int
    holds: str  # what texts are of this kind (docs/policy.md)


NAME: Final = TextKind("name", 60, "a person: a player, a referee, a token's holder, who "
                       "made a correction")
LINE: Final = TextKind("line", 200, "a line of text: an event, a round, a reason, a note, "
                       "a foul's rule or text, where a command came from")
NOTE: Final = TextKind("note", 1000, "a preset file's title or source (SHOTCLOCK_PRESETS_DIR)")
KINDS: Final = {kind.name: kind for kind in (NAME, LINE, NOTE)}

CONTROL = "a control character"
BIDI = "a bidirectional control"
INVISIBLE = "an invisible format character"
SURROGATE = "an unpaired surrogate"
SEPARATOR = "a line or paragraph separator"
NONCHARACTER = "a noncharacter"

# Every refused code point, as (first, last, what), sorted. Cc, Cf, Cs, Zl and Zp of
# Unicode 14.0 (Python 3.11's unicodedata; tests/test_human_text.py compares), and the
# noncharacters. Cf is split: the bidirectional controls apart from the other invisibles.
REFUSED: Final[tuple[tuple[int, int, str], ...]] = (
    (0x0000, 0x001F, CONTROL), (0x007F, 0x009F, CONTROL),
    (0x00AD, 0x00AD, INVISIBLE),  # soft hyphen
    (0x0600, 0x0605, INVISIBLE), (0x061C, 0x061C, BIDI),  # Arabic letter mark
    (0x06DD, 0x06DD, INVISIBLE), (0x070F, 0x070F, INVISIBLE), (0x0890, 0x0891, INVISIBLE),
    (0x08E2, 0x08E2, INVISIBLE), (0x180E, 0x180E, INVISIBLE),
    (0x200B, 0x200D, INVISIBLE),  # zero-width space, non-joiner, joiner
    (0x200E, 0x200F, BIDI),  # left-to-right and right-to-left marks
    (0x2028, 0x2028, SEPARATOR), (0x2029, 0x2029, SEPARATOR),
    (0x202A, 0x202E, BIDI),  # embeddings, pop, overrides
    (0x2060, 0x2064, INVISIBLE),  # word joiner, invisible operators
    (0x2066, 0x2069, BIDI),  # isolates
    (0x206A, 0x206F, INVISIBLE),  # deprecated format characters
    (0xD800, 0xDFFF, SURROGATE),
    (0xFDD0, 0xFDEF, NONCHARACTER),
    (0xFEFF, 0xFEFF, INVISIBLE),  # zero-width no-break space (byte-order mark)
    (0xFFF9, 0xFFFB, INVISIBLE), (0xFFFE, 0xFFFF, NONCHARACTER),
    (0x110BD, 0x110BD, INVISIBLE), (0x110CD, 0x110CD, INVISIBLE),
    (0x13430, 0x13438, INVISIBLE), (0x1BCA0, 0x1BCA3, INVISIBLE),
    (0x1D173, 0x1D17A, INVISIBLE),
    *((plane << 16 | 0xFFFE, plane << 16 | 0xFFFF, NONCHARACTER) for plane in range(1, 14)),
    (0xE0001, 0xE0001, INVISIBLE), (0xE0020, 0xE007F, INVISIBLE),  # language tags
    (0xEFFFE, 0xEFFFF, NONCHARACTER),
    (0xFFFFE, 0xFFFFF, NONCHARACTER), (0x10FFFE, 0x10FFFF, NONCHARACTER),
)
_FIRSTS = [first for first, _, _ in REFUSED]


def _class_range(first: int, last: int) -> str:
    """A range of a regex character class, as Python's ``re`` and ECMA-262 (with the ``u``
    flag) both read it: escapes in the BMP, the characters themselves beyond it."""

    def one(cp: int) -> str:
        return f"\\u{cp:04x}" if cp <= 0xFFFF else chr(cp)

    return one(first) if first == last else f"{one(first)}-{one(last)}"


_CLASS: Final = "".join(_class_range(first, last) for first, last, _ in REFUSED)
_FIND: Final = re.compile(f"[{_CLASS}]")
# The schema's class leaves the surrogates out: a lone surrogate cannot be written in a
# validator's or a generator's strings (jsonschema-rs refuses ``\ud800`` in a pattern); the
# service refuses one all the same.
_SCHEMA_CLASS: Final = "".join(_class_range(first, last) for first, last, what in REFUSED
                               if what != SURROGATE)

# C0, DEL and C1 have no names in the Unicode database, only aliases (NameAliases.txt).
_CONTROL_NAMES: Final = dict(enumerate((
    "NULL", "START OF HEADING", "START OF TEXT", "END OF TEXT", "END OF TRANSMISSION",
    "ENQUIRY", "ACKNOWLEDGE", "ALERT", "BACKSPACE", "CHARACTER TABULATION", "LINE FEED",
    "LINE TABULATION", "FORM FEED", "CARRIAGE RETURN", "SHIFT OUT", "SHIFT IN",
    "DATA LINK ESCAPE", "DEVICE CONTROL ONE", "DEVICE CONTROL TWO", "DEVICE CONTROL THREE",
    "DEVICE CONTROL FOUR", "NEGATIVE ACKNOWLEDGE", "SYNCHRONOUS IDLE",
    "END OF TRANSMISSION BLOCK", "CANCEL", "END OF MEDIUM", "SUBSTITUTE", "ESCAPE",
    "INFORMATION SEPARATOR FOUR", "INFORMATION SEPARATOR THREE",
    "INFORMATION SEPARATOR TWO", "INFORMATION SEPARATOR ONE"))) | {0x7F: "DELETE"} | dict(
    enumerate((
        "PADDING CHARACTER", "HIGH OCTET PRESET", "BREAK PERMITTED HERE", "NO BREAK HERE",
        "INDEX", "NEXT LINE", "START OF SELECTED AREA", "END OF SELECTED AREA",
        "CHARACTER TABULATION SET", "CHARACTER TABULATION WITH JUSTIFICATION",
        "LINE TABULATION SET", "PARTIAL LINE FORWARD", "PARTIAL LINE BACKWARD",
        "REVERSE LINE FEED", "SINGLE SHIFT TWO", "SINGLE SHIFT THREE",
        "DEVICE CONTROL STRING", "PRIVATE USE ONE", "PRIVATE USE TWO", "SET TRANSMIT STATE",
        "CANCEL CHARACTER", "MESSAGE WAITING", "START OF GUARDED AREA",
        "END OF GUARDED AREA", "START OF STRING", "SINGLE GRAPHIC CHARACTER INTRODUCER",
        "SINGLE CHARACTER INTRODUCER", "CONTROL SEQUENCE INTRODUCER", "STRING TERMINATOR",
        "OPERATING SYSTEM COMMAND", "PRIVACY MESSAGE", "APPLICATION PROGRAM COMMAND"),
        start=0x80))


def refused_char(char: str) -> str | None:
    """What a refused character is (``"a control character"``, ...), or None."""
    cp = ord(char)
    i = bisect.bisect_right(_FIRSTS, cp) - 1
    if i >= 0 and cp <= REFUSED[i][1]:
        return REFUSED[i][2]
    return None


def describe(char: str) -> str:
    """``U+000B (LINE TABULATION)``: the code point and its name, when it has one."""
    cp = ord(char)
    name = _CONTROL_NAMES.get(cp) or unicodedata.name(char, "")
    return f"U+{cp:04X} ({name})" if name else f"U+{cp:04X}"


class InvalidText(InvalidInput):
    """A human text the rule refuses; the message names the field and why."""

    code = "invalid_text"

    def __init__(self, field: str, reason: str, *, code: str | None = None) -> None:
        super().__init__(f"{field}: {reason}" if field else reason, code=code)
        self.field = field
        self.reason = reason


def refusal(value: object, kind: TextKind) -> str | None:
    """Why ``value`` is not a text of this kind (the reason alone, without the field's
    name), or None when :func:`clean` keeps it."""
    if not isinstance(value, str):
        return f"must be text, got {value!r}"[:120]
    found = _FIND.search(value)
    if found is not None:
        char = found.group()
        return f"{describe(char)} is {refused_char(char)}"
    if len(value) > kind.cap:
        return f"has {len(value)} characters; at most {kind.cap}"
    if not value.strip():
        return "is empty" if not value else "is only spaces"
    return None


def clean(value: object, kind: TextKind, field: str = "") -> str:
    """The text as the service keeps it (spaces around dropped, NFC), or ``InvalidText``
    naming ``field`` and the reason (HTTP 422)."""
    reason = refusal(value, kind)
    if reason is not None:
        raise InvalidText(field, reason)
    assert isinstance(value, str)
    return unicodedata.normalize("NFC", value.strip())


def pattern(kind: TextKind) -> str:
    """The rule as a JSON Schema ``pattern`` (with ``maxLength`` ``kind.cap``): no refused
    character, and one that is not a space. Python's ``re`` and ECMA-262 agree on it: the
    characters where their ``\\s`` differ are refused ones. Surrogates aside (see
    ``_SCHEMA_CLASS``), a text matches it exactly when :func:`refusal` has nothing to say."""
    return f"^[^{_SCHEMA_CLASS}]*[^\\s{_SCHEMA_CLASS}][^{_SCHEMA_CLASS}]*$"


# -- writing text out --------------------------------------------------------------------------
REPLACEMENT: Final = "\ufffd"
# A spreadsheet runs a cell starting with one of these as a formula (CSV injection, OWASP).
FORMULA_START: Final = ("=", "+", "-", "@", "\t", "\r")


def visible(value: object) -> str:
    """``value`` as text with every refused character replaced by U+FFFD: one line (a
    feed's text file: OBS shows one), nothing reordered or hidden, and only characters
    that XML 1.0 allows."""
    return _FIND.sub(REPLACEMENT, str(value))


def markup(value: object) -> str:
    """``value`` as the text or an attribute value of HTML, XML or SVG: ``& < > " '``
    escaped, refused characters replaced (:func:`visible`)."""
    return html.escape(visible(value), quote=True)


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell a spreadsheet reads as data: None empty, a bool 0 or 1, a text
    starting with a formula character behind a quote mark (OWASP), except a number
    written as one (``-5``, ``-0.5``); refused characters replaced (:func:`visible`)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, str):
        return value
    text = visible(value)
    if text[:1] in FORMULA_START and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


_NUMBER: Final = re.compile(r"-[0-9]+(?:\.[0-9]+)?")
