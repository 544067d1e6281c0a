"""One settings object for every setting (issue 18 point 4): types, defaults and help in
clock_service/service/settings.py, read nowhere else; `shotclock config` says where each value came
from with secrets redacted; docs/settings.md's table is made from the object; every command finds
the same store by default."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from clock_service.service import settings as config
from clock_service.service.settings import Settings, default_db_path, load
from tests.cli import Ran, shotclock

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "clock_service", ROOT / "firmware_bridge", ROOT / "web_ui"]
BEGIN, END = "<!-- settings:begin -->", "<!-- settings:end -->"


def python_sources() -> list[Path]:
    return [p for d in SOURCES for p in d.rglob("*.py")]


def test_every_shotclock_variable_in_the_code_is_a_setting() -> None:
    known = {row["env"] for row in config.describe()} | {config.CONFIG_ENV}
    used: dict[str, set[str]] = {}
    for path in python_sources():
        for name in re.findall(r"SHOTCLOCK_[A-Z0-9_]*[A-Z0-9]", path.read_text()):
            used.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    unknown = {name: where for name, where in used.items() if name not in known}
    assert not unknown, ("SHOTCLOCK_* names that are not settings: add them to "
                         f"clock_service/service/settings.py: {unknown}")


def test_only_settings_py_reads_the_environment_for_a_setting() -> None:
    """No module but settings.py looks a SHOTCLOCK_ variable up (os.environ, getenv or an
    environ mapping's get/[]): they take the Settings object."""
    lookup = re.compile(r"""(?:environ|getenv|env)\s*(?:\.get\(|\[|\()\s*["']SHOTCLOCK_""")
    readers = [str(p.relative_to(ROOT)) for p in python_sources()
               if p.name != "settings.py" and lookup.search(p.read_text())]
    assert readers == [], f"read SHOTCLOCK_* themselves (use clock_service.service.settings): {readers}"


def test_every_setting_has_a_type_default_and_help() -> None:
    rows = config.describe()
    assert len(rows) == len({r["env"] for r in rows}) >= 42
    for row in rows:
        assert row["type"] in ("str", "int", "float", "bool", "list"), row
        assert len(row["help"]) >= 15, row


def test_docs_table_is_the_settings_object() -> None:
    text = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert BEGIN in text and END in text, "docs/settings.md lost its settings markers"
    table = text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip("\n") + "\n"
    assert table == config.markdown_table(), (
        "docs/settings.md's table differs from clock_service/service/settings.py: "
        "run `python -m clock_service.service.settings docs/settings.md` to regenerate it")


def test_sources_flag_over_env_over_file_over_default(tmp_path: Path) -> None:
    file = tmp_path / "shotclock.toml"
    file.write_text('port = 9000\nmax_tables = 7\nfeed_lang = "ru"\n'
                    'allowed_origins = ["http://obs.local:8080"]\n')
    env = {"SHOTCLOCK_CONFIG": str(file), "SHOTCLOCK_PORT": "8100", "SHOTCLOCK_MAX_TABLES": "9",
           "SHOTCLOCK_TRUSTED_PROXIES": "10.0.0.1, 10.0.0.0/8", "HOME": str(tmp_path)}
    loaded = load(env, port=8200)
    s = loaded.settings
    assert (s.port, loaded.sources["port"]) == (8200, "flag")
    assert (s.max_tables, loaded.sources["max_tables"]) == (9, "env")
    assert (s.feed_lang, loaded.sources["feed_lang"]) == ("ru", "file")
    assert (s.allowed_origins, loaded.sources["allowed_origins"]) == (
        ("http://obs.local:8080",), "file")
    assert s.trusted_proxies == ("10.0.0.1", "10.0.0.0/8")
    assert (s.command_rate, loaded.sources["command_rate"]) == (20, "default")
    assert s.db == default_db_path(env)


@pytest.mark.parametrize(("env", "error"), [
    ({"SHOTCLOCK_PORT": "eighty"}, "SHOTCLOCK_PORT must be a whole number"),
    ({"SHOTCLOCK_WS_PING_S": "soon"}, "SHOTCLOCK_WS_PING_S must be a number"),
    ({"SHOTCLOCK_OPEN": "maybe"}, "SHOTCLOCK_OPEN must be true or false"),
])
def test_a_bad_value_names_the_setting(env: dict[str, str], error: str) -> None:
    with pytest.raises(SystemExit, match=error):
        load(env)


def test_a_file_with_an_unknown_setting_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "s.toml"
    file.write_text("prot = 80\n")
    with pytest.raises(SystemExit, match=r"unknown settings \['prot'\]"):
        load({"SHOTCLOCK_CONFIG": str(file)})


def test_empty_and_none_keep_their_meaning() -> None:
    assert load({"SHOTCLOCK_DEFAULT_TABLE": ""}).settings.default_table is None
    assert load({"SHOTCLOCK_DEFAULT_TABLE": "none"}).settings.default_table is None
    assert load({}).settings.default_table == "1"
    assert load({"SHOTCLOCK_PORT": ""}).settings.port == 8000
    assert load({"SHOTCLOCK_REFEREE_TOKEN": ""}).settings.referee_token is None


def test_the_camera_calibration_default_is_beside_the_store(tmp_path: Path) -> None:
    s = load({"SHOTCLOCK_DB": str(tmp_path / "x" / "c.db")}).settings
    assert s.camera_calibration_path == tmp_path / "x" / "camera-calibration.json"
    s = load({"SHOTCLOCK_CAMERA_CALIBRATION": "/etc/cal.json"}).settings
    assert s.camera_calibration_path == Path("/etc/cal.json")


def run_cli(*args: str, env: dict[str, str]) -> Ran:
    return shotclock(*args, env=env)


def test_shotclock_config_says_where_each_value_came_from_and_redacts(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
           "SHOTCLOCK_REFEREE_TOKEN": "s3cret-token",
           "SHOTCLOCK_MQTT_URL": "mqtt://table:hunter2@broker.local:1883/hall",
           "SHOTCLOCK_MAX_TABLES": "12"}
    out = run_cli("config", "--port", "9001", env=env)
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line.split(maxsplit=2)[1:] for line in out.stdout.splitlines()
             if line.startswith("SHOTCLOCK_")}
    assert lines["SHOTCLOCK_PORT"] == ["flag", "9001"]
    assert lines["SHOTCLOCK_MAX_TABLES"] == ["env", "12"]
    assert lines["SHOTCLOCK_COMMAND_RATE"] == ["default", "20"]
    assert lines["SHOTCLOCK_REFEREE_TOKEN"] == ["env", "***"]
    assert lines["SHOTCLOCK_MQTT_URL"] == ["env", "mqtt://table:***@broker.local:1883/hall"]
    assert "s3cret" not in out.stdout and "hunter2" not in out.stdout
    as_json = json.loads(run_cli("config", "--json", env=env).stdout)
    assert "s3cret" not in json.dumps(as_json)
    assert run_cli("config", "--markdown", env=env).stdout == config.markdown_table()


def test_every_command_finds_the_same_store_by_default(tmp_path: Path) -> None:
    """serve, report and camera calibrate read Settings' db (the state directory), never
    var/shotclock.db relative to the working directory (issue 18)."""
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
    expected = str(tmp_path / "state" / "shotclock" / "shotclock.db")
    assert Settings.from_env(env).db == expected
    from clock_service.edges.reports import cli as report_cli

    assert report_cli.default_store(env) == expected


def test_docs_say_the_undo_depth_the_core_keeps() -> None:
    from clock_service.core.clock import UNDO_DEPTH

    text = (ROOT / "docs" / "timing.md").read_text(encoding="utf-8")
    said = re.search(r"up to (\d+) deep", text)
    assert said and int(said.group(1)) == UNDO_DEPTH
