"""README's layout table is the tree (issue 38 point 5), and docs/README.md lists every
doc (issue 36 point 5): every top-level directory of the repository and every package of
the three floors (clock_service/core, service, edges) has its row, and every row names a
path that exists. A room added, moved or removed without its line fails here."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLOORS = ("core", "service", "edges")
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*(.+?)\s*\|\s*$")


def layout_rows(readme: str) -> dict[str, str]:
    """The Layout section's table: path -> what it holds."""
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for line in section.splitlines() if (m := ROW.match(line))}


def _ignored(root: Path) -> list[str]:
    lines = (root / ".gitignore").read_text().splitlines() if (root / ".gitignore").exists() else []
    return [line.strip().rstrip("/") for line in lines
            if line.strip() and not line.startswith("#") and "/" not in line.strip().rstrip("/")]


def rooms(root: Path) -> list[str]:
    """What the table must name: the repository's top-level directories (not hidden, not
    ignored), each floor and each package on a floor (a directory of it)."""
    ignored = _ignored(root)
    out = [f"{p.name}/" for p in sorted(root.iterdir())
           if p.is_dir() and not p.name.startswith(".")
           and not any(fnmatch.fnmatch(p.name, pattern) for pattern in ignored)]
    for floor in FLOORS:
        base = root / "clock_service" / floor
        out.append(f"clock_service/{floor}/")
        out += [f"clock_service/{floor}/{p.name}/" for p in sorted(base.iterdir())
                if p.is_dir() and p.name != "__pycache__"]
    return out


def problems(root: Path) -> list[str]:
    rows = layout_rows((root / "README.md").read_text(encoding="utf-8"))
    out = [f"README's layout table has no row for `{room}`" for room in rooms(root)
           if room not in rows and not (room == "clock_service/" and
                                        any(r.startswith("clock_service/") for r in rows))]
    out += [f"README's layout table names `{path}`, which is not in the tree"
            for path in rows if not (root / path).exists()]
    out += [f"README's layout row `{path}` says nothing" for path, what in rows.items()
            if len(what) < 10]
    return out


def test_the_checker_finds_a_missing_and_a_stale_row(tmp_path: Path) -> None:
    for path in ("clock_service/core/rules", "clock_service/core/__pycache__",
                 "clock_service/service", "clock_service/edges/api", "tests", "var",
                 ".ci", "node_modules"):
        (tmp_path / path).mkdir(parents=True)
    (tmp_path / ".gitignore").write_text("var/\nnode_modules/\n*.egg-info/\nbench/results/\n")
    (tmp_path / "README.md").write_text(
        "# x\n\n## Layout\n\n| path | what |\n| --- | --- |\n"
        "| `clock_service/core/` | the pure core, no I/O |\n"
        "| `clock_service/core/rules/` | the frame rules of sections 3-11 |\n"
        "| `clock_service/service/` | service |\n"
        "| `clock_service/edges/` | the edges around the service |\n"
        "| `clock_service/edges/gone/` | a room moved away since |\n"
        "| `tests/` | the suite, every group |\n\n## Next\n")
    assert problems(tmp_path) == [
        "README's layout table has no row for `clock_service/edges/api/`",
        "README's layout table names `clock_service/edges/gone/`, which is not in the tree",
        "README's layout row `clock_service/service/` says nothing"]


def test_readme_layout_is_the_tree() -> None:
    assert "clock_service/edges/api/" in rooms(ROOT) and "harness/" in rooms(ROOT)
    assert problems(ROOT) == []


def test_docs_index_lists_every_doc() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([^)#\s]+)", index))
    missing = [p.name for p in sorted((ROOT / "docs").iterdir())
               if p.name != "README.md" and not p.name.startswith(".")
               and not any(link == p.name or link.startswith(f"{p.name}/") for link in linked)]
    assert missing == [], f"docs/README.md does not list {missing}"
