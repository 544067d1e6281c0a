"""Issue 35 points 2 and 3: one rule for human text, every number bounded (docs/policy.md).

- The rule itself (clock_service/core/text.py), table-driven: what is refused and how the
  refusal names the character; what is kept (Cyrillic, diacritics, CJK) and how (stripped,
  NFC). Its table of refused code points against the Unicode database of this Python.
- Its JSON Schema ``pattern`` says exactly what the rule says (hypothesis, any text).
- The writers: any text, checked or not, comes out well-formed XML and a CSV cell that is
  no formula.
- A walk over every request schema: the app's OpenAPI document (the app as
  ``table_app`` builds it, and the camera's routes), the command models (HTTP, WebSocket,
  MQTT), the MQTT replay request and the draw's lines. A string there is human text (the
  type, with the rule's pattern and cap) or an identifier constrained by an enum or an
  anchored pattern that no person's name matches; every integer and number has a minimum
  and a maximum. The walk is shown to fail on a schema that breaks each of these.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter, ValidationError

from clock_service.core.text import (
    KINDS,
    LINE,
    NAME,
    REFUSED,
    InvalidText,
    clean,
    csv_cell,
    markup,
    pattern,
    refusal,
    refused_char,
)

# -- the rule -------------------------------------------------------------------------------

REFUSED_TEXTS = [
    ("Iv\u000ban", "U+000B (LINE TABULATION) is a control character"),
    ("Ivan\n", "U+000A (LINE FEED) is a control character"),
    ("\tIvan", "U+0009 (CHARACTER TABULATION) is a control character"),
    ("Iv\u0000an", "U+0000 (NULL) is a control character"),
    ("Iv\u007fan", "U+007F (DELETE) is a control character"),
    ("Iv\u0085an", "U+0085 (NEXT LINE) is a control character"),
    ("Iv\u009ban", "U+009B (CONTROL SEQUENCE INTRODUCER) is a control character"),
    ("\u202eRLO", "U+202E (RIGHT-TO-LEFT OVERRIDE) is a bidirectional control"),
    ("\u202aLRE", "U+202A (LEFT-TO-RIGHT EMBEDDING) is a bidirectional control"),
    ("a\u2067b", "U+2067 (RIGHT-TO-LEFT ISOLATE) is a bidirectional control"),
    ("a\u200fb", "U+200F (RIGHT-TO-LEFT MARK) is a bidirectional control"),
    ("a\u061cb", "U+061C (ARABIC LETTER MARK) is a bidirectional control"),
    ("Pe\u200btrov", "U+200B (ZERO WIDTH SPACE) is an invisible format character"),
    ("Pe\u200dtrov", "U+200D (ZERO WIDTH JOINER) is an invisible format character"),
    ("Pe\u2060trov", "U+2060 (WORD JOINER) is an invisible format character"),
    ("\ufeffIvan", "U+FEFF (ZERO WIDTH NO-BREAK SPACE) is an invisible format character"),
    ("Iv\u00adan", "U+00AD (SOFT HYPHEN) is an invisible format character"),
    ("a\U000e0041b", "U+E0041 (TAG LATIN CAPITAL LETTER A) is an invisible format character"),
    ("Iv\u2028an", "U+2028 (LINE SEPARATOR) is a line or paragraph separator"),
    ("\ud800", "U+D800 is an unpaired surrogate"),
    ("a\ufffe", "U+FFFE is a noncharacter"),
    ("a\ufdd0", "U+FDD0 is a noncharacter"),
    ("", "is empty"),
    ("   ", "is only spaces"),
    ("\u3000", "is only spaces"),
    ("x" * 61, "has 61 characters; at most 60"),
    (5, "must be text, got 5"),
    (None, "must be text, got None"),
]


@pytest.mark.parametrize(("value", "reason"), REFUSED_TEXTS, ids=[r[1] for r in REFUSED_TEXTS])
def test_a_refused_name_says_which_character_and_why(value: Any, reason: str) -> None:
    assert refusal(value, NAME) == reason
    with pytest.raises(InvalidText) as info:
        clean(value, NAME, "players.0")
    assert str(info.value) == f"players.0: {reason}"
    assert info.value.code == "invalid_text"


KEPT = [
    ("Иванов", "Иванов"),
    ("  Судья стола 1 ", "Судья стола 1"),
    ("Sébastien Müller-Łukasiewicz", "Sébastien Müller-Łukasiewicz"),
    ("Se\u0301bastien", "S\u00e9bastien"),  # NFC: one name is one string
    ("李小龍", "李小龍"),
    ("Ὀδυσσεύς", "Ὀδυσσεύς"),
    ("O'Brien & <Sons>", "O'Brien & <Sons>"),
    ("a\u00a0b", "a\u00a0b"),  # a no-break space inside is a space
    ("x" * 60, "x" * 60),
    ("🎱 Ivan", "🎱 Ivan"),
    ("a\ue000", "a\ue000"),  # private use: a font's own glyph, visible, legal in XML
]


@pytest.mark.parametrize(("value", "kept"), KEPT)
def test_names_in_any_script_are_kept_stripped_and_in_nfc(value: str, kept: str) -> None:
    assert refusal(value, NAME) is None
    assert clean(value, NAME) == kept


def test_the_caps() -> None:
    assert (NAME.cap, LINE.cap) == (60, 200)
    assert refusal("x" * 200, LINE) is None and refusal("x" * 201, LINE) is not None
    assert set(KINDS) == {"name", "line", "note"}


def _unicode_refused() -> dict[int, str]:
    """What the rule must refuse, from this Python's Unicode database."""
    groups = {"Cc": "control", "Cf": "format", "Cs": "surrogate", "Zl": "separator",
              "Zp": "separator"}
    found = {}
    for cp in range(0x110000):
        group = groups.get(unicodedata.category(chr(cp)))
        if group is not None:
            found[cp] = group
        elif 0xFDD0 <= cp <= 0xFDEF or cp & 0xFFFE == 0xFFFE:
            found[cp] = "noncharacter"
    return found


def test_the_table_of_refused_characters_is_this_unicode_s() -> None:
    """REFUSED is Unicode 14.0's (Python 3.11): on a Python with another Unicode this fails
    with the code points to add or drop."""
    expected = _unicode_refused()
    table = {cp for first, last, _ in REFUSED for cp in range(first, last + 1)}
    assert sorted(set(expected) - table) == [] and sorted(table - set(expected)) == [], (
        unicodedata.unidata_version)
    bidi = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
    kinds = {"control": "a control character", "surrogate": "an unpaired surrogate",
             "separator": "a line or paragraph separator", "noncharacter": "a noncharacter"}
    for cp, group in expected.items():
        want = (("a bidirectional control" if cp in bidi else "an invisible format character")
                if group == "format" else kinds[group])
        assert refused_char(chr(cp)) == want, hex(cp)
    firsts = [first for first, _, _ in REFUSED]
    assert firsts == sorted(firsts)


# -- the pattern says what the rule says ----------------------------------------------------

# Surrogates are left out: the schema's pattern cannot name them (core/text.py, pattern).
_TRICKY = st.sampled_from([" ", "\u00a0", "\u3000", "\t", "\n", "\u000b", "\u202e", "\u200d",
                           "\ufeff", "\ue000", "\ufffe", "\U000e0041", "\U0010fffd", "a", "Я",
                           "李", "e\u0301", "🎱"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_TRICKY, st.characters(codec="utf-8")), max_size=70).map("".join))
def test_the_json_schema_pattern_and_the_rule_agree(text: str) -> None:
    for kind in (NAME, LINE):
        by_schema = bool(re.fullmatch(pattern(kind), text)) and len(text) <= kind.cap
        assert by_schema == (refusal(text, kind) is None), (kind.name, ascii(text))


def test_the_pydantic_type_gives_the_core_s_reason() -> None:
    from clock_service.service.wire.fields import PersonName
    from clock_service.service.wire.http import CreateTable

    assert TypeAdapter(PersonName).validate_python("  Se\u0301bastien ") == "S\u00e9bastien"
    with pytest.raises(ValidationError) as info:
        CreateTable.model_validate({"id": "1", "players": ["Ivan", "Iv\u000ban"]})
    (error,) = info.value.errors()
    assert error["loc"] == ("players", 1)
    assert error["msg"] == "U+000B (LINE TABULATION) is a control character"


# -- the writers ------------------------------------------------------------------------------

def _every_refused_kind() -> list[str]:
    return [chr(first) for first, _, _ in REFUSED] + [chr(last) for _, last, _ in REFUSED]


def test_markup_is_well_formed_xml_for_any_text() -> None:
    text = "<&\"'>Пётр " + "".join(_every_refused_kind())
    element = ET.fromstring(f'<row a="{markup(text)}">{markup(text)}</row>')
    assert element.text == element.get("a")
    assert (element.text or "").startswith("<&\"'>Пётр \ufffd")
    assert markup("<b>") == "&lt;b&gt;" and markup(5) == "5"


@pytest.mark.parametrize(("value", "cell"), [
    ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"), ("+7", "'+7"), ("@SUM(A1)", "'@SUM(A1)"),
    ("-2+3", "'-2+3"), ("-x", "'-x"), ("-5", "-5"), ("-0.5", "-0.5"), ("Анна", "Анна"),
    ("\tIvan", "\ufffdIvan"), ("Iv\nan", "Iv\ufffdan"), (None, ""), (True, 1), (7, 7),
])
def test_a_csv_cell_is_never_a_formula_nor_a_broken_line(value: Any, cell: Any) -> None:
    assert csv_cell(value) == cell
    out = io.StringIO()
    csv.writer(out).writerow([csv_cell(value)])
    assert list(csv.reader(io.StringIO(out.getvalue()))) == [[str(cell)]]


# -- every request schema -------------------------------------------------------------------

# No identifier's pattern may match a person's name: a field that takes these is free text.
PROBES = ("Анна Петрова", "Ivan Petrov", "李小龍")


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    assert isinstance(node, dict)
    return node


def _nodes(root: dict[str, Any], schema: Any, where: str,
           seen: set[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema of ``schema``, following ``$ref`` (each target once)."""
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            yield from _nodes(root, item, f"{where}/{i}", seen)
        return
    if not isinstance(schema, dict):
        return
    if "$ref" in schema:
        ref = schema["$ref"]
        if ref not in seen:
            seen.add(ref)
            yield from _nodes(root, _resolve(root, ref), ref, seen)
        return
    yield where, schema
    for key in ("properties", "patternProperties"):
        for name, sub in (schema.get(key) or {}).items():
            yield from _nodes(root, sub, f"{where}.{name}", seen)
    for key in ("items", "prefixItems", "anyOf", "oneOf", "allOf", "additionalProperties",
                "x-rows", "not"):
        if key in schema:
            yield from _nodes(root, schema[key], f"{where}[{key}]", seen)


def _string_problem(node: dict[str, Any]) -> str | None:
    if "x-human-text" in node:
        kind = KINDS.get(node["x-human-text"])
        if kind is None:
            return f"unknown kind of human text {node['x-human-text']!r}"
        if node.get("pattern") != pattern(kind) or node.get("maxLength") != kind.cap:
            return "human text without the rule's pattern and cap"
        return None
    if "enum" in node or "const" in node:
        return None
    if node.get("format") == "password" and "maxLength" in node:
        return None  # a secret: compared whole, never shown
    if node.get("contentMediaType") and "x-rows" in node:
        return None  # a file whose rows are described (and walked)
    regex = node.get("pattern")
    if regex is None:
        return "a free-text string without the human-text type"
    if not (regex.startswith("^") and regex.endswith("$")):
        return f"an identifier's pattern must be anchored: {regex!r}"
    matched = [p for p in PROBES if re.fullmatch(regex, p)]
    if matched:
        return f"pattern {regex!r} lets free text through ({matched[0]!r}): use the type"
    return None


def schema_problems(root: dict[str, Any], schemas: list[tuple[str, Any]]) -> list[str]:
    """Every string that is neither human text nor a constrained identifier, and every
    number without both bounds, in ``schemas`` (their ``$ref`` resolved in ``root``)."""
    problems = []
    seen: set[str] = set()
    for start, schema in schemas:
        for where, node in _nodes(root, schema, start, seen):
            kinds = node.get("type")
            kinds = set(kinds) if isinstance(kinds, list) else {kinds}
            if "string" in kinds:
                problem = _string_problem(node)
                if problem:
                    problems.append(f"{where}: {problem}")
            if kinds & {"integer", "number"}:
                low = "minimum" in node or "exclusiveMinimum" in node
                high = "maximum" in node or "exclusiveMaximum" in node
                if not (low and high):
                    problems.append(f"{where}: a number without a minimum and a maximum")
    return problems


def request_schemas(document: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every parameter's and request body's schema of an OpenAPI document."""
    found = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                found.append((f"{method.upper()} {path} {parameter['in']} {parameter['name']}",
                              parameter["schema"]))
            for media, content in operation.get("requestBody", {}).get("content", {}).items():
                found.append((f"{method.upper()} {path} body {media}", content["schema"]))
    return found


@pytest.fixture(scope="module")
def openapi(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from clock_service.edges.cli.main import table_app
    from clock_service.service.settings import Settings

    db = tmp_path_factory.mktemp("schemas") / "s.db"
    document: dict[str, Any] = table_app(Settings(db=str(db), display="none")).openapi()
    return document


def test_the_walk_covers_the_app(openapi: dict[str, Any]) -> None:
    """The walk reaches what it must judge: the doors that take names, and their numbers."""
    schemas = request_schemas(openapi)
    where = {w for w, _ in schemas}
    assert {"POST /api/tables body application/json",
            "POST /api/tables/{table_id}/commands body application/json",
            "POST /api/draw body text/csv", "POST /api/draw body application/json",
            "POST /api/tokens body application/json",
            "GET /api/matches query since"} <= where
    human = [w for w, node in _nodes(openapi, [s for _, s in schemas], "", set())
             if "x-human-text" in node]
    assert len(human) >= 12, human


def test_every_request_string_and_number_of_the_app_is_under_the_policy(
        openapi: dict[str, Any]) -> None:
    assert schema_problems(openapi, request_schemas(openapi)) == []


def test_the_optional_doors_are_under_the_policy(tmp_path: Path) -> None:
    """The app with every optional router mounted (a display and a camera), as the access
    table's test builds it."""
    from tests.test_access import _service

    document = _service(tmp_path).openapi()
    schemas = request_schemas(document)
    where = {w for w, _ in schemas}
    assert {"PUT /api/camera/calibration body application/json",
            "PUT /api/hardware/brightness body application/json"} <= where, where
    assert schema_problems(document, schemas) == []


def _model_schemas() -> list[tuple[str, dict[str, Any]]]:
    from clock_service.edges.tournament.schemas import DrawLine, DrawRow
    from clock_service.service.wire.commands import CommandMessage, command_union
    from clock_service.service.wire.mqtt import MqttCommandMessage, ReplayRequest

    adapters: dict[str, Any] = {
        "http command": command_union(), "ws command": command_union(websocket=True),
        "ws message": CommandMessage, "mqtt command": MqttCommandMessage,
        "mqtt replay": ReplayRequest, "draw line": DrawLine, "draw row": DrawRow}
    return [(name, TypeAdapter(kind).json_schema()) for name, kind in adapters.items()]


@pytest.mark.parametrize(("name", "schema"), _model_schemas(), ids=lambda v: str(v)[:20])
def test_the_command_envelopes_and_the_draw_lines_are_under_the_policy(
        name: str, schema: dict[str, Any]) -> None:
    assert schema_problems(schema, [(name, schema)]) == []


def test_the_walk_fails_on_what_breaks_the_policy() -> None:
    class Loose(BaseModel):
        note: str
        code: str | None = None

    bad = {"type": "object", "properties": {
        "free": {"type": "string"},
        "unanchored": {"type": "string", "pattern": r"\S"},
        "old_name": {"type": "string", "pattern": r"^\s*(?=\S)[\s\S]{1,60}(?<=\S)\s*$"},
        "weak": {"type": "string", "x-human-text": "name", "pattern": ".*", "maxLength": 60},
        "count": {"type": "integer", "minimum": 0},
        "float": {"anyOf": [{"type": "number", "maximum": 1}, {"type": "null"}]},
        "loose": {"$ref": "#/$defs/Loose"},
        "ok_id": {"type": "string", "pattern": "^[0-9]{1,3}$"},
        "ok_text": {"type": "string", "x-human-text": "line", "pattern": pattern(LINE),
                    "maxLength": LINE.cap},
        "ok_number": {"type": "integer", "minimum": 0, "maximum": 9},
    }, "$defs": {"Loose": TypeAdapter(Loose).json_schema()}}
    found = schema_problems(bad, [("bad", bad)])
    assert [p.split(":")[0] for p in found] == [
        "bad.free", "bad.unanchored", "bad.old_name", "bad.weak", "bad.count",
        "bad.float[anyOf]/0", "#/$defs/Loose.note", "#/$defs/Loose.code[anyOf]/0"], found
