"""Blender properties <-> solver parameters (the only module that knows both sides).

Every value goes through ``from_mapping``, so a bad value fails with the solver's own message
naming the field, its bound and its unit.

The object's material properties store SI values (``obj.cloth_solver.bend_stiffness`` is in
N·m, as in the presets and scene files); the panel draws a ``*_display`` twin of each, in the
unit and magnitude that ``solver.params`` gives beside the field (``Display``: µN·m, g/m², …).
``to_display`` / ``from_display`` are that conversion, and the only one.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..solver import Display, MaterialParams, SolverSettings, Wind, field_displays, field_specs

MATERIAL_SPECS = field_specs(MaterialParams)
MATERIAL_DISPLAYS: dict[str, Display] = field_displays(MaterialParams)

# The collider's settings are part of the public contract (obj.cloth_solver.thickness,
# .friction); material fields of the same name get a "cloth_" prefix on the object.
COLLIDER_PROPS = ("thickness", "friction")


def prop_name(field: str) -> str:
    """Property name of material field ``field`` on ``obj.cloth_solver`` (SI value)."""
    return f"cloth_{field}" if field in COLLIDER_PROPS else field


def display_prop_name(field: str) -> str:
    """Property the panel draws for material field ``field`` (value in its display unit)."""
    return f"{prop_name(field)}_display"


def to_display(field: str, si_value: float) -> float:
    """SI value of ``field`` -> the number the panel shows (e.g. 8e-6 N·m -> 8.0 µN·m)."""
    return float(si_value) * MATERIAL_DISPLAYS[field].scale


def from_display(field: str, shown: float) -> float:
    """The number the panel shows for ``field`` -> its SI value (inverse of ``to_display``)."""
    return _round(float(shown) / MATERIAL_DISPLAYS[field].scale)


def material_from_props(settings, name: str = "material") -> MaterialParams:
    """The validated SI material of an object's ``cloth_solver`` settings."""
    values = {}
    for key, spec in MATERIAL_SPECS.items():
        prop = prop_name(key)
        if spec.optional and not getattr(settings, f"use_{prop}"):
            values[key] = None
        else:
            values[key] = _round(getattr(settings, prop))
    return MaterialParams.from_mapping(values, prefix=name)


def material_to_props(material: MaterialParams, settings) -> None:
    """Set an object's material fields (e.g. from a preset). An optional field that is off
    keeps a value that follows its fallback (the weft its warp), so switching it on later
    starts from the value in use."""
    for key, spec in MATERIAL_SPECS.items():
        value, prop = getattr(material, key), prop_name(key)
        if spec.optional:
            setattr(settings, f"use_{prop}", value is not None)
            if value is None:
                fallback = OPTIONAL_FALLBACK.get(key)
                if fallback is not None:
                    setattr(settings, prop, getattr(material, fallback))
                continue
        setattr(settings, prop, value)


# Optional fields that fall back to another one when off (None): the weft follows the warp.
OPTIONAL_FALLBACK = {"stretch_stiffness_weft": "stretch_stiffness"}


def solver_settings_from_props(settings, name: str = "solver") -> SolverSettings:
    """The validated solver settings of an object's ``cloth_solver`` settings."""
    values = {
        "model": settings.solver.lower(),
        "quality": settings.quality.lower(),
        "substeps": settings.substeps if settings.use_custom_substeps else None,
        "newton_iterations": settings.newton_iterations
        if settings.use_custom_newton_iterations else None,
        "integrator": settings.integrator.lower(),
        "self_collision": bool(settings.self_collision),
    }
    return SolverSettings.from_mapping(values, prefix=name)


def wind_from_props(scene_settings) -> Wind:
    """World-space wind of the scene's ``cloth_solver`` settings."""
    s = scene_settings
    return Wind(velocity=np.array(s.wind_velocity, dtype=np.float64),
                turbulence=float(s.wind_turbulence), turbulence_scale=float(s.wind_scale),
                turbulence_frequency=float(s.wind_frequency), seed=int(s.wind_seed))


def threads_ceiling(scene_settings) -> int | None:
    """The scene's Threads setting (Bake > Performance) as the solver takes it: the most
    threads any model uses, or None for automatic (solver.set_thread_ceiling)."""
    s = scene_settings
    return int(s.threads) if s.threads_mode == "FIXED" else None


def collider_from_props(settings) -> tuple[float, float]:
    """A collider object's thickness [m] and friction coefficient."""
    return _round(float(settings.thickness)), _round(float(settings.friction))


def material_as_dict(material: MaterialParams) -> dict:
    """Material values without the unset optional ones (for writing presets)."""
    return {k: v for k, v in dataclasses.asdict(material).items() if v is not None}


def _round(value):
    """Blender stores floats in single precision: 0.0056 comes back as 0.00560000017. Keep the
    7 significant digits a float32 holds, so presets and reports show the number typed."""
    return float(f"{value:.7g}") if isinstance(value, float) else value
