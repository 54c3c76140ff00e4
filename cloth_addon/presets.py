"""Material presets in the UI: the shipped ones (``presets/*.toml``) and the user's own, saved as
TOML in the add-on's user directory and loaded by the same ``solver.formats.presets`` code."""

from __future__ import annotations

import dataclasses
import json
import math
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
    settings.preset, settings.preset_ident, settings.preset_user = name, ident, user
    return name


def shown_name(settings) -> str:
    """What the panel header says the material came from: "Cotton", "Cotton (edited)" once a
    value differs from the preset (back to "Cotton" when it is set back), or "" (none)."""
    name = settings.preset
    if not name:
        return ""
    preset = _preset_of(settings)
    if preset is None:  # the user's preset was removed or broke since: its name, as it was
        return name
    try:
        current = material_from_props(settings)
    except ValueError:  # a value the solver refuses differs from every preset
        return f"{name} (edited)"
    return name if same_material(current, preset) else f"{name} (edited)"


def same_material(a, b) -> bool:
    """Equal up to Blender's single-precision storage of floats."""
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if (x is None) != (y is None):
            return False
        if x is not None and not math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-30):
            return False
    return True


def _preset_of(settings):
    """The material of the preset the object's material came from, or None."""
    ident, user = settings.preset_ident, settings.preset_user
    if not ident:  # a file from before the identifier was kept: look it up by name
        ident = slug(settings.preset)
        found = [u for u in (False, True) if (ident, settings.preset) in available(u)]
        if not found:
            return None
        user = found[0]
    path = (user_preset_dir() if user else preset_dir()) / f"{ident}.toml"
    try:
        return _load_cached(str(path), path.stat().st_mtime_ns)
    except (OSError, ValueError):
        return None


_cache: dict = {}


def _load_cached(path: str, mtime_ns: int):
    """Presets are read again only when their file changes (the header draws often)."""
    key = (path, mtime_ns)
    if key not in _cache:
        p = Path(path)
        if len(_cache) > 64:
            _cache.clear()
        _cache[key] = load_preset(p.stem, p.parent)
    return _cache[key]


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
    settings.preset, settings.preset_ident, settings.preset_user = name, ident, True
    return path


def remove(ident: str) -> None:
    """Delete a user preset (shipped presets are read-only)."""
    (user_preset_dir() / f"{ident}.toml").unlink(missing_ok=True)


def _toml_string(text: str) -> str:
    # A JSON string is a valid TOML basic string (same escapes).
    return json.dumps(text, ensure_ascii=False)
