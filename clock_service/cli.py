"""``shotclock serve``: the service with its embedded store and the table-side display."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import logging
import os
import sys
from typing import Any

__all__ = ["main"]


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from clock_service.api import create_app
    from clock_service.settings import Settings

    settings = Settings.from_env(host=args.host, port=args.port, db=args.db,
                                 display=args.display)
    app = create_app(settings)
    _attach_hardware(app, settings)
    _attach_mqtt(app, settings)
    base = f"http://{settings.host}:{settings.port}"
    table = settings.default_table or "1"
    print(f"shotclock: serving on {base}  (store: {settings.db}; referee token "
          f"{'on' if settings.referee_token else 'off'})\n"
          f"  hall view        {base}/\n"
          f"  referee console  {base}/referee?table={table}\n"
          f"  stream overlay   {base}/overlay?table={table}\n"
          f"  table display    {base}/display?table={table}\n"
          f"  API              {base}/docs", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, host=settings.host, port=settings.port,
                            log_level=args.log_level, ws_max_size=settings.max_message_bytes,
                            lifespan="on", access_log=args.access_log,
                            ws_ping_interval=settings.ws_ping_s, ws_ping_timeout=settings.ws_ping_s)
    uvicorn.Server(config).run()
    return 0


def _attach_hardware(app: Any, settings: Any) -> None:
    """Start the table-side devices with the app: hardware if configured, else the terminal.

    The configuration is read (and a bad one refused) before the service starts. A device
    that fails to open is logged and left out: the clock runs without it, and the serial
    driver keeps reconnecting by itself. Devices are closed when the service stops.
    """
    from collections.abc import AsyncIterator

    from fastapi import FastAPI

    from firmware_bridge.bridge import TableBridge
    from firmware_bridge.config import build_devices, load_config
    from firmware_bridge.errors import HardwareConfigError
    from firmware_bridge.terminal import TerminalDisplay

    assert isinstance(app, FastAPI)
    try:
        config = load_config()
    except HardwareConfigError as exc:
        raise SystemExit(f"shotclock: hardware configuration refused: {exc}") from None
    log = logging.getLogger("shotclock.hardware")
    inner = app.router.lifespan_context

    def device_failed(name: str, exc: Exception) -> None:
        log.error("table %s: %s hardware failed to open (%s: %s); the clock runs without it",
                  config.table_id, name, type(exc).__name__, exc)

    @contextlib.asynccontextmanager
    async def lifespan(app_: FastAPI) -> AsyncIterator[Any]:
        async with inner(app_) as value:
            runtime = app_.state.runtime
            # Everything loaded so far (libraries, restored tables) lives as long as the
            # process: keep it out of the garbage collector's passes, and make the passes
            # rarer. The service makes almost no cyclic garbage, and a full pass over a
            # hall of tables and clients stalled the loop for 60-160 ms (bench/README.md).
            gc.freeze()
            gc.set_threshold(20_000, 20, 100)
            bridge = None
            if config.kind != "none":
                display, buzzer, buttons = build_devices(
                    config, now_ms=runtime.time.now_ms, on_error=device_failed)
                bridge = TableBridge(runtime, config.table_id, display=display,
                                     buzzer=buzzer, buttons=buttons)
                log.info("table %s: %s hardware attached", config.table_id, config.kind)
            elif settings.display == "terminal":
                table_id = settings.default_table or "1"
                bridge = TableBridge(runtime, table_id, display=TerminalDisplay(table_id))
            if bridge is not None:
                bridge.attach()
            try:
                yield value
            finally:
                if bridge is not None:
                    bridge.close()

    app.router.lifespan_context = lifespan


def _broker_target(url: str) -> Any:
    """The broker and hall of ``SHOTCLOCK_MQTT_URL``; refuses a bad URL or a missing client
    library before the service starts."""
    from clock_service.errors import InvalidInput
    from clock_service.mqtt.topics import parse_url

    try:
        target = parse_url(url)
    except InvalidInput as exc:
        raise SystemExit(f"shotclock: {exc.message}") from None
    try:
        import paho.mqtt.client  # noqa: F401
    except ImportError:
        raise SystemExit("shotclock: SHOTCLOCK_MQTT_URL is set but paho-mqtt is not "
                         "installed: pip install 'shotclock[mqtt]'") from None
    return target


def _attach_mqtt(app: Any, settings: Any) -> None:
    """With SHOTCLOCK_MQTT_URL, publish every table on the broker (clock_service/mqtt)."""
    if not settings.mqtt_url:
        return
    from collections.abc import AsyncIterator

    from fastapi import FastAPI

    from clock_service.mqtt.publisher import MqttPublisher

    target = _broker_target(settings.mqtt_url)
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(app_: FastAPI) -> AsyncIterator[Any]:
        async with inner(app_) as value:
            publisher = MqttPublisher(app_.state.runtime, target, settings)
            await publisher.start()
            app_.state.mqtt = publisher
            try:
                yield value
            finally:
                await publisher.close()  # before the store closes: the last acked seqs

    app.router.lifespan_context = lifespan


def _hall(args: argparse.Namespace) -> int:
    """``shotclock hall``: every table of a hall, mirrored from the broker, behind the same
    HTTP/WebSocket API and pages (clock_service/mqtt/hall.py)."""
    import uvicorn

    from clock_service.api import create_app
    from clock_service.hub import Hub
    from clock_service.settings import Settings
    from clock_service.store import Store

    settings = Settings.from_env(host=args.host, port=args.port, mqtt_url=args.mqtt)
    # The hall's own store: not a table service's (a hall server may run one too).
    settings = dataclasses.replace(settings, default_table=None, display="none",
                                   db=args.db or os.environ.get("SHOTCLOCK_HALL_DB",
                                                                "var/hall.db"))
    if not settings.mqtt_url:
        raise SystemExit("shotclock hall: needs the broker: --mqtt mqtt://[user:pass@]host:port"
                         "/<hall> (or SHOTCLOCK_MQTT_URL)")
    target = _broker_target(settings.mqtt_url)

    def mirror(settings_: Any, time: Any) -> Any:
        from clock_service.mqtt.hall import HallRuntime

        return HallRuntime(Store(settings_.db), time, Hub(settings_.ws_queue), target,
                           settings_)

    app = create_app(settings, runtime_factory=mirror)
    base = f"http://{settings.host}:{settings.port}"
    print(f"shotclock hall: mirroring hall {target.hall!r} from {target.redacted()} on {base}"
          f"  (store: {settings.db})\n  hall view  {base}/\n  API        {base}/docs",
          file=sys.stderr, flush=True)
    config = uvicorn.Config(app, host=settings.host, port=settings.port,
                            log_level=args.log_level, ws_max_size=settings.max_message_bytes,
                            lifespan="on", access_log=args.access_log,
                            ws_ping_interval=settings.ws_ping_s, ws_ping_timeout=settings.ws_ping_s)
    uvicorn.Server(config).run()
    return 0


def _follow(args: argparse.Namespace) -> int:
    """Print a table's events as JSON lines, resuming after disconnects (never a gap)."""
    import asyncio
    import json

    from clock_service.client import follow

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
    serve.add_argument("--db", default=None, help="SQLite file (default var/shotclock.db)")
    serve.add_argument("--display", choices=["terminal", "none"], default=None,
                       help="simulated display in the terminal when no hardware is set")
    serve.add_argument("--access-log", action="store_true", help="log every HTTP request")
    serve.add_argument("--log-level", default="info",
                       choices=["critical", "error", "warning", "info", "debug"])
    hall = sub.add_parser("hall", help="mirror every table of a hall from the MQTT broker "
                          "and serve them (read-only; commands are forwarded to each table)")
    hall.add_argument("--mqtt", default=None, help="mqtt://[user:pass@]host:port/<hall> "
                      "(default: SHOTCLOCK_MQTT_URL)")
    hall.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    hall.add_argument("--port", type=int, default=None, help="port (default 8000)")
    hall.add_argument("--db", default=None,
                      help="the hall's SQLite file (default SHOTCLOCK_HALL_DB or var/hall.db)")
    hall.add_argument("--access-log", action="store_true", help="log every HTTP request")
    hall.add_argument("--log-level", default="info",
                      choices=["critical", "error", "warning", "info", "debug"])
    tail = sub.add_parser("follow", help="print a table's events as JSON lines, resuming "
                          "with ?since= after disconnects")
    tail.add_argument("table", help="table id")
    tail.add_argument("--server", default="http://127.0.0.1:8000", help="service base URL")
    tail.add_argument("--since", type=int, default=0, help="start after this seq (default 0)")
    tail.add_argument("--token", default=None, help="referee token (not needed to read)")
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
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
