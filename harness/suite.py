"""`make test`: the whole suite in two pytest runs at once, on a 2-core machine in 8 minutes.

Most of the suite's wall time is spent waiting, not computing: a `serial` test (listed in
harness/groups.py) measures against the wall clock, so it waits out real timeouts, expiries
and restarts, one test at a time. The other tests fill those waits:

- the serial run: ``pytest -m "serial and not alone"``, one process, at normal priority,
  printed live;
- the rest: ``pytest -n 2 --dist loadfile -m "not serial"`` at a lower CPU priority (nice 10,
  ``SHOTCLOCK_TEST_NICE``), so that when both want the CPU the serial tests (and the servers,
  brokers and browsers they start, which inherit their priority) get about nine tenths of it
  and their timing holds. (The rest's Chromium is the exception: Playwright starts it in a
  session of its own, and with the kernel's autogroups on, niceness counts only within a
  session. Lowering the rest's browser
  sessions too, tried in 3831e50, took the serial run from 545 s to 438 s on a slow 2-core
  machine, but starved the rest's pages until they showed a stale link and two overlay
  tests failed in three clean-clone runs.)
- the serial run in a session of its own, whose autogroup is niced to -5
  (``SHOTCLOCK_TEST_SERIAL_AUTOGROUP``; root only, as in CI; 0 leaves it). Where the kernel
  schedules by autogroup (``/proc/sys/kernel/sched_autogroup_enabled``, on here and on CI),
  niceness weighs only within a session, and each session weighs the same: the rest's
  Chromiums, each in a session of its own, competed with the serial run's services as
  equals, and an expiry measured there was late by what they took. The serial run's
  services, brokers and zygote are its children, in its session; its own Chromium is in
  a session of its own, at 0, as before. (-5 is three times a session at 0: the serial run
  uses about half a core on average, in bursts.)
- then, once both have ended, the tests marked ``alone`` (a camera in real time, whose thread
  runs below the loop's priority), with the machine to themselves. (They cost about 20 s
  at the end. Run beside the rest instead, in the serial run's session, the camera's test
  failed 5 of 16 times with its autogroup at -5 and 2 of 16 at -15: frames skipped, a rest
  or a strike seen more than a frame late, once fewer than 80% of the frames looked at.)

Which tests are serial or alone: harness/groups.py. Each line is printed as it comes,
prefixed with its run (``serial |``, ``rest   |``, ``alone  |``); the run fails if any run
fails, and each run's failures and random-order seed are printed again at the end.
Arguments go to every run (``PYTEST_ADDOPTS`` too).

Before the runs, the project's modules are compiled once (``_compile``): the suite starts
about two hundred ``shotclock`` processes, and where ``PYTHONDONTWRITEBYTECODE`` is set (it
is on the machines this project is developed on) Python writes no ``.pyc`` of its own, so
each of them compiled about 90 modules again from source: a server start took 1.8 s of CPU,
1.2-1.45 s with them compiled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from harness.groups import ALONE, SERIAL

__all__ = ["favour_session", "main"]

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("clock_service", "firmware_bridge", "web_ui", "harness", "bench")


def _runs(argv: list[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The runs at once, and the run after them. Unless the arguments name paths, each run
    collects only its own files (a collection of the whole suite costs seconds of CPU)."""
    paths = any(not a.startswith("-") and Path(a.split("::")[0]).exists() for a in argv)
    serial = [] if paths else list(SERIAL)
    # (one test of a file: its marker keeps it out of the rest, -m "not serial")
    ignore = [] if paths else [f"--ignore={p}" for p in SERIAL if "::" not in p]
    alone = [] if paths else list(ALONE)
    return ({"serial": ["-m", "serial and not alone", *serial],
             "rest": ["-n", "2", "--dist", "loadfile", "-m", "not serial", *ignore]},
            {"alone": ["-m", "alone", *alone]})


def _pump(name: str, stream: IO[str], lock: threading.Lock, tail: list[str]) -> None:
    for line in stream:
        with lock:
            sys.stdout.write(f"{name:<6} | {line}")
            sys.stdout.flush()
        tail.append(line)
        if len(tail) > 200:
            del tail[:100]


def favour_session(pid: int, nice: int) -> None:
    """The autogroup of ``pid``'s session niced to ``nice`` (a negative one needs root; not
    root, or no autogroups in this kernel: left as it is)."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(str(nice))


def _run(runs: dict[str, list[str]], argv: list[str], nice: int, lock: threading.Lock,
         started: float, favoured: int = 0) -> dict[str, tuple[int, float, list[str]]]:
    """Run these pytest runs at once; each one's exit code, seconds since ``started`` and
    the last lines it printed. ``favoured``: the serial run's autogroup nice (0: none)."""
    procs: dict[str, subprocess.Popen[str]] = {}
    pumps: list[threading.Thread] = []
    tails: dict[str, list[str]] = {}
    own_sessions: set[str] = set()  # the runs in a session of their own
    try:
        for name, args in runs.items():
            command = [sys.executable, "-m", "pytest", "-q", *args, *argv]
            if name == "rest" and nice:
                command = ["nice", "-n", str(nice), *command]
            own_session = name == "serial" and favoured != 0
            procs[name] = proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                                                  stderr=subprocess.STDOUT, text=True,
                                                  bufsize=1, start_new_session=own_session)
            if own_session:
                own_sessions.add(name)
                favour_session(proc.pid, favoured)
            tails[name] = []
            assert proc.stdout is not None
            pump = threading.Thread(target=_pump, args=(name, proc.stdout, lock, tails[name]),
                                    daemon=True)
            pump.start()
            pumps.append(pump)
        ended: dict[str, tuple[int, float, list[str]]] = {}
        while len(ended) < len(procs):
            for name, proc in procs.items():
                if name not in ended and proc.poll() is not None:
                    ended[name] = (proc.returncode, time.monotonic() - started, tails[name])
            time.sleep(0.2)
    finally:  # Ctrl-C, or anything else: no pytest left running
        # A run in a session of its own does not get a terminal's Ctrl-C: it gets the
        # SIGINT here, so that pytest stops its servers and brokers itself, as the others do.
        for name, proc in procs.items():
            if proc.poll() is None:
                if name in own_sessions:
                    proc.send_signal(signal.SIGINT)
                else:
                    proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    for pump in pumps:
        pump.join(timeout=5)
    return ended


def _compile() -> None:
    """Each package's ``.pyc`` written (or found up to date), whatever
    ``PYTHONDONTWRITEBYTECODE`` says: py_compile writes the file it is asked to. Imports
    read a ``.pyc`` either way."""
    import compileall

    for package in PACKAGES:
        compileall.compile_dir(ROOT / package, quiet=1, workers=0)


def main(argv: list[str]) -> int:
    nice = int(os.environ.get("SHOTCLOCK_TEST_NICE", "10"))
    favoured = int(os.environ.get("SHOTCLOCK_TEST_SERIAL_AUTOGROUP", "-5"))
    lock = threading.Lock()
    started = time.monotonic()
    _compile()
    try:
        runs, after = _runs(argv)
        ended = _run(runs, argv, nice, lock, started, favoured)
        ended |= _run(after, argv, nice, lock, started)
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
