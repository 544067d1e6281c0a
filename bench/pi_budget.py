"""The Pi budget (issue 21 point 7): the full service with the camera on a 720p30 file,
under a CPU quota, against a bare asyncio loop under the same quota in the same run.

For each quota (a quarter of one core, then an eighth; cgroup v1, as root):
- ``shotclock serve`` with the camera in auto mode on a 1280x720 30 fps MJPEG file (what a
  USB webcam sends) of a synthetic table, calibrated, is started, then moved into a cgroup
  with that quota. A second table is started again and again (short shots) so that its
  clock runs out ``--expiries`` times: each ``clock.expired`` carries ``late_ms``.
- At the same time a bare asyncio loop (timers at the same pace, nothing else) runs in a
  second cgroup with the same quota: its lateness is the reference.
- Reported: expiry lateness p50/p99/max for both and the ratio of the p50s; the camera's
  decision latency (decided - frame) for rests and strikes, frames looked at a second,
  skipped (behind real time) and not looked at (shed), its budget steps and what it said
  (camera_not_sure / camera_off, and why), and its decisions against the video's truth:
  false ones (any time), and rests and strikes missed while it was deciding (the ones
  that fell while it said camera_not_sure or was off are counted apart: said, not
  missed); the load average before and after.

Needs root and cgroup v1's cpu controller at /sys/fs/cgroup/cpu (this machine); prints
why not otherwise. One run takes about ``2 x (seconds + 10)`` s. The video is rendered
once (``--cache``).

    python bench/pi_budget.py [--seconds 40] [--quotas 25000,12500]   # 6250: a sixteenth
    python bench/pi_budget.py --quotas 25000/100000,1000/4000   # a quarter, both ways
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.server import ServerProcess, http  # noqa: E402

CGROUP = Path("/sys/fs/cgroup/cpu")
PERIOD_US = 100_000
PROFILE = {"shot_ms": 2000, "floor_ms": 1000, "step_ms": 500, "extension_ms": 2000,
           "warnings_ms": [1000]}
RESULTS = ROOT / "bench" / "results"

BARE_LOOP = r"""
import asyncio, json, sys
count, every = int(sys.argv[1]), float(sys.argv[2])
async def main():
    loop = asyncio.get_running_loop()
    late = []
    start = loop.time() + 1.0
    for k in range(count):
        target = start + k * every
        loop.call_at(target, lambda t=target: late.append((loop.time() - t) * 1000.0))
    await asyncio.sleep(start + count * every - loop.time() + 0.1)
    print(json.dumps(late), flush=True)
asyncio.run(main())
"""


def summary(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0, "p50": None, "p99": None, "max": None}
    v = sorted(values)
    return {"n": len(v), "p50": round(statistics.median(v), 2),
            "p99": round(v[min(len(v) - 1, int(0.99 * len(v)))], 2), "max": round(v[-1], 2)}


def video(cache: Path, seconds: float) -> tuple[Path, dict[str, Any]]:
    """A 720p30 MJPEG file of a synthetic table (rendered once) and its truth."""
    import cv2

    from harness.synthetic import SyntheticTable

    path = cache / f"table-720p30-{int(seconds)}s.avi"
    truth_path = Path(str(path) + ".json")
    if path.exists() and truth_path.exists():
        return path, json.loads(truth_path.read_text())
    cache.mkdir(parents=True, exist_ok=True)
    table = SyntheticTable(seed=11, size=(1280, 720), fps=30.0, first_strike_ms=(1500, 2500))
    tmp = path.with_suffix(".tmp.avi")
    writer = cv2.VideoWriter(str(tmp), cv2.VideoWriter_fourcc(*"MJPG"), 30.0, (1280, 720))
    for _, _, image in table.frames(seconds):
        writer.write(image)
    writer.release()
    os.replace(tmp, path)
    truth = table.truth.to_dict()
    truth_path.write_text(json.dumps(truth))
    return path, truth


def make_cgroup(name: str, quota_us: int, period_us: int = PERIOD_US) -> Path:
    d = CGROUP / name
    d.mkdir(exist_ok=True)
    (d / "cpu.cfs_quota_us").write_text("-1")  # a period under the quota is refused
    (d / "cpu.cfs_period_us").write_text(str(period_us))
    (d / "cpu.cfs_quota_us").write_text(str(quota_us))
    return d


def join(cgroup: Path, pid: int) -> None:
    (cgroup / "cgroup.procs").write_text(str(pid))


def throttled(cgroup: Path) -> int:
    for line in (cgroup / "cpu.stat").read_text().splitlines():
        key, _, value = line.partition(" ")
        if key == "nr_throttled":
            return int(value)
    return 0


def match(truth_ms: list[float], decided: list[float], within: float) -> tuple[int, int]:
    """(missed, false): truth instants without a decision within ``within`` ms, and
    decisions without a truth instant."""
    used: set[int] = set()
    missed = 0
    for t in truth_ms:
        best = min((i for i in range(len(decided)) if i not in used
                    and abs(decided[i] - t) <= within), default=None,
                   key=lambda i: abs(decided[i] - t))
        if best is None:
            missed += 1
        else:
            used.add(best)
    return missed, len(decided) - len(used)


def run_quota(quota_us: int, seconds: float, expiries: int, path: Path, truth: dict[str, Any],
              work: Path, period_us: int = PERIOD_US) -> dict[str, Any]:
    tag = f"pi-budget-{quota_us}-{period_us}"
    load_before = os.getloadavg()[0]
    service_cg = make_cgroup(tag + "-service", quota_us, period_us)
    bare_cg = make_cgroup(tag + "-bare", quota_us, period_us)
    calibration = work / "calibration.json"
    calibration.write_text(json.dumps({"corners": truth["corners"],
                                       "frame_size": truth["size"]}))
    db = work / f"shotclock-{quota_us}.db"
    server = ServerProcess(db, env={
        "SHOTCLOCK_CAMERA": str(path), "SHOTCLOCK_CAMERA_MODE": "auto",
        "SHOTCLOCK_CAMERA_CALIBRATION": str(calibration)}).start()
    bare: subprocess.Popen[str] | None = None
    try:
        assert server.proc is not None
        join(service_cg, server.proc.pid)  # every thread of it (cgroup v1 cgroup.procs)
        # the expiries begin once the camera paces itself under the quota it was moved
        # into (it reads the quota once a 1 s window; under systemd's CPUQuota the quota
        # is there from the start): the run measures the service at work, not its move
        joined = time.monotonic()
        while time.monotonic() - joined < 10:
            _, seen = http("GET", server.url + "/api/camera")
            paced = ((seen.get("budget") or {}).get("paced") or {}).get("cap_ms")
            if paced is not None and (seen.get("budget") or {}).get("cores") == round(
                    quota_us / period_us, 3):
                break
            time.sleep(0.2)
        settled_s = round(time.monotonic() - joined, 1)
        throttled_joining = throttled(service_cg)
        time.sleep(1.0)
        throttled_before = throttled(service_cg)
        status, _ = http("POST", server.url + "/api/tables",
                         {"id": "t2", "players": ["A", "B"], "profile": PROFILE})
        assert status == 201, status
        every = PROFILE["shot_ms"] / 1000 + 0.6
        bare = subprocess.Popen([sys.executable, "-c", BARE_LOOP, str(expiries), str(every)],
                                stdout=subprocess.PIPE, text=True)
        join(bare_cg, bare.pid)
        started = time.monotonic()
        origins: set[float] = set()  # a file opened again (after off) plays from its start
        held: list[int] = []  # quota periods the service was held back in, per expiry
        for _ in range(expiries):
            held.append(throttled(service_cg) - throttled_before)
            _, state = http("GET", server.url + "/api/tables/t2")
            if state.get("phase") == "frame_over":  # three time fouls lose the frame
                http("POST", server.url + "/api/tables/t2/commands", {"command": "new_frame"})
            http("POST", server.url + "/api/tables/t2/commands", {"command": "start"})
            _, seen = http("GET", server.url + "/api/camera")
            if seen.get("origin") is not None:
                origins.add(seen["origin"])
            time.sleep(every)
        time.sleep(max(0.0, seconds - (time.monotonic() - started)))
        _, camera = http("GET", server.url + "/api/camera")
        ended_ms = time.time() * 1000  # the service's time line is unix ms
        if camera.get("origin") is not None:
            origins.add(camera["origin"])
        _, events = http("GET", server.url + "/api/tables/t2/events?since=0")
        _, table1 = http("GET", server.url + "/api/tables/1/events?since=0")
        out, _ = bare.communicate(timeout=60)
        bare_late = json.loads(out or "[]")
        throttled_during = throttled(service_cg) - throttled_before
    finally:
        if bare is not None and bare.poll() is None:
            bare.kill()
        server.stop()
        if bare is not None:
            bare.wait(timeout=10)
        for cgroup in (service_cg, bare_cg):  # empty once its processes have ended
            try:
                cgroup.rmdir()
            except OSError as exc:
                print(f"pi_budget: {cgroup} left: {exc}", file=sys.stderr)
    late = [float(e["data"]["late_ms"]) for e in events if e["type"] == "clock.expired"]
    decisions = camera.get("decisions", [])
    latency = {kind: [d["decided_at"] - d["at"] for d in decisions if d["type"] == kind]
               for kind in ("rest", "strike")}
    origin = min(origins) if origins else None
    bud = camera.get("budget") or {}
    scored: dict[str, Any] = {}
    after_stop: list[float] = []
    strike_error: list[float] = []
    if origin is not None:
        # the service's time line: each playing of the file (opened again after off, it
        # plays from its start) with its truth; the run ended at `end` (the last read of
        # the camera's decisions, some seconds more than `seconds` of play)
        end = ended_ms
        starts = sorted(origins)
        spans = list(zip(starts, [*starts[1:], end], strict=True))

        def on_line(times: list[float], tail: float) -> list[float]:
            return [o + t for o, until in spans for t in times if o + t < until - tail]

        def playing(at: float) -> float:
            return max([o for o in starts if o <= at] or [origin])

        steps = [(s["at"], s["name"]) for s in bud.get("log", [])]

        def deciding(t: float) -> bool:
            name = "full"
            for at, step in steps:
                if at <= t:
                    name = step
            return name not in ("not_sure", "off")

        rests_truth = on_line(truth["rests"], 1500)
        strikes_truth = on_line(truth["strikes"], 500)
        rests = [d["at"] for d in decisions if d["type"] == "rest"]
        strikes = [d["at"] for d in decisions if d["type"] == "strike"]
        rests_on = [t for t in rests_truth if deciding(t) and deciding(t + 400)]
        strikes_on = [t for t in strikes_truth if deciding(t) and deciding(t + 100)]
        scored = {"rests": len(rests_truth), "strikes": len(strikes_truth),
                  "rests_while_deciding": len(rests_on),
                  "strikes_while_deciding": len(strikes_on),
                  "played": len(starts)}
        scored["rests_missed"], _ = match(rests_on, rests, 400)
        # false: a decision about no event of the video (the events too near the end to
        # be due a decision are still events)
        _, scored["rests_false"] = match(on_line(truth["rests"], 0), rests, 400)
        scored["strikes_missed"], _ = match(strikes_on, strikes, 100)
        _, scored["strikes_false"] = match(on_line(truth["strikes"], 0), strikes, 100)
        # the camera matrix's measure (bench/camera_matrix.py): a rest decided (the
        # deciding frame's capture time) this long after the last ball stopped
        for d in decisions:
            if d["type"] == "strike":  # timed at its frame: off the truth by this much
                o = playing(d["at"])
                hit = o + min(truth["strikes"], key=lambda t: abs(o + t - d["at"]))
                strike_error.append(d["at"] - hit)
            if d["type"] == "rest":
                o = playing(d["at"])
                stop = o + min(truth["rests"], key=lambda t: abs(o + t - d["at"]))
                after_stop.append(d["decided_at"] - stop)
    by_camera = [e for e in table1 if e.get("by") == "camera"]
    b = bare_late and summary(bare_late) or summary([])
    s = summary(late)
    return {
        "quota_cores": quota_us / period_us, "quota_us": quota_us, "period_us": period_us,
        "expiry_late_ms": s, "bare_loop_late_ms": b,
        "expiries_ms": [round(v, 1) for v in late], "bare_ms": [round(v, 1) for v in bare_late],
        "p50_ratio": round(s["p50"] / b["p50"], 2) if s["p50"] and b["p50"] else None,
        "rest_latency_ms": summary(latency["rest"]),
        "rest_after_stop_ms": summary(after_stop),
        "strike_latency_ms": summary(latency["strike"]),
        "camera": {k: camera.get(k) for k in ("frames", "skipped", "too_late", "lag_ms",
                                              "cost_ms_p50", "balls", "sure")},
        "looked_per_s": round(bud.get("looked", 0) / seconds, 1),
        "budget": bud,
        "camera_steps_sent": len(by_camera),
        "decisions_scored": scored or "not scored (no origin)",
        "rests_after_stop_ms": [round(v) for v in after_stop],
        "strike_error_ms": [round(v, 1) for v in strike_error],
        "service_throttled_periods": throttled_during,
        "paced_after_s": settled_s, "throttled_while_joining": throttled_joining,
        "throttled_by_expiry": held,
        "load": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--expiries", type=int, default=12)
    parser.add_argument("--quotas", default="25000,12500",
                        help="cfs_quota_us per 100 ms, or quota/period in us: "
                        "25000/100000,1000/4000 (a quarter of a core both ways)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir())
                        / "shotclock-pi-budget")
    args = parser.parse_args()
    if os.geteuid() != 0 or not CGROUP.is_dir():
        print(f"pi_budget: needs root and cgroup v1's cpu controller at {CGROUP}; skipped")
        return 0
    path, truth = video(args.cache, args.seconds + 5)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for given in args.quotas.split(","):
            quota, _, period = given.partition("/")
            rows.append(run_quota(int(quota), args.seconds, args.expiries, path, truth,
                                  Path(tmp), int(period or PERIOD_US)))
            print(json.dumps(rows[-1]), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "pi_budget.json").write_text(json.dumps(
        {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
         "load": os.getloadavg(), "rows": rows}, indent=1))
    print(f"\nPi budget ({args.seconds:.0f} s per quota; load average "
          f"{os.getloadavg()[0]:.1f}: a shared machine, noisy)")
    print(f"{'quota':>13} {'late p50':>9} {'bare p50':>9} {'late max':>9} {'bare max':>9} "
          f"{'rest p50/max':>13} {'looked/s':>9} {'level':>9} {'load':>10}  decisions "
          "(rest: decided after the last ball's stop)")
    for r in rows:
        s, b, d = r["expiry_late_ms"], r["bare_loop_late_ms"], r["rest_after_stop_ms"]
        bud = r["budget"] or {}
        given = f"{r['quota_us']}/{r['period_us']}"
        print(f"{given:>13} {s['p50']!s:>9} {b['p50']!s:>9} {s['max']!s:>9} "
              f"{b['max']!s:>9} {str(d['p50']) + '/' + str(d['max']):>13} "
              f"{r['looked_per_s']!s:>9} {bud.get('name')!s:>9} {str(r['load']):>10}  "
              f"{r['decisions_scored']}")
        for step in bud.get("log", []):
            print(f"{'':>9}budget: {step['name']} at {step['at']}: {step['why']}")
    return 0


if __name__ == "__main__":
    threading.excepthook = lambda a: None
    sys.exit(main())
