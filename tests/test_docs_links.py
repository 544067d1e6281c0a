"""Every relative link in the repository's documentation resolves inside the repository
(issue 9 "Also", TEAM convention 8): a reader of a clone, or of the repository on the web,
never meets a link to something that is not there (such as ../shared/...)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted({ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("*/README.md")})
INLINE = re.compile(r"(?<!\!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)>?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", re.MULTILINE)
HTML = re.compile(r"""<(?:a|img)\b[^>]*\b(?:href|src)=["']([^"']+)["']""", re.IGNORECASE)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`[^`\n]*`")


def links(text: str) -> list[str]:
    text = CODE.sub("", FENCE.sub("", text))  # links in code are examples, not links
    return [m for pattern in (INLINE, IMAGE, REFERENCE, HTML) for m in pattern.findall(text)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\- ]", "", text))


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {slug(h) for h in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.MULTILINE)}


def broken(doc: Path, text: str | None = None) -> list[str]:
    out = []
    for link in links(doc.read_text() if text is None else text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", link, re.IGNORECASE):
            continue  # http:, https:, mailto: ...: outside, on purpose
        target, _, anchor = link.partition("#")
        path = (doc.parent / target).resolve() if target else doc
        if not path.is_relative_to(ROOT):
            out.append(f"{link}: outside the repository")
        elif not path.exists():
            out.append(f"{link}: no such file")
        elif anchor and path.suffix == ".md" and anchor.lower() not in anchors(path):
            out.append(f"{link}: no heading #{anchor} in {path.relative_to(ROOT)}")
    return out


def test_the_checker_finds_what_it_must() -> None:
    sample = ("[a](../shared/rules.md) [b](README.md#development) ![c](docs/x.png) "
              "`[not](a-link)` [d](https://example.org) <a href=\"web_ui/README.md\">e</a>\n"
              "[ref]: deploy/README.md\n```\n[fenced](nowhere.md)\n```\n")
    assert sorted(links(sample)) == sorted([
        "../shared/rules.md", "README.md#development", "docs/x.png", "https://example.org",
        "deploy/README.md", "web_ui/README.md"])
    assert slug("Outside contract") == "outside-contract"
    assert slug("`allowed`: the commands (3)") == "allowed-the-commands-3"
    assert len(DOCS) >= 4, DOCS
    readme = ROOT / "README.md"
    assert broken(readme, "[r](../shared/rules/rules.en.md) [n](docs/nothing.md) "
                          "[a](web_ui/README.md#no-such-heading) [ok](web_ui/README.md#tests) "
                          "[top](#development)") == [
        "../shared/rules/rules.en.md: outside the repository",
        "docs/nothing.md: no such file",
        "web_ui/README.md#no-such-heading: no heading #no-such-heading in web_ui/README.md"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repository(doc: Path) -> None:
    assert broken(doc) == []
