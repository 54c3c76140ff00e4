"""Presets: TOML files in the repository's ``presets/`` directory, fabrics at its top and
yarns (the yarn model's, solver/yarn/) in ``presets/yarns/``, read by the same code.

A preset file looks like::

    [preset]
    name = "Cotton"              # display name
    description = "Plain-weave cotton shirting"
    [material]                   # MaterialParams field names only ([yarn]: YarnParams');
    area_density = 0.13          # the others keep their defaults
    [sources]                    # citation per key (free text)
    area_density = "..."

The preset's identifier is the file stem (``cotton.toml`` -> ``"cotton"``). ``list_presets``
lists only the top folder, so yarns never appear among fabrics.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from ..params import MaterialParams, ParameterError, YarnParams

_PRESET_KEYS = {"name": True, "description": False}  # key -> required


@dataclasses.dataclass(frozen=True)
class _Kind:
    """A kind of preset: its folder under preset_dir(), its values' section and class, and
    the key its errors name (``material: unknown preset``) and the prefix of a file's keys
    (``preset cotton.area_density``)."""

    folder: str
    section: str
    params: type
    key: str
    where: str


FABRIC = _Kind("", "material", MaterialParams, "material", "preset")
YARN = _Kind("yarns", "yarn", YarnParams, "yarn", "yarn preset")


def preset_dir() -> Path:
    """The shipped presets: ``presets/`` beside the package in the repository and the add-on,
    ``bundled_presets/`` inside it once installed with pip (pyproject.toml)."""
    package = Path(__file__).resolve().parent.parent
    beside = package.parent / "presets"
    return beside if beside.is_dir() else package / "bundled_presets"


def _folder(directory, kind: _Kind) -> Path:
    return Path(directory) if directory is not None else preset_dir() / kind.folder


def list_presets(directory=None, kind: _Kind = FABRIC) -> list[str]:
    """Identifiers (file stems) of all presets, sorted; [] if the directory does not exist."""
    folder = _folder(directory, kind)
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.toml") if p.is_file())


def load_preset(name: str, directory=None, kind: _Kind = FABRIC):
    """The validated values of preset ``name`` (fields it omits keep their defaults): a
    MaterialParams, or for ``kind=YARN`` a YarnParams."""
    return _read(name, directory, kind)[1]


def preset_info(name: str, directory=None, kind: _Kind = FABRIC) -> dict[str, Any]:
    """Metadata of preset ``name``.

    Returns:
        ``{"name": display name, "description": str, "sources": {key: citation},
        "material" (or "yarn"): {key: value as written in the file}}``.
    """
    data, _ = _read(name, directory, kind)
    return {
        "name": data["preset"]["name"],
        "description": data["preset"].get("description", ""),
        "sources": dict(data.get("sources", {})),
        kind.section: dict(data.get(kind.section, {})),
    }


def list_yarn_presets(directory=None) -> list[str]:
    """Identifiers of the yarn presets (``presets/yarns/``), sorted."""
    return list_presets(directory, YARN)


def load_yarn_preset(name: str, directory=None) -> YarnParams:
    """The validated yarn of yarn preset ``name``."""
    return load_preset(name, directory, YARN)


def yarn_preset_info(name: str, directory=None) -> dict[str, Any]:
    """``preset_info`` of yarn preset ``name`` (its values under "yarn")."""
    return preset_info(name, directory, YARN)


def _find(name: str, directory, kind: _Kind) -> Path:
    if not isinstance(name, str):
        raise ParameterError(kind.key, f"expected a preset name, got {type(name).__name__}")
    names = list_presets(directory, kind)
    # Exact stem first; a case-insensitive match lets users type the display name "Cotton".
    match = name if name in names else next((n for n in names if n.lower() == name.lower()), None)
    if match is None:
        available = ", ".join(names) if names else "none installed"
        noun = "preset" if kind is FABRIC else kind.where
        raise ParameterError(kind.key, f"unknown {noun} {name!r} (available: {available})")
    return _folder(directory, kind) / f"{match}.toml"


def _read(name: str, directory, kind: _Kind = FABRIC) -> tuple[dict[str, Any], Any]:
    """Parse and validate one preset file; every problem is a ParameterError naming it."""
    path = _find(name, directory, kind)
    where = f"{kind.where} {path.stem}"
    try:
        with path.open("rb") as fp:
            data = tomllib.load(fp)
    except (OSError, ValueError, RecursionError) as err:  # ValueError covers TOMLDecodeError
        raise ParameterError(where, f"cannot read {path.name}: {err}") from None

    sections = ("preset", kind.section, "sources")
    _check_keys(where, data, sections)
    for section in sections:
        if not isinstance(data.get(section, {}), dict):
            raise ParameterError(f"{where}.{section}", "expected a table")
    meta = data.get("preset", {})
    _check_keys(f"{where}.preset", meta, _PRESET_KEYS)
    for key, required in _PRESET_KEYS.items():
        if required and key not in meta:
            raise ParameterError(f"{where}.preset.{key}", "missing")
        if key in meta and not isinstance(meta[key], str):
            raise ParameterError(f"{where}.preset.{key}", "expected a string")
    # Citations must refer to real keys, so a typo there is caught too.
    fields = [f.name for f in dataclasses.fields(kind.params)]
    sources = data.get("sources", {})
    _check_keys(f"{where}.sources", sources, fields)
    for key, text in sources.items():
        if not isinstance(text, str):
            raise ParameterError(f"{where}.sources.{key}", "expected a string")
    return data, kind.params.from_mapping(data.get(kind.section, {}), prefix=where)


def _check_keys(where: str, table: dict, allowed) -> None:
    for key in table:
        if key not in allowed:
            raise ParameterError(f"{where}.{key}", f"unknown key (allowed: {', '.join(allowed)})")
