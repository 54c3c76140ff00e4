"""Yarn presets: TOML files in ``presets/yarns/`` beside the fabric presets.

A yarn preset file looks like::

    [preset]
    name = "Wool Worsted"        # display name
    description = "..."
    [yarn]                       # YarnParams field names only; others keep their defaults
    radius = 1.25e-3
    [sources]                    # citation per yarn key (free text)
    radius = "..."

The identifier is the file stem (``wool_worsted.toml`` -> ``"wool_worsted"``). The fabric
presets' ``list_presets`` only lists the top folder, so yarns never appear among fabrics.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from ..formats.presets import preset_dir
from ..params import ParameterError, YarnParams

_SECTIONS = ("preset", "yarn", "sources")


def yarn_preset_dir() -> Path:
    """The shipped yarn presets: the ``yarns`` folder of the fabric presets' folder."""
    return preset_dir() / "yarns"


def list_yarn_presets(directory=None) -> list[str]:
    """Identifiers of all yarn presets, sorted; [] if the folder does not exist."""
    folder = Path(directory) if directory is not None else yarn_preset_dir()
    return sorted(p.stem for p in folder.glob("*.toml") if p.is_file()) if folder.is_dir() else []


def load_yarn_preset(name: str, directory=None) -> YarnParams:
    """The validated yarn of preset ``name``; every problem is a ParameterError naming it."""
    return _read(name, directory)[1]


def yarn_preset_info(name: str, directory=None) -> dict[str, Any]:
    """``{"name", "description", "sources", "yarn"}`` of preset ``name`` (values as written)."""
    data, _ = _read(name, directory)
    return {"name": data["preset"]["name"], "description": data["preset"].get("description", ""),
            "sources": dict(data.get("sources", {})), "yarn": dict(data.get("yarn", {}))}


def _read(name: str, directory) -> tuple[dict[str, Any], YarnParams]:
    names = list_yarn_presets(directory)
    if not isinstance(name, str) or name not in names:
        available = ", ".join(names) if names else "none installed"
        raise ParameterError("yarn", f"unknown yarn preset {name!r} (available: {available})")
    folder = Path(directory) if directory is not None else yarn_preset_dir()
    path = folder / f"{name}.toml"
    where = f"yarn preset {name}"
    try:
        with path.open("rb") as fp:
            data = tomllib.load(fp)
    except (OSError, ValueError) as err:
        raise ParameterError(where, f"cannot read {path.name}: {err}") from None
    fields = [f.name for f in dataclasses.fields(YarnParams)]
    for key in data:
        if key not in _SECTIONS:
            raise ParameterError(f"{where}.{key}", f"unknown section (allowed: {', '.join(_SECTIONS)})")
    if not isinstance(data.get("preset", {}).get("name"), str):
        raise ParameterError(f"{where}.preset.name", "missing or not a string")
    for key, text in data.get("sources", {}).items():
        if key not in fields or not isinstance(text, str):
            raise ParameterError(f"{where}.sources.{key}", "expected a yarn key with a string")
    return data, YarnParams.from_mapping(data.get("yarn", {}), prefix=where)
