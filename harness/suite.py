"""`make test`: the whole suite in two pytest runs at once, on a 2-core machine in 8 minutes.

Most of the suite's wall time is spent waiting, not computing: a `serial` test (listed in
harness/groups.py) measures against the wall clock, so it waits out real timeouts, expiries
and restarts, one test at a time. The other tests fill those waits:

- the serial run: ``pytest -m "serial and not alone"``, one process, at normal priority,
  printed live;
- the rest: ``pytest -n 3 --dist loadfile -m "not serial"`` (``SHOTCLOCK_TEST_WORKERS``) at a
  lower CPU priority (nice 10, ``SHOTCLOCK_TEST_NICE``), so that when both want the CPU the
  serial tests (and the servers, brokers and browsers they start, which inherit their
  priority) get about nine tenths of it and their timing holds. A process of the rest that
  starts a session of its own (Chromium does) is lowered too (``_lower_sessions``): with
  the kernel's autogroups, niceness counts only within a session. Three workers, not two:
  on a 2-core machine whose cores the suite keeps busy, 589 s against 613 s;
- then, once both have ended, the tests marked ``alone`` (a camera in real time, whose thread
  runs below the loop's priority), with the machine to themselves.

Which tests are serial or alone: harness/groups.py. Each line is printed as it comes,
prefixed with its run (``serial |``, ``rest   |``, ``alone  |``); the run fails if any run
fails, and each run's failures and random-order seed are printed again at the end.
Arguments go to every run (``PYTEST_ADDOPTS`` too).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from harness.groups import ALONE, SERIAL

__all__ = ["main"]


def _runs(argv: list[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The runs at once, and the run after them. Unless the arguments name paths, each run
    collects only its own files (a collection of the whole suite costs seconds of CPU)."""
    paths = any(not a.startswith("-") and Path(a.split("::")[0]).exists() for a in argv)
    serial = [] if paths else list(SERIAL)
    # (one test of a file: its marker keeps it out of the rest, -m "not serial")
    ignore = [] if paths else [f"--ignore={p}" for p in SERIAL if "::" not in p]
    alone = [] if paths else list(ALONE)
    return ({"serial": ["-m", "serial and not alone", *serial],
             "rest": ["-n", os.environ.get("SHOTCLOCK_TEST_WORKERS", "3"), "--dist", "loadfile",
                      "-m", "not serial", *ignore]},
            {"alone": ["-m", "alone", *alone]})


def _pump(name: str, stream: IO[str], lock: threading.Lock, tail: list[str]) -> None:
    for line in stream:
        with lock:
            sys.stdout.write(f"{name:<6} | {line}")
            sys.stdout.flush()
        tail.append(line)
        if len(tail) > 200:
            del tail[:100]


def _run(runs: dict[str, list[str]], argv: list[str], nice: int, lock: threading.Lock,
         started: float) -> dict[str, tuple[int, float, list[str]]]:
    """Run these pytest runs at once; each one's exit code, seconds since ``started`` and
    the last lines it printed."""
    procs: dict[str, subprocess.Popen[str]] = {}
    pumps: list[threading.Thread] = []
    tails: dict[str, list[str]] = {}
    try:
        for name, args in runs.items():
            command = [sys.executable, "-m", "pytest", "-q", *args, *argv]
            if name == "rest" and nice:
                command = ["nice", "-n", str(nice), *command]
            procs[name] = proc = subprocess.Popen(command, stdout=subprocess.PIPE,
                                                  stderr=subprocess.STDOUT, text=True,
                                                  bufsize=1)
            tails[name] = []
            assert proc.stdout is not None
            pump = threading.Thread(target=_pump, args=(name, proc.stdout, lock, tails[name]),
                                    daemon=True)
            pump.start()
            pumps.append(pump)
        ended: dict[str, tuple[int, float, list[str]]] = {}
        lowered: set[str] = set()
        ticks = 0
        while len(ended) < len(procs):
            for name, proc in procs.items():
                if name not in ended and proc.poll() is not None:
                    ended[name] = (proc.returncode, time.monotonic() - started, tails[name])
            if "rest" in procs and nice and "rest" not in ended and ticks % 5 == 0:
                _lower_sessions(procs["rest"].pid, nice, lowered)  # once a second
            ticks += 1
            time.sleep(0.2)
    finally:  # Ctrl-C, or anything else: no pytest left running
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in procs.values():
            proc.wait()
    for pump in pumps:
        pump.join(timeout=5)
    return ended


def _lower_sessions(root: int, nice: int, lowered: set[str]) -> None:
    """Give the lower priority to the processes of the rest that started a session of
    their own. With the kernel's autogroups on (most distributions' default), each session
    is its own group, and the CPU is shared between groups before niceness counts within
    one: Chromium (Playwright starts it in a new session) got as much of the CPU as the
    whole serial run, however nice its pytest was. Measured on a 2-core machine: the serial
    run's MQTT hall tests took 106 s beside the rest, 43 s alone. A session's group gets
    the rest's niceness (/proc/PID/autogroup; lowering one's own is allowed to anyone)."""
    try:
        import psutil
    except ImportError:
        return
    try:
        if Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() != "1":
            return
        children = psutil.Process(root).children(recursive=True)
    except (OSError, psutil.Error):  # not Linux, no autogroups, the rest has ended
        return
    ours = os.getsid(0)
    for child in children:
        try:
            if os.getsid(child.pid) == ours:
                continue
            path = Path(f"/proc/{child.pid}/autogroup")
            name = path.read_text().split()[0]  # "/autogroup-672 nice 0"
            if name not in lowered:
                path.write_text(f"{nice}\n")
                lowered.add(name)
        except OSError:  # gone meanwhile
            continue


def main(argv: list[str]) -> int:
    nice = int(os.environ.get("SHOTCLOCK_TEST_NICE", "10"))
    lock = threading.Lock()
    started = time.monotonic()
    try:
        runs, after = _runs(argv)
        ended = _run(runs, argv, nice, lock, started)
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
