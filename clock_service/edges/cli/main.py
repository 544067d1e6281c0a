"""The ``shotclock`` command, and its composition root.

``serve`` and ``hall`` build every part of the service here (the store, the runtime, the
match reports, the table-side devices, the MQTT publisher, the camera, the tournament) and
hand them to ``create_app`` (clock_service/edges/api), which starts them with the app and mounts
the routers.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import uvicorn
    from fastapi import FastAPI

    from clock_service.edges.api import Part
    from clock_service.edges.api.hardware import Dimmable
    from clock_service.edges.broadcast.feeds import FeedBoard
    from clock_service.edges.camera.adapter import CameraAdapter
    from clock_service.edges.mqtt.hall import HallRuntime
    from clock_service.edges.mqtt.topics import BrokerTarget
    from clock_service.edges.reports.service import Reports
    from clock_service.edges.tournament.part import TournamentPart
    from clock_service.service.auth import Authority
    from clock_service.service.runtime import Runtime
    from clock_service.service.settings import Settings
    from clock_service.service.storage import Store
    from clock_service.service.timesource import TimeSource
    from firmware_bridge.table_side import TableSide

__all__ = ["main", "table_runtime", "table_app", "serve_app", "Serving", "hall_app",
           "EXIT_REFUSED", "EXIT_STORE_LOCKED", "EXIT_STORE_CORRUPT", "EXIT_STORE_UNWRITABLE"]

log = logging.getLogger("shotclock")


# Descriptors kept for the store, logs, devices and the listening socket, and for a
# backlog's worth of connections accepted before the caps close them (serving.BACKLOG).
FILES_BESIDES_CONNECTIONS = 64 + 128


# sysexits.h EX_CONFIG: the configuration is wrong and a restart cannot help. The units
# say RestartPreventExitStatus=78, so systemd does not restart-loop an unconfigured box.
EX_CONFIG = 78
# Exit codes of ``shotclock serve`` when it refuses to start (sysexits.h; see README).
EXIT_REFUSED = EX_CONFIG  # a non-loopback address without a referee token or --open
EXIT_STORE_LOCKED = 75  # EX_TEMPFAIL: another process serves this store (retry later)
EXIT_STORE_CORRUPT = 65  # EX_DATAERR: the store failed PRAGMA quick_check
# EX_CANTCREAT: the store's path cannot be written (read-only root): the units list it in
# RestartPreventExitStatus, so systemd does not restart it every second.
EXIT_STORE_UNWRITABLE = 73
# The integrity check before READY stops after this long and finishes after start: systemd
# waits 90 s for READY (TimeoutStartSec), and on a Pi the imports and loading the tables
# take seconds too. 10 s is ~0.3-1 GB of store on an SD card (see README).
STORE_CHECK_BUDGET_S = 10.0


def _check_tls(settings: Settings, prog: str) -> int | None:
    """A certificate and its key, both or neither, loadable (else exit 78, saying why)."""
    if not settings.tls_cert and not settings.tls_key:
        return None
    import ssl

    problem = None
    if not (settings.tls_cert and settings.tls_key):
        problem = "--tls-cert and --tls-key go together (SHOTCLOCK_TLS_CERT, _KEY)"
    else:
        from clock_service.service.tls import server_context

        try:  # as it will be served (the hall's TLS policy)
            server_context(settings.tls_cert, settings.tls_key)
        except (OSError, ssl.SSLError) as exc:
            problem = f"cannot use {settings.tls_cert} with {settings.tls_key}: {exc}"
    if problem is None:
        return None
    print(f"{prog}: {problem}", file=sys.stderr, flush=True)
    return EXIT_REFUSED


def _check_names(settings: Settings, prog: str) -> int | None:
    """SHOTCLOCK_ALLOWED_HOSTS and SHOTCLOCK_TRUSTED_PROXIES readable (else exit 78, naming
    the wrong item): a typo must not start a service that refuses its own pages."""
    from clock_service.service.hosts import Hosts
    from clock_service.service.limits import networks

    try:
        Hosts.of(settings, trusted=networks(settings.trusted_proxies))
    except ValueError as exc:
        print(f"{prog}: {exc}", file=sys.stderr, flush=True)
        return EXIT_REFUSED
    return None


def _refuse_exposed(settings: Settings, prog: str) -> int | None:
    """Refuse (exit 78) a non-loopback address without a referee token unless --open, or
    with a weak token; warn at every start that plain HTTP on it carries the token in
    clear."""
    from clock_service.edges.api.server import is_loopback

    tls = _check_tls(settings, prog) or _check_names(settings, prog)
    if tls is not None:
        return tls
    if is_loopback(settings.host):
        return None
    if not settings.tls_cert:
        # Issue 20, finding 5: on WPA2-PSK Wi-Fi anyone who knows the passphrase decrypts
        # everyone's traffic; a relay reads it outright. Said at every start.
        print(f"{prog}: WARNING: plain HTTP on {settings.host}: the referee token, every "
              "command and every page travel in clear on the venue's network (anyone on "
              "its Wi-Fi can read the token and run the clocks). Give --tls-cert and "
              "--tls-key (shotclock tls init makes a hall CA and certificates), or put a "
              "TLS reverse proxy in front (deploy/README.md).", file=sys.stderr, flush=True)
    if settings.referee_token:
        from clock_service.service.auth import weak_token_reason

        weak = weak_token_reason(settings.referee_token)
        if weak is None:
            return None
        print(f"{prog}: refusing to listen on {settings.host} with a weak referee token "
              f"({weak}): anyone on the venue's network could guess it and run every "
              "clock. Set SHOTCLOCK_REFEREE_TOKEN to a random one, e.g. "
              "python3 -c 'import secrets; print(secrets.token_urlsafe(24))'.",
              file=sys.stderr, flush=True)
        return EXIT_REFUSED
    if not settings.open:
        print(f"{prog}: refusing to listen on {settings.host} without a referee token: "
              "anyone on the network could run every clock. Set SHOTCLOCK_REFEREE_TOKEN, "
              "listen on 127.0.0.1, or pass --open to accept that risk.",
              file=sys.stderr, flush=True)
        return EXIT_REFUSED
    print(f"{prog}: WARNING: --open: listening on {settings.host} with NO referee "
          "token: anyone who can reach this address controls every clock.",
          file=sys.stderr, flush=True)
    return None


def _locked_store(store: Store) -> Store | int:
    """The store, locked for this process and checked; or the exit code (75, 65, 73)."""
    from clock_service.core.errors import StoreCorrupt, StoreLocked, StoreUnwritable

    try:
        store.lock()  # held until the process ends
        if not store.check(budget_s=STORE_CHECK_BUDGET_S):
            logging.getLogger("shotclock.store").warning(
                "the event store %s is big: its integrity check did not finish in %.0f s "
                "and goes on after start (a fault on /api/health if it finds damage)",
                store.path, STORE_CHECK_BUDGET_S)
    except StoreLocked as exc:
        print(f"shotclock: {exc.message}", file=sys.stderr, flush=True)
        return EXIT_STORE_LOCKED
    except StoreCorrupt as exc:
        print(f"shotclock: {exc.message}", file=sys.stderr, flush=True)
        return EXIT_STORE_CORRUPT
    except StoreUnwritable as exc:
        print(f"shotclock: {exc.message}", file=sys.stderr, flush=True)
        return EXIT_STORE_UNWRITABLE
    return store


# -- the composition root ----------------------------------------------------------------------

def table_runtime(settings: Settings, *, time: TimeSource | None = None,
                  store: Store | None = None) -> Runtime:
    """A table service's runtime: the clocks over the store (``settings.db`` unless given;
    ``serve`` gives one already locked and checked)."""
    from clock_service.service.hub import Hub
    from clock_service.service.runtime import Runtime
    from clock_service.service.storage import Store
    from clock_service.service.timesource import RealTime

    _configure_presets(settings)
    return Runtime(store or Store(settings.db), time or RealTime(), Hub(settings.ws_queue),
                   max_tables=settings.max_tables, store_wait_s=settings.store_wait_s,
                   archive_days=settings.archive_days,
                   disk_low_bytes=settings.disk_low_mb * 1_000_000)


def _configure_presets(settings: Settings) -> None:
    from clock_service.core import presets

    try:
        presets.configure(settings.presets_dir)
    except presets.PresetError as exc:  # a bad preset file stops start-up, saying which
        raise SystemExit(f"SHOTCLOCK_PRESETS_DIR: {exc}") from None


def _app(settings: Settings, runtime: Runtime | HallRuntime, *,
         authority: Authority | None = None, reports: Reports | None = None,
         feeds: FeedBoard | None = None, parts: Sequence[Part] = (),
         hardware: Dimmable | None = None, camera: CameraAdapter | None = None,
         tournament: TournamentPart | None = None) -> FastAPI:
    """The app over ``runtime``, every edge's routes made here with their parts: the match
    reports and the broadcast feeds (made before the runtime starts: they see every
    publication), the tournament (a table service's: the draw and the results out, started
    after the other ``parts`` and stopped before them), the camera's routes and the pages.
    ``authority``: the credentials (the MQTT publisher shares them)."""
    from clock_service.edges.api import create_app
    from clock_service.edges.broadcast.feeds import FeedBoard
    from clock_service.edges.broadcast.feeds import router as feeds_router
    from clock_service.edges.reports.routes import routers as report_routers
    from clock_service.edges.tournament.routes import router as tournament_router
    from clock_service.service.auth import Authority
    from web_ui import mount_pages

    reports = reports or _reports(runtime)
    feeds = feeds or FeedBoard(runtime)
    if tournament is not None:  # the feeds show the draw's event, round and next match
        feeds.attach_draw(tournament.tournament.feed_info)
    places: dict[str, str] = {}
    clips_table: Callable[[], str | None] = lambda: None  # noqa: E731
    routers = [feeds_router(feeds)]
    if camera is not None:
        from clock_service.edges.camera.routes import camera_router

        routers.append(camera_router(camera))
        places["camera"] = camera.table_id
        clips_table = lambda: camera.table_id if camera.evidence is not None else None  # noqa: E731
    if hardware is not None:
        places["display"] = hardware.table
    routers += report_routers(reports, clips_table)
    routers.append(tournament_router(None if tournament is None else tournament.tournament,
                                     None if tournament is None else tournament.results))
    return create_app(settings, runtime,
                      authority=authority or Authority(settings.referee_token, runtime.store),
                      routers=routers, pages=mount_pages,
                      parts=[*parts, *([] if tournament is None else [tournament])],
                      hardware=hardware, places=places)


def _reports(runtime: Runtime | HallRuntime) -> Reports:
    """The match records over the runtime's store."""
    from clock_service.edges.reports.service import Reports

    return Reports(runtime.store.reader_connection, runtime.store.path)


@dataclass(frozen=True)
class TableService:
    """A table service as the composition root makes it, its parts kept for tests and
    benchmarks: the app and what it was made of."""

    app: FastAPI
    runtime: Runtime
    reports: Reports
    tournament: TournamentPart


def table_service(settings: Settings, *, time: TimeSource | None = None,
                  hardware: Dimmable | None = None) -> TableService:
    """A table service with no devices, publisher or camera (tests and benchmarks);
    ``hardware``: a display to dim."""
    runtime = table_runtime(settings, time=time)
    reports = _reports(runtime)
    tournament = _tournament(runtime, settings, reports)
    app = _app(settings, runtime, reports=reports, tournament=tournament, hardware=hardware)
    return TableService(app, runtime, reports, tournament)


def table_app(settings: Settings, *, time: TimeSource | None = None) -> FastAPI:
    """A table service's app with no devices, publisher or camera (tests and benchmarks)."""
    return table_service(settings, time=time).app


def _tournament(runtime: Runtime, settings: Settings, reports: Reports) -> TournamentPart:
    """The draw's queues and the results out over a table service's runtime (issue 25):
    one part of the app. The results read the app's own match records."""
    from clock_service.core.errors import InvalidInput
    from clock_service.edges.tournament.part import TournamentPart
    from clock_service.edges.tournament.results import Results
    from clock_service.edges.tournament.service import Tournament

    tournament = Tournament(runtime)
    try:
        results = Results(runtime, reports,
                          webhook=settings.results_webhook, secret=settings.results_secret,
                          retry_s=settings.results_retry_s, draw_number=tournament.draw_number)
    except InvalidInput as exc:  # a webhook URL that is not http(s)
        raise SystemExit(f"shotclock: {exc.message}") from None
    return TournamentPart(tournament, results)


@dataclass
class _Part:
    """A part made of two coroutine functions (clock_service.edges.api.Part)."""

    start: Callable[[], Awaitable[None]]
    stop: Callable[[], Awaitable[None]]


def _serve(args: argparse.Namespace) -> int:
    from clock_service.edges.api.server import install_redactor, raise_open_files
    from clock_service.service.settings import Settings
    from clock_service.service.storage import Store

    settings = Settings.from_env(host=args.host, port=args.port, db=args.db,
                                 display=args.display, open=args.open or None,
                                 tls_cert=args.tls_cert, tls_key=args.tls_key)
    install_redactor(settings.referee_token)
    refused = _refuse_exposed(settings, "shotclock")
    if refused is not None:
        return refused
    store = _locked_store(Store(settings.db))
    if isinstance(store, int):
        return store
    soft, _ = raise_open_files()
    if 0 < soft < settings.max_connections + FILES_BESIDES_CONNECTIONS:
        # The caps, not the kernel, must say no: a refused accept() (EMFILE) stalls everyone.
        cap = max(16, soft - FILES_BESIDES_CONNECTIONS)
        log.warning("only %d open files allowed (ulimit -n, LimitNOFILE): connections capped "
                    "at %d instead of %d (SHOTCLOCK_MAX_CONNECTIONS); raise the limit", soft,
                    cap, settings.max_connections)
        settings = replace(settings, max_connections=cap)
    serving = serve_app(settings, store)
    base = f"{'https' if settings.tls_cert else 'http'}://{settings.host}:{settings.port}"
    table = settings.default_table or "1"
    camera = serving.camera
    about_camera = None if camera is None else (
        f"{camera.spec.kind} ({camera.mode} mode, table {camera.table_id})")
    print(f"shotclock: serving on {base}  (store: {settings.db}; referee token "
          f"{'on' if settings.referee_token else 'off'})\n"
          f"  hall view        {base}/\n"
          f"  referee console  {base}/referee?table={table}\n"
          f"  stream overlay   {base}/overlay?table={table}\n"
          f"  table display    {base}/display?table={table}\n"
          f"  statistics       {base}/stats?table={table}\n"
          f"  match protocol   {base}/report?match={table}.1  (each table's: the hall)\n"
          f"  API              {base}/docs\n"
          f"  answers to       {_names(settings)}"
          + (f"\n  camera           {about_camera}  (calibrate: {base}/calibrate)"
             if about_camera else "\n  camera           none (--camera: calibrate at /calibrate)"),
          file=sys.stderr, flush=True)
    server = serving.server(log_level=args.log_level, access_log=args.access_log)
    # uvicorn sets up its loggers when the config is made: redact their handlers too.
    install_redactor(settings.referee_token)
    _run_until_stopped(server)
    return 0


@dataclass(frozen=True)
class Serving:
    """What ``serve`` runs, composed from its settings and its store: the app and the
    table's side of it (its devices), with the camera if there is one."""

    app: FastAPI
    settings: Settings
    table_side: TableSide
    camera: CameraAdapter | None

    def server(self, *, log_level: str, access_log: bool) -> uvicorn.Server:
        """serve's uvicorn server (``_server``) over the app."""
        from clock_service.edges.api.server import uvicorn_config

        return _server(uvicorn_config(self.app, self.settings, log_level=log_level,
                                      access_log=access_log), self.table_side)


def serve_app(settings: Settings, store: Store,
              environ: Mapping[str, str] | None = None) -> Serving:
    """``serve``'s service over ``store`` (locked and checked): every part made here.
    ``environ``: where the hardware's configuration is read (``os.environ`` unless given:
    the settings were read from the same). A test serves it in a thread with this
    (harness/thread_server.py)."""
    from clock_service.edges.broadcast.cli import text_files
    from clock_service.edges.broadcast.feeds import FeedBoard
    from clock_service.service.auth import Authority

    runtime = table_runtime(settings, store=store)
    # Started in this order once the runtime has started, stopped in reverse before it
    # stops: the devices, then the publisher (it closes before the store: the last acked
    # seqs), then the camera.
    table_side = _table_side(runtime, settings, environ)
    parts: list[Part] = [table_side]
    authority = Authority(settings.referee_token, runtime.store)
    publisher = _mqtt_publisher(runtime, settings, authority)
    if publisher is not None:
        parts.append(publisher)
    # Each match's record signed when it ends (clock_service/service/signing.py).
    parts.append(_match_signer(runtime, settings))
    camera = _camera_adapter(runtime, settings)
    if camera is not None:
        parts.append(_Part(_async(camera.attach), _async(camera.close)))
    feeds = FeedBoard(runtime)
    files = text_files(feeds, settings)  # SHOTCLOCK_FEED_DIR (clock_service/edges/broadcast)
    if files is not None:
        parts.append(files)
    reports = _reports(runtime)
    app = _app(settings, runtime, authority=authority, reports=reports, feeds=feeds,
               parts=parts, hardware=table_side.dimmable, camera=camera,
               tournament=_tournament(runtime, settings, reports))
    return Serving(app, settings, table_side, camera)


def _server(config: Any, table_side: TableSide) -> uvicorn.Server:
    """uvicorn's server for ``serve``: READY to systemd once it listens, the watchdog patted
    from the loop while it serves; the digits blanked at once on SIGTERM/SIGINT."""
    import uvicorn

    from clock_service.service.sdnotify import Watchdog

    watchdog = Watchdog()

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            # Everything loaded so far (libraries, restored tables) lives as long as
            # the process: keep it out of the garbage collector's passes, and make the
            # passes rarer. The service makes almost no cyclic garbage, and a full pass
            # over a hall of tables and clients stalled the loop for 60-160 ms
            # (bench/README.md).
            gc.freeze()
            gc.set_threshold(20_000, 20, 100)
            if self.started:  # Type=notify: READY=1 once uvicorn listens
                watchdog.start("serving")

        async def shutdown(self, sockets: Any = None) -> None:
            await watchdog.stop()
            await super().shutdown(sockets=sockets)

        def handle_exit(self, sig: int, frame: Any) -> None:
            # SIGTERM/SIGINT: blank the digits now (defect 6: within 0.5 s), not after
            # uvicorn has waited for every client to go.
            table_side.on_signal()
            super().handle_exit(sig, frame)

    return Server(config)


def _names(settings: Settings) -> str:
    """The names and addresses the service answers to (clock_service/service/hosts.py), for
    the start banner: a page opened by any other is refused (421)."""
    from clock_service.service.hosts import Hosts

    return (", ".join(Hosts.of(settings).describe())
            + "  (more: SHOTCLOCK_ALLOWED_HOSTS, docs/policy.md#hosts)")


def _run_until_stopped(server: uvicorn.Server) -> None:
    """Run the server until a signal stops it. Ctrl-C is a requested stop, not a crash: one
    line and no traceback (issue 23, `make run`), whether uvicorn re-raises the interrupt
    after its orderly shutdown (KeyboardInterrupt) or not."""
    signals: list[int] = []
    handle_exit = server.handle_exit

    def record(sig: int, frame: Any) -> None:
        signals.append(sig)
        handle_exit(sig, frame)

    server.handle_exit = record  # type: ignore[method-assign]
    try:
        server.run()
    except KeyboardInterrupt:
        signals.append(signal.SIGINT)
    if signal.SIGINT in signals:
        print("shotclock: stopped (Ctrl-C)", file=sys.stderr, flush=True)


def _async(call: Callable[[], None]) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        call()

    return run


def _table_side(runtime: Runtime, settings: Settings,
                environ: Mapping[str, str] | None = None) -> TableSide:
    """The table-side devices: hardware if configured, else the terminal (or nothing).

    The configuration is read (and a bad one refused, exit 78) before the service starts.
    """
    from firmware_bridge.config import load_config
    from firmware_bridge.errors import HardwareConfigError
    from firmware_bridge.monitor import HardwareMonitor
    from firmware_bridge.table_side import TableSide

    try:
        config = load_config(environ)
    except HardwareConfigError as exc:
        print(f"shotclock: hardware configuration refused: {exc}", file=sys.stderr)
        raise SystemExit(EX_CONFIG) from None
    return TableSide(runtime, settings, config, HardwareMonitor(runtime.health, config))


def _blank(args: argparse.Namespace) -> int:
    """``shotclock blank``: turn the configured digits off and the buzzer silent, then exit.

    The units' ``ExecStopPost=``: however the service or bridge ended (a crash included),
    nothing stays lit or sounding. Never fails the stop: problems are logged and the exit
    status is 0.
    """
    from firmware_bridge.config import load_config
    from firmware_bridge.errors import HardwareConfigError
    from firmware_bridge.table_side import blank

    try:
        config = load_config()
    except HardwareConfigError as exc:
        logging.getLogger("shotclock.blank").warning(
            "nothing blanked: hardware configuration refused: %s", exc)
        return 0
    blank(config)
    return 0


def _broker_target(url: str, ca: str | None = None) -> BrokerTarget:
    """The broker and hall of ``SHOTCLOCK_MQTT_URL`` (``ca``: SHOTCLOCK_MQTT_CA, the hall
    CA for mqtts://); refuses a bad URL or a missing client library before the service
    starts."""
    from clock_service.core.errors import InvalidInput
    from clock_service.edges.mqtt.topics import parse_url

    try:
        target = parse_url(url, ca=ca)
    except InvalidInput as exc:
        raise SystemExit(f"shotclock: {exc.message}") from None
    try:
        import paho.mqtt.client  # noqa: F401
    except ImportError:
        raise SystemExit("shotclock: SHOTCLOCK_MQTT_URL is set but paho-mqtt is not "
                         "installed: pip install 'shotclock[mqtt]'") from None
    return target




def _match_signer(runtime: Runtime, settings: Settings) -> _Part:
    """Sign each match's record when it ends (clock_service/service/signing.py): the key is made
    at the first start, beside the store unless SHOTCLOCK_SIGNING_KEY names a file."""
    from pathlib import Path

    from clock_service.service.signing import MatchSigner, Signer, key_path_for

    path = Path(settings.signing_key) if settings.signing_key else key_path_for(settings.db)
    try:
        signer = Signer(path)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"shotclock: the signing key {path}: {exc}") from None
    log.info("match records signed with %s (fingerprint %s)", path, signer.fingerprint)
    match_signer = MatchSigner(runtime, signer)
    return _Part(_async(match_signer.attach), _async(match_signer.detach))


def _mqtt_publisher(runtime: Runtime, settings: Settings,
                    authority: Authority) -> _Part | None:
    """With SHOTCLOCK_MQTT_URL, publish every table on the broker (clock_service/edges/mqtt)."""
    if not settings.mqtt_url:
        return None
    from clock_service.edges.mqtt.publisher import MqttPublisher

    publisher = MqttPublisher(runtime, _broker_target(settings.mqtt_url, settings.mqtt_ca),
                              settings, authority=authority)
    return _Part(publisher.start, publisher.close)


def hall_app(settings: Settings, store: Store) -> FastAPI:
    """``hall``'s service over its own ``store`` (locked and checked): the hall's runtime,
    mirroring ``settings.mqtt_url``'s tables, behind the app. A test serves it in a thread
    with this (harness/thread_server.py)."""
    from clock_service.edges.mqtt.hall import HallRuntime
    from clock_service.service.hub import Hub
    from clock_service.service.timesource import RealTime

    assert settings.mqtt_url, "the hall mirrors a broker's tables"
    _configure_presets(settings)
    runtime = HallRuntime(store, RealTime(), Hub(settings.ws_queue),
                          _broker_target(settings.mqtt_url, settings.mqtt_ca), settings)
    return _app(settings, runtime)


def _hall(args: argparse.Namespace) -> int:
    """``shotclock hall``: every table of a hall, mirrored from the broker, behind the same
    HTTP/WebSocket API and pages (clock_service/edges/mqtt/hall.py)."""
    import uvicorn

    from clock_service.service.settings import Settings
    from clock_service.service.storage import Store

    settings = Settings.from_env(host=args.host, port=args.port, mqtt_url=args.mqtt,
                                 open=args.open or None, tls_cert=args.tls_cert,
                                 tls_key=args.tls_key)
    # The hall's own store: not a table service's (a hall server may run one too). Where
    # serve's default lives (never relative to the working directory: the unit runs in /).
    settings = dataclasses.replace(settings, default_table=None, display="none",
                                   db=args.db or settings.hall_db)
    if not settings.mqtt_url:
        raise SystemExit("shotclock hall: needs the broker: --mqtt mqtt://[user:pass@]host:port"
                         "/<hall> (or SHOTCLOCK_MQTT_URL)")
    target = _broker_target(settings.mqtt_url, settings.mqtt_ca)
    from clock_service.edges.api.server import install_redactor, uvicorn_config

    install_redactor(settings.referee_token)
    # Commands to the hall go on to the tables: the same refusal as serve's.
    refused = _refuse_exposed(settings, "shotclock hall")
    if refused is not None:
        return refused
    # The mirror can be fetched again from the tables: no fsync per commit (lag).
    store = _locked_store(Store(settings.db, synchronous="NORMAL"))
    if isinstance(store, int):
        return store
    app = hall_app(settings, store)
    base = f"{'https' if settings.tls_cert else 'http'}://{settings.host}:{settings.port}"
    print(f"shotclock hall: mirroring hall {target.hall!r} from {target.redacted()} on {base}"
          f"  (store: {settings.db})\n  hall view  {base}/\n  API        {base}/docs\n"
          f"  answers to {_names(settings)}",
          file=sys.stderr, flush=True)
    # The same connection caps, request timeout and token-free logs as ``serve``.
    config = uvicorn_config(app, settings, log_level=args.log_level,
                            access_log=args.access_log)
    server = uvicorn.Server(config)
    install_redactor(settings.referee_token)
    _run_until_stopped(server)
    return 0


def _camera_adapter(runtime: Runtime, settings: Settings) -> CameraAdapter | None:
    """The overhead camera's adapter when SHOTCLOCK_CAMERA is set (issue 15), else None.

    The setting is checked (and a bad one refused) before the service starts; OpenCV is
    imported only then. The camera's thread starts with the app and stops with it; its
    routes (/api/camera, the calibration) are mounted only with it.
    """
    from clock_service.edges.camera.config import load_camera_config

    try:
        config = load_camera_config(settings)
    except ValueError as exc:
        raise SystemExit(f"shotclock: camera configuration refused: {exc}") from None
    if config is None:
        return None
    try:
        import cv2  # noqa: F401
    except ImportError:
        raise SystemExit("shotclock: SHOTCLOCK_CAMERA is set but OpenCV is not installed: "
                         "pip install 'shotclock[camera]'") from None
    from clock_service.edges.camera.adapter import CameraAdapter
    from clock_service.edges.camera.evidence import ClipStore, Evidence

    evidence = None
    if config.clips > 0 and config.clips_mb > 0 and config.clips_dir is not None:
        evidence = Evidence(ClipStore(config.clips_dir, config.clips,
                                      config.clips_mb * 1024 * 1024), config.table_id)
    adapter = CameraAdapter(runtime, config.table_id, config.spec, config.source,
                            mode=config.mode, calibration_path=config.calibration_path,
                            evidence=evidence)
    logging.getLogger("shotclock.camera").info(
        "table %s: camera %s in %s mode", config.table_id, adapter.source_text, config.mode)
    return adapter


def _camera(args: argparse.Namespace) -> int:
    """``shotclock camera calibrate`` (clock_service/edges/camera/cli.py)."""
    from clock_service.edges.camera.cli import calibrate
    from clock_service.service.settings import Settings

    return calibrate(args, Settings.from_env(db=args.db))


def _follow(args: argparse.Namespace) -> int:
    """Print a table's events as JSON lines, resuming after disconnects (never a gap)."""
    import asyncio
    import json

    from clock_service.edges.client import follow

    async def run() -> None:
        async for event in follow(args.server, args.table, since=args.since, token=args.token):
            print(json.dumps(event, ensure_ascii=False), flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="shotclock", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    serve = sub.add_parser("serve", help="run the shot clock service")
    serve.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default 8000)")
    serve.add_argument("--db", default=None,
                       help="SQLite file (default: $STATE_DIRECTORY/shotclock.db under systemd, "
                       "else $XDG_STATE_HOME/shotclock/ or ~/.local/state/shotclock/)")
    serve.add_argument("--display", choices=["terminal", "none"], default=None,
                       help="simulated display in the terminal when no hardware is set")
    serve.add_argument("--access-log", action="store_true", help="log every HTTP request")
    serve.add_argument("--tls-cert", default=None,
                       help="HTTPS: certificate file, PEM (SHOTCLOCK_TLS_CERT)")
    serve.add_argument("--tls-key", default=None,
                       help="HTTPS: its private key, PEM (SHOTCLOCK_TLS_KEY)")
    serve.add_argument("--open", action="store_true",
                       help="allow a non-loopback --host without SHOTCLOCK_REFEREE_TOKEN "
                       "(anyone on the network controls the clocks; warned on every start)")
    serve.add_argument("--log-level", default="info",
                       choices=["critical", "error", "warning", "info", "debug"])
    hall = sub.add_parser("hall", help="mirror every table of a hall from the MQTT broker "
                          "and serve them (read-only; commands are forwarded to each table)")
    hall.add_argument("--mqtt", default=None, help="mqtt://[user:pass@]host:port/<hall> "
                      "(default: SHOTCLOCK_MQTT_URL)")
    hall.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    hall.add_argument("--port", type=int, default=None, help="port (default 8000)")
    hall.add_argument("--db", default=None,
                      help="the hall's SQLite file (default SHOTCLOCK_HALL_DB, else hall.db "
                      "where serve keeps shotclock.db: $STATE_DIRECTORY under systemd, else "
                      "$XDG_STATE_HOME/shotclock/ or ~/.local/state/shotclock/)")
    hall.add_argument("--access-log", action="store_true", help="log every HTTP request")
    hall.add_argument("--tls-cert", default=None,
                       help="HTTPS: certificate file, PEM (SHOTCLOCK_TLS_CERT)")
    hall.add_argument("--tls-key", default=None,
                       help="HTTPS: its private key, PEM (SHOTCLOCK_TLS_KEY)")
    hall.add_argument("--open", action="store_true",
                      help="allow a non-loopback --host without SHOTCLOCK_REFEREE_TOKEN")
    hall.add_argument("--log-level", default="info",
                      choices=["critical", "error", "warning", "info", "debug"])
    sub.add_parser("blank", help="turn the configured table display off and the buzzer "
                   "silent (the units' ExecStopPost)")
    tail = sub.add_parser("follow", help="print a table's events as JSON lines, resuming "
                          "with ?since= after disconnects")
    tail.add_argument("table", help="table id")
    tail.add_argument("--server", default="http://127.0.0.1:8000", help="service base URL")
    tail.add_argument("--since", type=int, default=0, help="start after this seq (default 0)")
    tail.add_argument("--token", default=None, help="referee token (not needed to read)")
    camera = sub.add_parser("camera", help="the overhead camera (SHOTCLOCK_CAMERA)")
    camera_sub = camera.add_subparsers(dest="camera_cmd", required=True)
    calibrate = camera_sub.add_parser(
        "calibrate", help="find (or take --corners) the playing area's corners in one frame "
        "and save them (the /calibrate page does the same by clicking)")
    calibrate.add_argument("--source", default=None,
                           help="device, URL or file (default: SHOTCLOCK_CAMERA)")
    calibrate.add_argument("--corners", default=None,
                           help="x1,y1,...,x4,y4: the corners in frame pixels, going round")
    calibrate.add_argument("--out", default=None, help="calibration file (default: "
                           "SHOTCLOCK_CAMERA_CALIBRATION or beside the store)")
    calibrate.add_argument("--db", default=None, help="the store's path (for the default file)")
    calibrate.add_argument("--no-learn", action="store_true",
                           help="save the corners only; do not learn the felt's and the "
                           "balls' colours and size from the frame")
    calibrate.add_argument("--snapshot", default=None,
                           help="write the frame with the corners drawn to this image file")
    from clock_service.edges.broadcast.cli import add_parser as add_feed_parser
    from clock_service.edges.broadcast.cli import run as run_feed
    from clock_service.edges.cli.config import add_parser as add_config_parser
    from clock_service.edges.reports.cli import add_parser as add_report_parser
    from clock_service.edges.tournament.cli import add_parser as add_draw_parser

    add_report_parser(sub)
    add_feed_parser(sub)
    from clock_service.edges.cli import doctor

    doctor.add_parser(sub)
    add_draw_parser(sub)
    add_config_parser(sub)
    from clock_service.service.storage import cli as store_cli

    store_cli.add_parser(sub)
    from clock_service.service.tls import add_parser as add_tls_parser

    add_tls_parser(sub)
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper() if args.cmd in ("serve", "hall")
                        else "INFO",
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.cmd == "serve":
        return _serve(args)
    if args.cmd == "hall":
        return _hall(args)
    if args.cmd == "follow":
        return _follow(args)
    if args.cmd == "camera":
        return _camera(args)
    if args.cmd == "blank":
        return _blank(args)
    if args.cmd == "feed":
        return run_feed(args)
    if args.cmd == "doctor":
        return doctor.run(args)
    if args.cmd == "draw":
        from clock_service.edges.tournament.cli import run as run_draw
        from clock_service.service.settings import Settings

        return run_draw(args, Settings.from_env().referee_token)
    if args.cmd == "store":
        return store_cli.run(args)
    if args.cmd == "report":
        from clock_service.edges.reports.cli import run as report
        from web_ui import STATIC_DIR  # the stylesheet the served protocol page links

        return report(args, STATIC_DIR / "report.css")
    if args.cmd == "config":
        from clock_service.edges.cli.config import run as show_config

        return show_config(args)
    if args.cmd == "tls":
        from clock_service.service.tls import run as run_tls

        return run_tls(args)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
