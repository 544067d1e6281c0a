"""`make test`: the whole suite in two pytest runs, side by side on two cores or more (the
first at nice 15: ``REST_NICE``), one after the other when pinned to one core.

1. Everything but the tests marked ``serial``: ``pytest -n 3 --dist worksteal -m "not
   serial"``. Most tests run the service in a thread of their own process
   (harness/thread_server.py) and judge nothing against the wall clock, so they may share
   the machine: three workers on two cores, because some of them wait (a broker, a page,
   a real timeout) while others compute; ``worksteal`` hands a worker that ran out of tests
   part of another's.
2. Beside it (after it, on one core), the tests marked ``serial``: ``pytest -m serial -n 2
   --dist loadfile``, two modules at a time (one at a time on one core:
   ``_serial_workers``). They judge time against the wall clock (an expiry's lateness
   against a bare loop's, a display blanked within 0.5 s, a camera looking at 80% of a 30
   fps file in real time): beside the first run's Chromiums at the same priority, their
   measures would be the machine's, not the product's; at nice 0 against its nice 15 they
   take a core whenever they want one (1024 shares against 36). Alone, one at a time, they
   used 30 % of two cores for 112 s; two at a time 45 % for 61-81 s.

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


# The first run's niceness while the serial run goes on beside it: CFS gives a nice-0 task
# 1024/(1024+36) of a core it wants against a nice-15 one, so the serial tests' own service,
# bare loop and Chromium take a core when they need it, and the first run has what they
# leave (they used 30-45 % of two cores). Not 19: the camera's thread puts itself 10 steps
# below its service (camera/budget.lower_priority), which a test of it checks.
REST_NICE = 15


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


def _run(name: str, args: list[str], argv: list[str], env: dict[str, str],
         niceness: int = 0) -> tuple[int, list[str]]:
    """One pytest run to its end: its exit code and the last lines it printed."""
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", *args, *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1, env=env,
                            preexec_fn=(lambda: os.nice(niceness)) if niceness else None)
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
    """Both runs at once where the suite has two cores or more (``SHOTCLOCK_SUITE_OVERLAP``:
    1 or 0 overrides), the first at ``REST_NICE``; one after the other where it is pinned
    to one core."""
    workers = int(os.environ.get("SHOTCLOCK_TEST_WORKERS", "3"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    started = time.monotonic()
    _compile()
    ended: dict[str, tuple[int, float, list[str]]] = {}
    serial_workers = _serial_workers()
    runs = _runs(workers, serial_workers)
    overlap = os.environ.get("SHOTCLOCK_SUITE_OVERLAP", "1" if serial_workers > 1 else "0")
    def run(name: str, args: list[str], niceness: int = 0) -> None:
        code, tail = _run(name, args, argv, env, niceness)
        ended[name] = (code, time.monotonic() - started, tail)

    try:
        if overlap == "1":
            threads = [threading.Thread(target=run, args=(
                name, args, REST_NICE if name == "rest" else 0)) for name, args in runs]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            for name, args in runs:
                run(name, args)
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
