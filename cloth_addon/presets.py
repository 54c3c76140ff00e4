"""Material presets in the UI: the shipped ones (``presets/*.toml``) and the user's own, saved as
TOML in the add-on's user directory and loaded by the same ``solver.formats.presets`` code."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..solver import list_presets, load_preset, preset_dir, preset_info
from .convert import material_as_dict, material_from_props, material_to_props
from .storage import user_preset_dir


def available(user: bool) -> list[tuple[str, str]]:
    """(identifier, display name) of the shipped (user=False) or the user's presets."""
    folder = user_preset_dir() if user else preset_dir()
    out = []
    for ident in list_presets(folder):
        try:
            out.append((ident, preset_info(ident, folder)["name"]))
        except ValueError:  # a broken user file is listed by its file name; applying it says why
            out.append((ident, ident))
    return out


def apply(settings, ident: str, user: bool) -> str:
    """Set an object's material from a preset; returns the preset's display name."""
    folder = user_preset_dir() if user else preset_dir()
    material = load_preset(ident, folder)
    material_to_props(material, settings)
    name = preset_info(ident, folder)["name"]
    settings.preset = name
    return name


def slug(name: str) -> str:
    """File stem of a preset called ``name``: lower case, words joined by underscores."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def save(settings, name: str, description: str = "") -> Path:
    """Write the object's current material as a user preset ``name``; returns the file."""
    ident = slug(name)
    if not ident:
        raise ValueError("a preset name needs at least one letter or digit")
    material = material_from_props(settings)
    lines = ["[preset]", f"name = {_toml_string(name)}",
             f"description = {_toml_string(description or 'Saved from Blender')}", "",
             "[material]"]
    lines += [f"{key} = {value!r}" for key, value in material_as_dict(material).items()]
    path = user_preset_dir() / f"{ident}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    load_preset(ident, path.parent)  # read back through the validator
    settings.preset = name
    return path


def remove(ident: str) -> None:
    """Delete a user preset (shipped presets are read-only)."""
    (user_preset_dir() / f"{ident}.toml").unlink(missing_ok=True)


def _toml_string(text: str) -> str:
    # A JSON string is a valid TOML basic string (same escapes).
    return json.dumps(text, ensure_ascii=False)
