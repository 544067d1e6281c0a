"""docs/cli.md names every `shotclock` subcommand and every flag it takes (issue 36 point 5:
the reference in docs/, checked where it is not generated). The commands are read from the
parser itself (`shotclock ... --help`, in process), so a flag added without a word in the
doc fails here."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from clock_service.edges.cli.main import main

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def _help(*words: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    assert done.value.code == 0, words
    return out.getvalue()


def _choices(text: str) -> list[str]:
    """The subcommands a help text offers (its positional `{serve,hall,...}`), or none."""
    found = re.search(r"^positional arguments:\n\s+\{([a-z,-]+)\}", text, re.MULTILINE)
    return found.group(1).split(",") if found else []


def commands() -> list[tuple[str, ...]]:
    """Every leaf command: ("serve",), ("store", "stats"), ..."""
    out: list[tuple[str, ...]] = []
    for top in _choices(_help()):
        subs = _choices(_help(top))
        out += [(top, sub) for sub in subs] if subs else [(top,)]
    return out


def flags(words: tuple[str, ...]) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", _help(*words))) - {"--help"}


def section(top: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    heading = f"\n## shotclock {top}\n"
    assert heading in text, f"docs/cli.md has no section '## shotclock {top}'"
    body = text[text.index(heading) + len(heading):]
    return body[:body.index("\n## ")] if "\n## " in body else body


def test_the_parser_is_read() -> None:
    found = commands()
    assert ("serve",) in found and ("store", "archive") in found and ("draw", "import") in found
    assert {"--host", "--tls-cert", "--open"} <= flags(("serve",))


@pytest.mark.parametrize("words", commands(), ids=" ".join)
def test_every_command_and_flag_is_in_docs_cli(words: tuple[str, ...]) -> None:
    text = section(words[0])
    assert f"shotclock {' '.join(words)}" in text, f"docs/cli.md never shows `shotclock {' '.join(words)}`"
    missing = sorted(f for f in flags(words) if not re.search(re.escape(f) + r"(?![\w-])", text))
    assert missing == [], f"docs/cli.md's `shotclock {words[0]}` section never names {missing}"
