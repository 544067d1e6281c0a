"""Named time profiles (presets): data files, each citing its source.

A preset is a JSON or TOML file with ``name``, ``title``, ``source`` (the rule or regulation
whose numbers it holds) and ``profile`` (fields of ``Profile``). The built-in ones are the
files beside this module; a federation adds its own by putting files in a directory
(``SHOTCLOCK_PRESETS_DIR``), no code. A table or a match names one with
``"profile": {"preset": "wpa-20"}``; other fields given beside it override its numbers.

Loaded once (at start-up, or the first time one is needed): the clock never reads a file.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clock_service.core.errors import InvalidProfile
from clock_service.core.profile import PROFILE_FIELDS, Profile
from clock_service.core.text import NOTE, clean, refusal

__all__ = ["Preset", "PresetLibrary", "PresetError", "load_preset", "library", "configure",
           "build_profile", "BUILTIN_DIR", "DEFAULT_PRESET"]

BUILTIN_DIR = Path(__file__).parent
DEFAULT_PRESET = "section-12"
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,59}$")
MAX_FILE_BYTES = 64 * 1024
MAX_PRESETS = 200
SUFFIXES = (".json", ".toml")


class PresetError(ValueError):
    """A preset file that cannot be used: the file and the reason."""


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    source: str
    profile: Profile
    builtin: bool

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "source": self.source,
                "builtin": self.builtin, "profile": self.profile.to_dict()}


def load_preset(path: Path, *, builtin: bool = False) -> Preset:
    """Read and check one preset file (JSON or TOML)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PresetError(f"{path}: cannot read: {exc}") from exc
    if len(raw) > MAX_FILE_BYTES:
        raise PresetError(f"{path}: {len(raw)} bytes, more than {MAX_FILE_BYTES}")
    try:
        data = (tomllib.loads(raw.decode("utf-8")) if path.suffix == ".toml"
                else json.loads(raw))
    except (ValueError, UnicodeDecodeError) as exc:
        raise PresetError(f"{path}: not valid {path.suffix[1:].upper()}: {exc}") from exc
    if not isinstance(data, dict):
        raise PresetError(f"{path}: the file must hold an object")
    missing = [k for k in ("name", "title", "source", "profile") if k not in data]
    if missing:
        raise PresetError(f"{path}: missing field(s) {missing}")
    unknown = sorted(set(data) - {"name", "title", "source", "profile"})
    if unknown:
        raise PresetError(f"{path}: unknown field(s) {unknown}")
    name, title, source, fields = data["name"], data["title"], data["source"], data["profile"]
    if not isinstance(name, str) or not NAME.match(name):
        raise PresetError(f"{path}: name must be 1-60 of a-z, 0-9, '-', '_', got {name!r}")
    for key, value in (("title", title), ("source", source)):
        reason = refusal(value, NOTE)  # the rule of every human text (core/text.py)
        if reason is not None:
            raise PresetError(f"{path}: {key}: {reason}")
    if not isinstance(fields, dict):
        raise PresetError(f"{path}: profile must be an object")
    if "preset" in fields:
        raise PresetError(f"{path}: profile.preset is the file's own name; leave it out")
    try:
        profile = Profile.from_partial({**fields, "preset": name})
    except InvalidProfile as exc:
        raise PresetError(f"{path}: profile: {exc}") from exc
    return Preset(name, clean(title, NOTE), clean(source, NOTE), profile, builtin)


class PresetLibrary:
    """The built-in presets and those of a directory, by name."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = None if directory is None else Path(directory)
        self.presets: dict[str, Preset] = {}
        for path in sorted(BUILTIN_DIR.glob("*.json")):
            self._add(load_preset(path, builtin=True), path)
        if self.directory is not None:
            if not self.directory.is_dir():
                raise PresetError(f"{self.directory}: not a directory (SHOTCLOCK_PRESETS_DIR)")
            files = sorted(p for p in self.directory.iterdir() if p.suffix in SUFFIXES)
            if len(files) > MAX_PRESETS:
                raise PresetError(f"{self.directory}: {len(files)} preset files, more than "
                                  f"{MAX_PRESETS}")
            for path in files:
                self._add(load_preset(path), path)

    def _add(self, preset: Preset, path: Path) -> None:
        earlier = self.presets.get(preset.name)
        if earlier is not None:
            raise PresetError(f"{path}: preset {preset.name!r} is defined twice"
                              f"{' (a built-in name)' if earlier.builtin else ''}")
        self.presets[preset.name] = preset

    def get(self, name: str) -> Preset:
        preset = self.presets.get(name)
        if preset is None:
            raise InvalidProfile(f"unknown preset {name!r}; known: {sorted(self.presets)}",
                                 code="unknown_preset")
        return preset

    def build(self, partial: Mapping[str, Any] | None) -> Profile:
        """A full profile from a partial one: the preset named in it (if any) as the base,
        the fields given beside it over that, the rules' defaults (section 12) for the rest."""
        partial = dict(partial or {})
        name = partial.pop("preset", None)
        if name is None:
            return Profile.from_partial(partial)
        if not isinstance(name, str):
            raise InvalidProfile(f"preset must be a name, got {name!r}")
        unknown = sorted(set(partial) - set(PROFILE_FIELDS))
        if unknown:
            raise InvalidProfile(
                f"unknown profile field(s) {unknown}; known: {sorted(PROFILE_FIELDS)}")
        base = self.get(name).profile.to_dict()
        return Profile.from_partial({**base, **partial, "preset": name})


_library: PresetLibrary | None = None


def library() -> PresetLibrary:
    """The process's presets (the built-in ones unless ``configure`` named a directory)."""
    global _library
    if _library is None:
        _library = PresetLibrary()
    return _library


def configure(directory: str | Path | None) -> PresetLibrary:
    """Load the built-in presets and those of ``directory``; a bad file stops start-up
    with its name and the reason (``PresetError``)."""
    global _library
    _library = PresetLibrary(directory)
    return _library


def build_profile(partial: Mapping[str, Any] | None) -> Profile:
    return library().build(partial)
