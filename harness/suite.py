"""`make test`: the whole suite in two pytest runs, one after the other.

1. Everything but the tests marked ``serial``: ``pytest -n 3 --dist worksteal -m "not
   serial"``. Most tests run the service in a thread of their own process
   (harness/thread_server.py) and judge nothing against the wall clock, so they may share
   the machine: three workers on two cores, because some of them wait (a broker, a page,
   a real timeout) while others compute; ``worksteal`` hands a worker that ran out of tests
   part of another's.
2. Then the tests marked ``serial``: ``pytest -m serial -n 2 --dist loadfile``, two
   modules at a time, each with about a core of its own (one at a time where the suite is
   pinned to one core: ``_serial_workers``). They judge time against the wall clock (an
   expiry's lateness against a bare loop's, a display blanked within 0.5 s, a camera
   looking at 80% of a 30 fps file in real time): run beside the first run's Chromiums,
   their measures would be the machine's, not the product's. One at a time they used 30 %
   of two cores in 112 s; two at a time they take 61-64 s.

Each line is printed as it comes, prefixed with its run (``rest   |``, ``serial |``); the
suite fails if either run fails, and each run's failures and random-order seed are printed
again at the end. Arguments go to both runs (``PYTEST_ADDOPTS`` too);
``SHOTCLOCK_TEST_WORKERS`` sets the first run's workers, ``SHOTCLOCK_SERIAL_WORKERS`` the
second's.

Before the runs, the project's modules are compiled once (``_compile``), and the runs may
write bytecode whatever ``PYTHONDONTWRITEBYTECODE`` says (it is set on the machines this
project is developed on): without, every pytest process rewrote the asserts of every test
module again (10 s of CPU a collection, 3.5 s with pytest's cached rewrites), and every
service process compiled the modules it imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

__all__ = ["main"]

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("clock_service", "firmware_bridge", "web_ui", "harness", "bench")


def _serial_workers() -> int:
    """Two serial tests at a time where the suite may use two cores or more (each with about
    a core of its own: a serial run used 30 % of two cores one test at a time), one where it
    is pinned to one (``taskset -c 0``). ``SHOTCLOCK_SERIAL_WORKERS`` overrides."""
    chosen = os.environ.get("SHOTCLOCK_SERIAL_WORKERS")
    if chosen:
        return int(chosen)
    return min(2, len(os.sched_getaffinity(0)))


def _runs(workers: int, serial_workers: int) -> list[tuple[str, list[str]]]:
    # --dist loadfile: a module's serial tests run one after the other in one worker (a
    # module's own service, broker or browser is not shared with another serial test).
    serial = (["-n", str(serial_workers), "--dist", "loadfile"] if serial_workers > 1
              else ["-p", "no:xdist"])
    return [("rest", ["-n", str(workers), "--dist", "worksteal", "-m", "not serial"]),
            ("serial", [*serial, "-m", "serial"])]


def _pump(name: str, stream: IO[str], tail: list[str]) -> None:
    for line in stream:
        sys.stdout.write(f"{name:<6} | {line}")
        sys.stdout.flush()
        tail.append(line)
        if len(tail) > 200:
            del tail[:100]


def _run(name: str, args: list[str], argv: list[str], env: dict[str, str]
         ) -> tuple[int, list[str]]:
    """One pytest run to its end: its exit code and the last lines it printed."""
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", *args, *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1, env=env)
    tail: list[str] = []
    assert proc.stdout is not None
    pump = threading.Thread(target=_pump, args=(name, proc.stdout, tail), daemon=True)
    pump.start()
    try:
        code = proc.wait()
    finally:  # Ctrl-C, or anything else: no pytest left running
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    pump.join(timeout=5)
    return code, tail


def _compile() -> None:
    """Each package's ``.pyc`` written (or found up to date), whatever
    ``PYTHONDONTWRITEBYTECODE`` says: py_compile writes the file it is asked to."""
    import compileall

    for package in PACKAGES:
        compileall.compile_dir(ROOT / package, quiet=1, workers=0)


def main(argv: list[str]) -> int:
    workers = int(os.environ.get("SHOTCLOCK_TEST_WORKERS", "3"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    started = time.monotonic()
    _compile()
    ended: dict[str, tuple[int, float, list[str]]] = {}
    try:
        for name, args in _runs(workers, _serial_workers()):
            code, tail = _run(name, args, argv, env)
            ended[name] = (code, time.monotonic() - started, tail)
    except KeyboardInterrupt:
        return 130
    print()
    for name, (code, seconds, tail) in ended.items():
        summary = [line.rstrip() for line in tail
                   if line.startswith(("FAILED", "ERROR", "random order"))
                   or " passed" in line or " failed" in line]
        print(f"{name}: exit {code} at {seconds:.0f} s")
        for line in list(dict.fromkeys(summary))[-12:]:
            print(f"  {line}")
    # pytest's exit 5 is "no tests collected": a filter that selects nothing in one run
    # (-k, a path) is not a failure of the suite, unless no run collected anything.
    bad = [name for name, (code, _, _) in ended.items() if code not in (0, 5)]
    nothing = all(code == 5 for code, _, _ in ended.values())
    total = time.monotonic() - started
    verdict = f"FAILED {', '.join(bad)}" if bad else "nothing collected" if nothing else "passed"
    print(f"suite: {verdict} in {total:.0f} s")
    return 1 if bad or nothing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
