"""Every setting of the service and its commands, in one place (issue 18 point 4).

Each setting is a field of :class:`Settings` with its type, its default and its help; its
environment variable is ``SHOTCLOCK_<NAME>`` unless the field says otherwise. A value
comes from, in order: a command-line flag, the environment, the TOML file named by
``SHOTCLOCK_CONFIG`` (keys are the field names: ``port = 8080``), the default. This is the
only module that reads ``SHOTCLOCK_*`` variables; ``shotclock config`` prints the effective
values and where each came from (secrets redacted), and docs/settings.md's table is made
from the same fields (``shotclock config --markdown``; tests/test_settings.py keeps them
equal).
"""

from __future__ import annotations

import os
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from clock_service.service import redaction

__all__ = ["Settings", "Loaded", "default_db_path", "load", "CONFIG_ENV", "PREFIX"]

PREFIX = "SHOTCLOCK_"
CONFIG_ENV = "SHOTCLOCK_CONFIG"  # a TOML file of settings (below the environment)
REDACTED = redaction.REDACTED


def default_db_path(environ: Mapping[str, str] | None = None, name: str = "shotclock.db") -> str:
    """Where the store lives when nobody says: never relative to the working directory.

    Under systemd (``StateDirectory=shotclock``) that is ``$STATE_DIRECTORY``; otherwise the
    user's state directory, ``$XDG_STATE_HOME/shotclock`` or ``~/.local/state/shotclock``.
    (A relative default once made the unit, run with cwd ``/``, try ``/var/shotclock.db``
    and exit: issue 10, defect 1.) ``name``: the file there (``hall.db`` for ``shotclock
    hall``, whose store is its own: a hall server may run a table service too).
    """
    env = os.environ if environ is None else environ
    state = env.get("STATE_DIRECTORY", "")
    # systemd gives a colon-separated list when a unit has several state directories.
    first = state.split(":")[0]
    if first and Path(first).is_absolute():
        return str(Path(first) / name)
    xdg = env.get("XDG_STATE_HOME", "")
    if xdg and Path(xdg).is_absolute():  # the XDG spec: a relative value is to be ignored
        return str(Path(xdg) / "shotclock" / name)
    return str(Path(env.get("HOME") or Path.home()) / ".local" / "state" / "shotclock" / name)


def setting(default: Any, help: str, *, env: str | None = None, secret: bool = False,
            shown: str | None = None, commands: str = "serve") -> Any:
    """A field of :class:`Settings`. ``env``: its variable when not ``SHOTCLOCK_<NAME>``;
    ``secret``: never printed (a URL's password only); ``shown``: the default as the docs
    say it when it is worked out at start (the store's path); ``commands``: who reads it."""
    meta = {"help": help, "env": env, "secret": secret, "shown": shown, "commands": commands}
    if isinstance(default, tuple | list | dict):
        return field(default_factory=lambda: default, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Settings:
    # -- where and what -------------------------------------------------------------------
    host: str = setting("127.0.0.1", "address to listen on (flag `--host`)",
                        commands="serve, hall")
    port: int = setting(8000, "port to listen on (flag `--port`)", commands="serve, hall")
    db: str = setting(None, "the store (SQLite file; flag `--db`). Never relative to the "
                      "working directory: `$STATE_DIRECTORY/shotclock.db` under systemd, else "
                      "`$XDG_STATE_HOME/shotclock/shotclock.db` or "
                      "`~/.local/state/shotclock/shotclock.db`",
                      shown="state directory", commands="serve, report, camera")
    hall_db: str = setting(None, "`shotclock hall`'s own store (flag `--db`): `hall.db` "
                           "where `serve` keeps `shotclock.db`",
                           shown="state directory", commands="hall")
    referee_token: str | None = setting(
        None, "when set, every command needs a token: `Authorization: Bearer <token>` "
        "(HTTP), on the WebSocket the subprotocol `bearer.<token>` or `?token=`, in an MQTT "
        "command's `token`; reading never does. This token is the **director's** (every "
        "table, creating, archiving, issuing tokens); per-table referee tokens are issued "
        "through `/api/tokens` (see [Tokens and roles](api.md#tokens-and-roles)). On a "
        "non-loopback address at "
        "least 16 characters, not a placeholder",
        secret=True, commands="serve, hall, shotclock-bridge")
    default_table: str | None = setting(
        "1", "the table created at start if missing (empty or `none`: none). On a hall's "
        "table Pi: its own table id")
    display: str = setting("terminal", "`terminal` (the default table's clock in the "
                           "terminal when no hardware is set) or `none` (flag `--display`)")
    presets_dir: str | None = setting(
        None, "a directory of the federation's own time-profile presets (JSON or TOML; see "
        "[Profiles and presets](timing.md#profiles-and-presets))")
    max_tables: int = setting(200, "live tables at most (`DELETE /api/tables/{id}` "
                              "archives one)")
    # -- results out (issue 25) ------------------------------------------------------------
    results_webhook: str | None = setting(
        None, "POST each finished match's result to this http(s) URL, signed (unset: none; "
        "see docs/results.md); `user:password@` is sent as Basic authentication")
    results_secret: str | None = setting(
        None, "the results webhook's secret: each POST is signed with it (HMAC-SHA256)",
        secret=True)
    results_retry_s: float = setting(2.0, "the first retry of a failed webhook after this many "
                                     "seconds, doubling to 5 minutes")
    # -- MQTT ---------------------------------------------------------------------------------
    mqtt_url: str | None = setting(
        None, "`mqtt://[user:pass@]host[:port]/<hall>` (`mqtts://` for TLS): publish every "
        "table on the broker, take commands from it; for `shotclock hall`, the broker to "
        "mirror (flag `--mqtt`). Needs the `mqtt` extra. The shipped broker set-up gives each "
        "table's Pi its own account (`deploy/mosquitto/accounts.py` writes this line for "
        "each)", secret=True, commands="serve, hall")
    tls_cert: str | None = setting(
        None, "HTTPS: the certificate (PEM, chain; flag `--tls-cert`; `shotclock tls init` "
        "makes one). With `SHOTCLOCK_TLS_KEY`; one without the other exits 78",
        commands="serve, hall")
    tls_key: str | None = setting(
        None, "HTTPS: the certificate's private key (PEM; flag `--tls-key`)",
        commands="serve, hall")
    signing_key: str | None = setting(
        None, "the Ed25519 key that signs each finished match's record (made at the first "
        "start, mode 600; unset: `<db>.key` beside the store). See "
        "[Signed records](reports.md#signed-records)",
        shown="beside the store")
    mqtt_ca: str | None = setting(
        None, "for `mqtts://`: the CA file that signed the broker's certificate (the hall CA "
        "of `shotclock tls init`; unset: the system's CAs). A broker whose certificate does "
        "not chain to it is refused (`broker_unreachable`, saying why)",
        commands="serve, hall")
    # -- hardware and camera --------------------------------------------------------------------
    hardware: str | None = setting(
        None, "`none`, `gpio` or `serial` (over the config file's `kind`; unset: the file's, "
        "else none): see [deploy/README.md](../deploy/README.md)",
        commands="serve, blank, shotclock-bridge")
    hardware_config: str | None = setting(
        None, "a TOML file of the table's hardware (pins, serial port, buttons)",
        commands="serve, blank, shotclock-bridge")
    serial_port: str | None = setting(None, "the display controller's serial port (over the "
                                      "config file's)", commands="serve, blank, shotclock-bridge")
    camera: str | None = setting(None, "the overhead camera: a device number, a device path, "
                                 "`picamera2[:N]` (the Pi camera module), a video file or "
                                 "a URL (unset: no camera)",
                                 commands="serve, camera")
    camera_mode: str = setting("assist", "`assist` (the camera suggests, the referee "
                               "decides) or `auto` (it sends start and shot)",
                               commands="serve, camera")
    camera_table: str | None = setting(None, "the table the camera watches (unset: the "
                                       "default table, else `1`)", commands="serve, camera")
    camera_calibration: str | None = setting(
        None, "the camera's calibration file (unset: `camera-calibration.json` beside the "
        "store)", shown="beside the store", commands="serve, camera")
    camera_clips: int = setting(100, "video clips of rests, strikes and time fouls kept "
                                "(about 2 s before to 1 s after each, in `camera-clips/` "
                                "beside the store; the oldest go first); 0: no clips",
                                commands="serve")
    camera_clips_mb: int = setting(256, "megabytes of camera clips kept at most",
                                   commands="serve")
    # -- pages and feeds -------------------------------------------------------------------
    feed_dir: str | None = setting(None, "`serve` keeps the text files for OBS/Wirecast in "
                                   "this directory (see [broadcast.md](broadcast.md)); unset: none")
    feed_table: str | None = setting(None, "the table whose files go in `SHOTCLOCK_FEED_DIR` "
                                     "(unset: every table, each in `DIR/<id>/`)")
    feed_lang: str = setting("en", "`en` or `ru`: the language of `last_event.txt`")
    chromium: str | None = setting(None, "the headless Chromium `shotclock report --pdf` "
                                   "prints with (unset: the first of chromium, "
                                   "chromium-browser, google-chrome found)", commands="report")
    # -- the network -------------------------------------------------------------------------
    allowed_hosts: tuple[str, ...] = setting(
        (), "names (and addresses) this service is reached by besides its own: `localhost`, "
        "the machine's hostname and `<hostname>.local` and the addresses it listens on are "
        "always allowed; a request whose `Host` is none of them is refused (421 "
        "`host_not_allowed`: DNS rebinding). `clock.hall.example`, `*.hall.example` (its "
        "subdomains), `*` (any: off); comma- or space-separated. See "
        "[policy.md](policy.md#hosts)", commands="serve, hall")
    allowed_origins: tuple[str, ...] = setting(
        (), "origins besides the service's own whose pages may command and open WebSockets "
        "(`http://obs.local:8080`, ...; `*`: any); comma- or space-separated")
    trusted_proxies: tuple[str, ...] = setting(
        (), "addresses or networks of reverse proxies whose `X-Forwarded-For` names the "
        "client (anything else's is ignored); comma- or space-separated")
    open: bool = setting(False, "listen on a non-loopback address without a referee token "
                         "(flag `--open`; warned on every start)", commands="serve, hall")
    ws_queue: int = setting(1024, "messages that may wait for one WebSocket client before "
                            "it is cut off")
    ws_send_timeout_s: float = setting(5.0, "seconds one WebSocket send may take before the "
                                       "client is cut off")
    ws_ping_s: float = setting(20.0, "a WebSocket ping every this many seconds; no pong "
                               "within as long again drops the connection")
    max_message_bytes: int = setting(16_384, "the largest HTTP body or WebSocket message")
    command_rate: int = setting(20, "commands a second per client address (HTTP and every "
                                "WebSocket of it together; 0: no limit). See [A hostile "
                                "network](policy.md#a-hostile-network)")
    command_burst: int = setting(60, "commands one address may save up")
    read_rate: int = setting(20, "read tokens a second per client address (a page of many "
                             "events costs more than one; 0: no limit)")
    read_burst: int = setting(60, "read tokens one address may save up")
    message_rate: int = setting(50, "WebSocket messages a second per client address, all its "
                                "sockets together; a socket over it is closed (0: no limit)")
    message_burst: int = setting(100, "WebSocket messages one address may save up")
    handshake_rate: int = setting(50, "WebSocket handshakes a second from everyone together "
                                  "(0: no limit)")
    handshake_burst: int = setting(25, "WebSocket handshakes saved up, everyone together")
    max_connections: int = setting(1000, "connections in all (lowered to fit the open-file "
                                   "limit)")
    max_connections_per_address: int = setting(64, "connections per client address "
                                               "(trusted proxies exempt)")
    max_sockets_per_address: int = setting(32, "WebSockets per client address")
    request_timeout_s: float = setting(5.0, "a request's headers and body must arrive within "
                                       "this many seconds of its first byte")
    keep_alive_s: float = setting(5.0, "an idle keep-alive connection is closed after this "
                                  "many seconds")
    max_replays: int = setting(4, "`?since=` replays streaming from the store at once")
    store_wait_s: float = setting(5.0, "seconds a command waits for the disk before 503 "
                                  "`store_unavailable`")
    # -- the store's growth (issue 19) -----------------------------------------------------------
    archive_days: int = setting(
        30, "finished matches that ended more than this many days ago go from the store to "
        "one compressed file each, at start and once a day (0: never; see "
        "[durability.md](durability.md))",
        commands="serve, store")
    disk_low_mb: int = setting(
        512, "the fault `disk_low` (console, display, `/api/health`) when the store's disk "
        "has less than this many MB free, well before writes fail")
    # -- shotclock-bridge (a table's hardware driven from a remote service) -----------------
    bridge_server: str | None = setting(None, "`shotclock-bridge`: the service, e.g. "
                                        "`ws://hall:8000` (flag `--server`)",
                                        env="SHOTCLOCK_SERVER", commands="shotclock-bridge")
    bridge_table: str | None = setting(None, "`shotclock-bridge`: the table id (flag "
                                       "`--table`; unset: the hardware config's `table_id`)",
                                       env="SHOTCLOCK_TABLE", commands="shotclock-bridge")

    def __post_init__(self) -> None:
        # The stores' defaults depend on the environment (systemd's, XDG's): worked out
        # when none was given, here too for Settings(...) made in code.
        if self.db is None:
            object.__setattr__(self, "db", default_db_path())
        if self.hall_db is None:
            object.__setattr__(self, "hall_db", default_db_path(name="hall.db"))

    @property
    def camera_calibration_path(self) -> Path:
        """The camera's calibration file: the setting, else beside the store (the one place
        this default is written)."""
        if self.camera_calibration:
            return Path(self.camera_calibration)
        return Path(self.db).parent / "camera-calibration.json"

    @property
    def camera_clips_dir(self) -> Path:
        """The camera's clips: beside the store."""
        return Path(self.db).parent / "camera-clips"

    @property
    def camera_table_id(self) -> str:
        return (self.camera_table or self.default_table or "1").strip()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """The settings from the environment (and ``SHOTCLOCK_CONFIG``'s file); ``overrides``
        are the command's flags (None: not given)."""
        return load(environ, **overrides).settings


@dataclass(frozen=True)
class Loaded:
    settings: Settings
    sources: dict[str, str]  # field -> "default", "env", "file" or "flag"
    file: str | None = None


def env_name(f: Any) -> str:
    return str(f.metadata.get("env") or PREFIX + f.name.upper())


def _hints() -> dict[str, Any]:
    return typing.get_type_hints(Settings)


def _base(kind: Any) -> tuple[Any, bool]:
    """(the type, whether None is allowed)."""
    args = typing.get_args(kind)
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0], True
    return kind, False


def parse(name: str, kind: Any, raw: Any, where: str) -> Any:
    """A raw value (a string from the environment, or a TOML value) as the field's type;
    a wrong one stops the program naming the setting and where it came from."""
    base, optional = _base(kind)
    if isinstance(raw, str):
        text = raw.strip()
        if optional and text == "":
            return None
        if base is tuple or typing.get_origin(base) is tuple:
            return tuple(item for item in text.replace(",", " ").split() if item)
        if base is bool:
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off", ""):
                return False
            raise SystemExit(f"{where} must be true or false, got {raw!r}")
        if base is int:
            try:
                return int(text)
            except ValueError:
                raise SystemExit(f"{where} must be a whole number, got {raw!r}") from None
        if base is float:
            try:
                return float(text)
            except ValueError:
                raise SystemExit(f"{where} must be a number, got {raw!r}") from None
        return raw if base is str and name.endswith("token") else text
    # a TOML value
    if base is tuple or typing.get_origin(base) is tuple:
        if isinstance(raw, list) and all(isinstance(v, str) for v in raw):
            return tuple(raw)
        raise SystemExit(f"{where} must be a list of strings, got {raw!r}")
    if base is float and isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    if isinstance(raw, base) and not (base is int and isinstance(raw, bool)):
        return raw
    raise SystemExit(f"{where} must be {getattr(base, '__name__', base)}, got {raw!r}")


def _special(name: str, value: Any) -> Any:
    if name == "default_table" and isinstance(value, str) and value.strip() in ("", "none"):
        return None
    if name in ("camera_mode", "hardware") and isinstance(value, str):
        return value.strip().lower()
    return value


def load(environ: Mapping[str, str] | None = None, **flags: Any) -> Loaded:
    """The effective settings and where each came from: a flag (``flags``, None: not
    given), the environment, ``SHOTCLOCK_CONFIG``'s TOML file, else the default."""
    env = os.environ if environ is None else environ
    hints = _hints()
    names = {f.name for f in fields(Settings)}
    unknown = set(flags) - names
    if unknown:
        raise TypeError(f"unknown settings: {sorted(unknown)}")
    from_file: dict[str, Any] = {}
    path = (env.get(CONFIG_ENV) or "").strip() or None
    if path:
        try:
            with Path(path).open("rb") as stream:
                from_file = tomllib.load(stream)
        except OSError as exc:
            raise SystemExit(f"{CONFIG_ENV}: cannot read {path!r} ({exc.strerror})") from None
        except tomllib.TOMLDecodeError as exc:
            raise SystemExit(f"{CONFIG_ENV}: {path} is not valid TOML: {exc}") from None
        wrong = set(from_file) - names
        if wrong:
            raise SystemExit(f"{CONFIG_ENV}: {path}: unknown settings {sorted(wrong)} "
                             "(see `shotclock config`)")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for f in fields(Settings):
        variable = env_name(f)
        if flags.get(f.name) is not None:
            values[f.name], sources[f.name] = flags[f.name], "flag"
        elif variable in env and not (env[variable] == "" and f.name in _EMPTY_IS_UNSET):
            values[f.name] = _special(f.name, parse(f.name, hints[f.name], env[variable],
                                                    variable))
            sources[f.name] = "env"
        elif f.name in from_file:
            values[f.name] = _special(f.name, parse(f.name, hints[f.name], from_file[f.name],
                                                    f"{path}: {f.name}"))
            sources[f.name] = "file"
        else:
            sources[f.name] = "default"
    if values.get("db") is None:
        values["db"] = default_db_path(env)
    if values.get("hall_db") is None:
        values["hall_db"] = default_db_path(env, name="hall.db")
    return Loaded(Settings(**values), sources, path)


# Set but empty means "the default" for these (an empty SHOTCLOCK_PORT is no port; an empty
# SHOTCLOCK_DEFAULT_TABLE, by contrast, means "no default table").
_EMPTY_IS_UNSET = frozenset({
    "host", "port", "db", "hall_db", "display", "feed_lang", "camera_mode", "ws_queue",
    "ws_send_timeout_s", "ws_ping_s", "max_message_bytes", "command_rate", "command_burst",
    "read_rate", "read_burst", "message_rate", "message_burst", "handshake_rate",
    "handshake_burst", "max_connections", "max_connections_per_address",
    "max_sockets_per_address", "request_timeout_s", "keep_alive_s", "max_replays",
    "store_wait_s", "max_tables", "open", "results_retry_s", "archive_days", "disk_low_mb"})


def redact(name: str, value: Any) -> Any:
    """A setting's value as it may be shown: a secret as ***, and in every value the
    credentials inside a URL (clock_service/service/redaction.py: a password, a ``?key=``)."""
    f = next(f for f in fields(Settings) if f.name == name)
    if value in (None, ""):
        return value
    if f.metadata.get("secret") and not name.endswith("_url"):
        return REDACTED  # a token; a URL (the broker's) shows all but its credentials
    if isinstance(value, str):
        return redaction.redact(value)
    if isinstance(value, tuple):
        return tuple(redaction.redact(v) if isinstance(v, str) else v for v in value)
    return value


def shown(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ", ".join(value)
    return str(value)


def describe() -> list[dict[str, Any]]:
    """Every setting: name, variable, type, default (as documented), help, who reads it."""
    hints = _hints()
    out = []
    for f in fields(Settings):
        base, optional = _base(hints[f.name])
        kind = "list" if base is tuple or typing.get_origin(base) is tuple else base.__name__
        default = f.metadata.get("shown") or shown(
            f.default_factory() if callable(f.default_factory) else f.default)
        out.append({"name": f.name, "env": env_name(f), "type": kind, "default": default,
                    "shown": bool(f.metadata.get("shown")), "help": f.metadata["help"],
                    "commands": f.metadata["commands"], "secret": bool(f.metadata.get("secret"))})
    return out


def markdown_table() -> str:
    """docs/settings.md's table (between its `settings:begin`/`settings:end` markers)."""
    lines = ["| environment | type | default | read by | meaning |",
             "| --- | --- | --- | --- | --- |"]
    for row in describe():
        default = row["default"]
        if default in ("", None):
            default = "unset"
        elif not row["shown"]:
            default = f"`{default}`"
        lines.append(f"| `{row['env']}` | {row['type']} | {default} | {row['commands']} | "
                     f"{row['help']} |")
    return "\n".join(lines) + "\n"


def effective(loaded: Loaded) -> list[dict[str, Any]]:
    """Each setting's effective value (secrets redacted) and where it came from."""
    out = []
    for row in describe():
        value = getattr(loaded.settings, row["name"])
        out.append({"name": row["name"], "env": row["env"],
                    "value": redact(row["name"], value), "source": loaded.sources[row["name"]]})
    return out


BEGIN, END = "<!-- settings:begin -->", "<!-- settings:end -->"


def write_table(path: Path) -> bool:
    """Put :func:`markdown_table` between the markers of ``path``; True if it changed."""
    text = path.read_text(encoding="utf-8")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:start] + "\n" + markdown_table() + text[end:]
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":  # python -m clock_service.service.settings docs/settings.md
    import sys

    for name in sys.argv[1:] or ["docs/settings.md"]:
        print(f"{name}: {'updated' if write_table(Path(name)) else 'up to date'}")
