"""Blender properties <-> solver parameters (the only module that knows both sides).

Every value goes through ``from_mapping``, so a bad value fails with the solver's own message
naming the field, its bound and its unit.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..solver import MaterialParams, SolverSettings, Wind
from .properties import MATERIAL_SPECS, prop_name


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
    """Set an object's material fields (e.g. from a preset)."""
    for key, spec in MATERIAL_SPECS.items():
        value, prop = getattr(material, key), prop_name(key)
        if spec.optional:
            setattr(settings, f"use_{prop}", value is not None)
            if value is None:
                continue
        setattr(settings, prop, value)


def solver_settings_from_props(settings, name: str = "solver") -> SolverSettings:
    """The validated solver settings of an object's ``cloth_solver`` settings."""
    values = {
        "model": settings.solver.lower(),
        "substeps": settings.substeps if settings.use_custom_substeps else None,
        "newton_iterations": settings.newton_iterations,
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
