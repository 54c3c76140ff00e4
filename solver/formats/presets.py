"""Fabric presets: TOML files in the repository's ``presets/`` directory.

A preset file looks like::

    [preset]
    name = "Cotton"              # display name
    description = "Plain-weave cotton shirting"
    [material]                   # MaterialParams field names only; others keep their defaults
    area_density = 0.13
    [sources]                    # citation per material key (free text)
    area_density = "..."

The preset's identifier is the file stem (``cotton.toml`` -> ``"cotton"``).
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from ..params import MaterialParams, ParameterError

_SECTIONS = ("preset", "material", "sources")
_PRESET_KEYS = {"name": True, "description": False}  # key -> required


def preset_dir() -> Path:
    """The shipped presets: ``presets/`` beside the package in the repository and the add-on,
    ``bundled_presets/`` inside it once installed with pip (pyproject.toml)."""
    package = Path(__file__).resolve().parent.parent
    beside = package.parent / "presets"
    return beside if beside.is_dir() else package / "bundled_presets"


def list_presets(directory=None) -> list[str]:
    """Identifiers (file stems) of all presets, sorted; [] if the directory does not exist."""
    folder = Path(directory) if directory is not None else preset_dir()
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.toml") if p.is_file())


def load_preset(name: str, directory=None) -> MaterialParams:
    """The validated material of preset ``name`` (fields it omits keep their defaults)."""
    return _read(name, directory)[1]


def preset_info(name: str, directory=None) -> dict[str, Any]:
    """Metadata of preset ``name``.

    Returns:
        ``{"name": display name, "description": str, "sources": {key: citation},
        "material": {key: value as written in the file}}``.
    """
    data, _ = _read(name, directory)
    return {
        "name": data["preset"]["name"],
        "description": data["preset"].get("description", ""),
        "sources": dict(data.get("sources", {})),
        "material": dict(data.get("material", {})),
    }


def _find(name: str, directory) -> Path:
    if not isinstance(name, str):
        raise ParameterError("material", f"expected a preset name, got {type(name).__name__}")
    names = list_presets(directory)
    # Exact stem first; a case-insensitive match lets users type the display name "Cotton".
    match = name if name in names else next((n for n in names if n.lower() == name.lower()), None)
    if match is None:
        available = ", ".join(names) if names else "none installed"
        raise ParameterError("material", f"unknown preset {name!r} (available: {available})")
    folder = Path(directory) if directory is not None else preset_dir()
    return folder / f"{match}.toml"


def _read(name: str, directory) -> tuple[dict[str, Any], MaterialParams]:
    """Parse and validate one preset file; every problem is a ParameterError naming it."""
    path = _find(name, directory)
    where = f"preset {path.stem}"
    try:
        with path.open("rb") as fp:
            data = tomllib.load(fp)
    except (OSError, ValueError, RecursionError) as err:  # ValueError covers TOMLDecodeError
        raise ParameterError(where, f"cannot read {path.name}: {err}") from None

    _check_keys(where, data, _SECTIONS)
    for section in _SECTIONS:
        if not isinstance(data.get(section, {}), dict):
            raise ParameterError(f"{where}.{section}", "expected a table")
    meta = data.get("preset", {})
    _check_keys(f"{where}.preset", meta, _PRESET_KEYS)
    for key, required in _PRESET_KEYS.items():
        if required and key not in meta:
            raise ParameterError(f"{where}.preset.{key}", "missing")
        if key in meta and not isinstance(meta[key], str):
            raise ParameterError(f"{where}.preset.{key}", "expected a string")
    # Citations must refer to real material keys, so a typo there is caught too.
    fields = [f.name for f in dataclasses.fields(MaterialParams)]
    sources = data.get("sources", {})
    _check_keys(f"{where}.sources", sources, fields)
    for key, text in sources.items():
        if not isinstance(text, str):
            raise ParameterError(f"{where}.sources.{key}", "expected a string")
    material = MaterialParams.from_mapping(data.get("material", {}), prefix=where)
    return data, material


def _check_keys(where: str, table: dict, allowed) -> None:
    for key in table:
        if key not in allowed:
            raise ParameterError(f"{where}.{key}", f"unknown key (allowed: {', '.join(allowed)})")
