"""Build the offline bundle (issue 22 point 2): everything a table's Pi needs to install or
upgrade the shot clock from a USB stick, with no network. ``make bundle`` runs it on a
connected machine; at the venue ``install-pi.sh --offline <bundle>`` installs it.

The archive ``dist/shotclock-bundle-<version>-<commit>.tar.gz`` holds one directory:

- ``install-pi.sh``, ``deploy/`` (units, env files, udev rule), ``requirements.lock``;
- ``wheels/<target>/``: for each target (see ``TARGETS``), the locked versions of the
  service's runtime dependencies (extras hardware, mqtt; camera in its own list) as
  binary wheels for its platform and Python, downloaded with ``pip download
  --only-binary=:all: --platform ... --python-version ...``, this project's own wheel,
  pip's wheel (so a Pi without python3-venv can still make the venv), ``requirements.txt``,
  ``requirements-camera.txt``, ``python-version``; and ``missing.txt``, the packages of
  which PyPI has no wheel for that platform (32-bit OS);
- ``firmware/``: the Pico's ``protocol_core.mpy`` compiled by mpy-cross (-march=armv6m),
  its ``main.py`` (MicroPython runs ``main.py`` from source) and ``PROTOCOL.md``;
- ``MANIFEST.json``: version, commit, per target the wheels, what is missing, the Debian
  packages the install script uses there instead, and every file's sha256.

Packages that Debian provides on the Pi (``python3-evdev``: PyPI has no wheel; on 32-bit
OS ``python3-numpy`` and ``python3-opencv``) are left out of that target's wheels.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
RUNTIME_EXTRAS = ("hardware", "mqtt")
CAMERA_EXTRA = "camera"


@dataclass(frozen=True)
class Target:
    """A Pi OS the bundle serves: named as install-pi.sh names it (os-release ID and
    VERSION_ID, dpkg architecture)."""

    name: str
    python: str  # major.minor
    python_full: str  # for the lock's markers
    machine: str  # platform.machine() on that OS
    glibc: tuple[int, int]
    # locked packages Debian provides there instead (installed with apt by install-pi.sh)
    from_debian: tuple[str, ...]
    debian_packages: tuple[str, ...]
    debian_packages_camera: tuple[str, ...] = ()

    @property
    def platforms(self) -> list[str]:
        """Every manylinux tag that OS's glibc accepts (pip does not widen a given tag)."""
        major, minor = self.glibc
        tags = [f"manylinux_{major}_{m}_{self.machine}" for m in range(17, minor + 1)]
        return [*tags, f"manylinux2014_{self.machine}"]

    @property
    def abi(self) -> str:
        return "cp" + self.python.replace(".", "")

    def markers(self) -> dict[str, str]:
        return {"python_version": self.python, "python_full_version": self.python_full,
                "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
                "platform_machine": self.machine, "implementation_name": "cpython",
                "platform_python_implementation": "CPython", "extra": ""}


_TABLE_DEBS = ("python3-venv", "python3-evdev", "python3-lgpio")
TARGETS = (
    # 64-bit Raspberry Pi OS Bookworm (Pi 3, 4, 5, Zero 2 W)
    Target("debian12-arm64", "3.11", "3.11.2", "aarch64", (2, 36), ("evdev",), _TABLE_DEBS),
    # Debian 13 Trixie (and Raspberry Pi OS on it)
    Target("debian13-arm64", "3.13", "3.13.5", "aarch64", (2, 41), ("evdev",), _TABLE_DEBS),
    # 32-bit Raspberry Pi OS Bookworm (Pi 3, Zero 2 W): ARMv7; no numpy or OpenCV wheels
    Target("debian12-armhf", "3.11", "3.11.2", "armv7l", (2, 36),
           ("evdev", "numpy", "opencv-python-headless"), _TABLE_DEBS,
           ("python3-numpy", "python3-opencv")),
)


@dataclass
class Pin:
    name: str
    version: str
    marker: Marker | None
    via: list[str] = field(default_factory=list)

    def line(self) -> str:
        return f"{self.name}=={self.version}"


def read_lock(text: str) -> list[Pin]:
    """The lock's pins with the packages that pulled each in (uv's ``# via`` comments)."""
    pins: list[Pin] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("-"):
            continue
        if not line.startswith((" ", "#")):
            req = Requirement(line)
            (spec,) = req.specifier
            pins.append(Pin(canonicalize_name(req.name), spec.version, req.marker))
        elif pins and line.startswith("    #") and not line.startswith("#"):
            via = line.strip().lstrip("#").strip()
            via = via.removeprefix("via").strip()
            if via:
                pins[-1].via.append(via)
    return pins


def project_requirements(extras: tuple[str, ...], base: bool = True) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"]) if base else []
    for extra in extras:
        lines += project["optional-dependencies"][extra]
    return {canonicalize_name(Requirement(x).name) for x in lines}


def closure(pins: list[Pin], roots: set[str], target: Target) -> list[Pin]:
    """The pins ``roots`` need on ``target``: the roots and whatever the lock says they
    pulled in, each where its marker holds there."""
    env = target.markers()
    applies = [p for p in pins if p.marker is None or p.marker.evaluate(env)]
    wanted = set(roots)
    changed = True
    while changed:
        changed = False
        for pin in applies:
            if pin.name not in wanted and any(
                    canonicalize_name(v.split(" ")[0]) in wanted for v in pin.via
                    if not v.startswith("shotclock")):
                wanted.add(pin.name)
                changed = True
    return [p for p in applies if p.name in wanted]


def target_requirements(pins: list[Pin], target: Target) -> tuple[list[Pin], list[Pin]]:
    """(runtime pins, camera pins) for ``target``, less what Debian provides there."""
    runtime = closure(pins, project_requirements(RUNTIME_EXTRAS), target)
    camera = closure(pins, project_requirements((CAMERA_EXTRA,), base=False), target)
    names = {p.name for p in runtime}
    skip = set(target.from_debian)
    return ([p for p in runtime if p.name not in skip],
            [p for p in camera if p.name not in skip and p.name not in names])


def run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    return subprocess.run(cmd, text=True, **kwargs)  # type: ignore[call-overload]


def download(target: Target, reqs: list[str], dest: Path) -> list[str]:
    """Binary wheels of ``reqs`` for ``target`` into ``dest``; the names PyPI has none of."""
    if not reqs:
        return []
    base = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
            "--only-binary=:all:", "--python-version", target.python,
            "--implementation", "cp", "--abi", target.abi, "--abi", "abi3", "--abi", "none",
            "-d", str(dest)]
    for platform in target.platforms:
        base += ["--platform", platform]
    missing: list[str] = []
    left = list(reqs)
    while left:
        done = run([*base, *left], capture_output=True)
        if done.returncode == 0:
            break
        # pip names the first requirement it found no wheel for: note it, try the rest
        found = re.search(r"No matching distribution found for (\S+)", done.stderr)
        if found is None or found.group(1) not in left:
            raise SystemExit(f"bundle: pip download failed for {target.name}:\n{done.stderr}")
        missing.append(found.group(1))
        left.remove(found.group(1))
    return missing


def pure_wheel(req: str, cache: Path) -> Path | None:
    """A wheel of ``req`` built from its sdist with no C compiler (``CC=false``), kept if
    that gives a pure ``py3-none-any`` wheel (cobs: its C speed-ups are optional)."""
    name = canonicalize_name(req.split("==")[0]).replace("-", "_")
    for built in cache.glob("*-none-any.whl"):
        if canonicalize_name(built.name.split("-")[0]).replace("-", "_") == name:
            return built
    env = {**os.environ, "CC": "false", "CXX": "false"}
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-cache-dir", "--no-deps",
         "--no-binary=:all:", "-w", str(cache), req], capture_output=True, env=env)
    for built in cache.glob("*.whl"):
        if canonicalize_name(built.name.split("-")[0]).replace("-", "_") == name:
            return built if built.name.endswith("-none-any.whl") else None
    return None


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def git_commit() -> str:
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=10", "HEAD"],
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else "unknown"


def build(out_dir: Path, targets: tuple[Target, ...] = TARGETS,
          debs: Path | None = None) -> Path:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    version, commit = project["version"], git_commit()
    pins = read_lock(LOCK.read_text())
    with tempfile.TemporaryDirectory(prefix="shotclock-bundle-") as tmp:
        top = Path(tmp) / "shotclock-bundle"
        top.mkdir()
        shutil.copytree(ROOT / "deploy", top / "deploy",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "bundle.py"))
        shutil.copy2(ROOT / "deploy" / "install-pi.sh", top / "install-pi.sh")
        shutil.copy2(LOCK, top / "requirements.lock")
        build_dir = Path(tmp) / "project"
        built = run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                     "--no-build-isolation", "-w", str(build_dir), str(ROOT)],
                    capture_output=True)
        if built.returncode != 0:
            raise SystemExit(f"bundle: building the project's wheel failed:\n{built.stderr}")
        (project_wheel,) = build_dir.glob("shotclock-*.whl")
        pip_version = subprocess.run([sys.executable, "-m", "pip", "--version"],
                                     capture_output=True, text=True).stdout.split()[1]
        manifest: dict[str, object] = {
            "name": "shotclock-bundle", "version": version, "commit": commit,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "targets": {}}
        for target in targets:
            dest = top / "wheels" / target.name
            dest.mkdir(parents=True)
            runtime, camera = target_requirements(pins, target)
            (dest / "requirements.txt").write_text("".join(p.line() + "\n" for p in runtime))
            (dest / "requirements-camera.txt").write_text(
                "".join(p.line() + "\n" for p in camera))
            (dest / "python-version").write_text(target.python + "\n")
            missing = download(target, [p.line() for p in runtime], dest)
            missing_camera = download(target, [p.line() for p in camera], dest)
            for req in list(missing):
                wheel = pure_wheel(req, Path(tmp) / "pure")
                if wheel is not None:
                    shutil.copy2(wheel, dest)
                    missing.remove(req)
            download(target, [f"pip=={pip_version}"], dest)
            shutil.copy2(project_wheel, dest)
            (dest / "missing.txt").write_text("".join(m + "\n" for m in missing))
            if debs is not None and (debs / target.name).is_dir():
                shutil.copytree(debs / target.name, top / "debs" / target.name)
            manifest["targets"][target.name] = {  # type: ignore[index]
                "python": target.python, "platforms": target.platforms,
                "wheels": sorted(p.name for p in dest.glob("*.whl")),
                "missing": missing, "missing_camera": missing_camera,
                "debian_packages": list(target.debian_packages),
                "debian_packages_camera": list(target.debian_packages_camera),
            }
        firmware = top / "firmware"
        firmware.mkdir()
        mpy_cross = shutil.which("mpy-cross") or str(Path(sys.executable).parent / "mpy-cross")
        compiled = run([mpy_cross, "-march=armv6m", "-o", str(firmware / "protocol_core.mpy"),
                        str(ROOT / "firmware" / "protocol_core.py")], capture_output=True)
        if compiled.returncode != 0:
            raise SystemExit(f"bundle: mpy-cross failed:\n{compiled.stderr}")
        for name in ("main.py", "PROTOCOL.md"):
            shutil.copy2(ROOT / "firmware" / name, firmware / name)
        manifest["files"] = {str(p.relative_to(top)): sha256(p)
                             for p in sorted(top.rglob("*")) if p.is_file()}
        (top / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n")
        out_dir.mkdir(parents=True, exist_ok=True)
        archive = out_dir / f"shotclock-bundle-{version}-{commit}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(top, arcname=top.name)
    return archive


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bundle.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist",
                        help="directory for the archive (default dist/)")
    parser.add_argument("--target", action="append", choices=[t.name for t in TARGETS],
                        help="only this target (repeatable; default all)")
    parser.add_argument("--debs", type=Path, default=None,
                        help="a directory of <target>/*.deb to carry (Debian packages a "
                             "target lacks, fetched on a connected Pi with apt-get download)")
    args = parser.parse_args(argv)
    targets = tuple(t for t in TARGETS if not args.target or t.name in args.target)
    archive = build(args.out, targets, args.debs)
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile("shotclock-bundle/MANIFEST.json"))  # type: ignore[arg-type]
    for name, info in manifest["targets"].items():
        note = f"; no wheel for {', '.join(info['missing'])}" if info["missing"] else ""
        print(f"{name}: {len(info['wheels'])} wheels (Python {info['python']}){note}")
    size = archive.stat().st_size / 1e6
    print(f"{archive} ({size:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["TARGETS", "Target", "Pin", "read_lock", "closure", "target_requirements",
           "build", "main"]

