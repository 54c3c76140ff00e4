"""Blender's own physics settings as inputs to a bake: Collision modifiers as colliders, Wind and
Turbulence force fields as wind, and Blender's Cloth modifier kept out of the way, its settings
taken over in one click (Take Cloth Modifier Settings: ``take_cloth_modifier``).

The mapping and its assumptions are in docs/user-guide.md, "Blender's own physics"; in short:

- Collision modifier (object's role None): a collider with thickness = Collision > Thickness
  Outer (Blender units -> m) and friction coefficient = Collision > Friction / 100, because
  Blender's cloth takes ``cloth_friction * 0.01`` as its Coulomb coefficient (collision.cc: the
  tangential velocity change is at most ``pdef_cfrict * 0.01`` times the normal one).
- Wind field: a uniform air velocity along the field object's +Z, ``strength * falloff *
  speed_per_strength`` m/s; its Noise becomes turbulence of the r.m.s. that Blender's noise adds.
- Turbulence field: turbulence of the r.m.s. of Blender's turbulence vector, gusts the size of
  the field's Size.

Blender's field strength has no physical unit (its effect on Blender's cloth depends on the
vertex mass and the mesh resolution), so a scene setting says how many m/s one unit of strength
is.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..solver import IMPLICIT_SUBSTEPS
from .formats import frame_range

FIELD_TYPES = ("WIND", "TURBULENCE")
# Blender's wind noise (effect.cc, wind_func) adds sign * (r / f) * noise / 128 to the strength,
# r uniform in 0..127 and f uniform in [1, 2): r.m.s. sqrt(E[r²] E[1/f²]) / 128 = 0.406 * noise.
WIND_NOISE_RMS = 0.406
# A Turbulence field's force is strength * (-1 + 2 * turbulence(p)) per component, three octaves
# of Blender's improved Perlin noise; measured in Blender (mathutils.noise, 40,000 random points)
# each component has r.m.s. 0.174, so the vector's r.m.s. length is 0.174 * sqrt(3) = 0.30.
TURBULENCE_RMS = 0.30
# Blender's cloth friction is 0-80 and its cloth solver uses cloth_friction * 0.01 as mu.
CLOTH_FRICTION_TO_MU = 0.01


# ---- Collision modifier -> collider ----

def collision_modifier(obj):
    """The object's Collision modifier if it is on (shown in viewports and Collision enabled),
    else None. Bake Cloth reads the viewport's evaluation, so the viewport switch counts."""
    collision = getattr(obj, "collision", None)
    if collision is None or not collision.use:
        return None
    return next((m for m in obj.modifiers if m.type == "COLLISION" and m.show_viewport), None)


def uses_collision_modifier(obj, scene) -> bool:
    """True if the object takes part as a collider through Blender's Collision modifier: its
    Cloth Solver role is None (a role the user set wins), the scene and the object allow it, and
    the modifier is on."""
    s = obj.cloth_solver
    return (obj.type == "MESH" and s.role == "NONE" and s.use_collision_modifier
            and scene.cloth_solver.use_collision_modifiers
            and collision_modifier(obj) is not None)


def collision_settings(obj, metres_per_unit: float) -> tuple[float, float]:
    """Thickness [m] and Coulomb friction coefficient of Blender's Collision settings."""
    c = obj.collision
    return (_round(float(c.thickness_outer) * metres_per_unit),
            _round(float(c.cloth_friction) * CLOTH_FRICTION_TO_MU))


# ---- Cloth modifier ----

def cloth_modifiers(obj) -> list:
    """Blender Cloth modifiers of ``obj`` that are on in viewports (they would simulate)."""
    return [m for m in obj.modifiers if m.type == "CLOTH" and m.show_viewport]


@contextmanager
def cloth_modifiers_off(objects):
    """While the bake reads the scene, switch Blender's Cloth modifiers off in viewports: at
    later frames their output is Blender's own simulation, which would become our start shape and
    our pin targets (and every frame_set would run it). Restored on exit."""
    switched = []
    try:
        for obj in objects:
            for mod in cloth_modifiers(obj):
                mod.show_viewport = False
                switched.append(mod)
        yield
    finally:
        for mod in switched:
            mod.show_viewport = True


def cloth_modifier_warning(obj, scene) -> str | None:
    mods = cloth_modifiers(obj)
    if not mods:
        return None
    names = ", ".join(f"'{m.name}'" for m in mods)
    hint = ""
    if take_cloth_modifier(obj, mods[0], scene, apply=False):
        hint = (f"; its settings differ from ours: Take Cloth Modifier Settings (Cloth Solver "
                f"panel) takes {', '.join(TAKEN)}")
    return (f"cloth '{obj.name}' has Blender's Cloth modifier {names}: its simulation is not "
            "used (the bake reads the mesh without it); it is switched off after the bake with "
            f"the other modifiers, and Free Bake switches it back on{hint}")


# ---- Cloth modifier -> our settings ----

# What Take Cloth Modifier Settings takes: the settings that mean the same here. Blender's mass,
# stiffness, damping and air viscosity are per vertex and in its own units (their effect
# depends on the mesh resolution), and its collision distances make up for its discrete
# collisions: none of them maps onto an SI material (docs/blender-conventions.md).
TAKEN = ("pin group", "self-collision", "sewing", "quality steps", "cache frame range")
BLENDER_QUALITY = 5  # Blender's default Quality Steps, which our implicit default stands for


def cloth_modifier(obj):
    """The object's Blender Cloth modifier (the first one on in viewports, else the first; a
    bake switches it off), or None."""
    mods = [m for m in obj.modifiers if m.type == "CLOTH"]
    return next((m for m in mods if m.show_viewport), mods[0] if mods else None)


def substeps_for_quality(quality: int) -> int:
    """Our implicit model's steps per frame for Blender's Quality Steps: Blender's default is
    our default, and a scene that asks for more or fewer steps gets proportionally more or
    fewer (Blender's own implicit solver needs about 2.5 times ours to stay stable)."""
    return max(1, round(IMPLICIT_SUBSTEPS * quality / BLENDER_QUALITY))


def cache_range(mods) -> tuple[int, int]:
    """The frames the Cloth modifiers' caches cover together (the bake range is the scene's)."""
    return (min(int(m.point_cache.frame_start) for m in mods),
            max(int(m.point_cache.frame_end) for m in mods))


def take_cloth_modifier(obj, mod, scene, apply: bool = True, frames=None) -> list[str]:
    """Take ``mod``'s settings that map onto ours (TAKEN) into ``obj``, and its cache range (or
    ``frames``, several modifiers' ``cache_range``) into the scene's bake range; returns what
    changes (or would change, with ``apply`` False), for the user. The object becomes a
    cloth."""
    s, settings, coll = obj.cloth_solver, mod.settings, mod.collision_settings
    changes = []

    def take(target, name, value, text):
        if getattr(target, name) != value:
            changes.append(text)
            if apply:
                setattr(target, name, value)

    take(s, "role", "CLOTH", "role Cloth")
    pins = settings.vertex_group_mass
    if pins and pins in obj.vertex_groups:
        take(s, "pin_group", pins, f"pin group '{pins}'")
    take(s, "self_collision", bool(coll.use_self_collision),
         f"self-collision {'on' if coll.use_self_collision else 'off'}")
    take(s, "use_sewing", bool(settings.use_sewing_springs),
         f"sewing {'on' if settings.use_sewing_springs else 'off'}")
    if s.solver == "IMPLICIT":  # the explicit model finds its stable step itself
        steps = substeps_for_quality(int(settings.quality))
        custom = steps != IMPLICIT_SUBSTEPS
        if custom != s.use_custom_substeps or (custom and s.substeps != steps):
            changes.append(f"quality {settings.quality} steps as {steps} substeps")
            if apply:
                s.use_custom_substeps = custom
                if custom:
                    s.substeps = steps
    start, end = frames or cache_range([mod])
    b = scene.cloth_solver
    if (b.frame_start, b.frame_end) != (start, end) and end > start:
        changes.append(f"frames {frame_range(start, end)}")
        if apply:
            b.frame_start, b.frame_end = start, end
    return changes


# ---- Force fields -> wind ----

@dataclass(frozen=True)
class FieldWind:
    """What one force field adds to the wind at a point.

    Attributes:
        name: the field object's name.
        velocity: steady wind [m/s], (3,).
        turbulence: r.m.s. gust speed [m/s].
        scale: gust size [m] (Turbulence fields), or None.
    """

    name: str
    velocity: tuple
    turbulence: float
    scale: float | None = None

    def close_to(self, other: "FieldWind") -> bool:
        return (np.allclose(self.velocity, other.velocity, rtol=1e-5, atol=1e-7)
                and math.isclose(self.turbulence, other.turbulence, rel_tol=1e-5, abs_tol=1e-7)
                and (self.scale is None) == (other.scale is None)
                and (self.scale is None or math.isclose(self.scale, other.scale, rel_tol=1e-5)))


def field_objects(scene) -> list:
    """Objects of the scene with a Wind or Turbulence force field."""
    return [o for o in scene.objects
            if getattr(o, "field", None) is not None and o.field.type in FIELD_TYPES]


def field_wind(obj, depsgraph, at_units, speed_per_strength: float,
               metres_per_unit: float) -> FieldWind:
    """The wind a force field adds at ``at_units`` (a world point in Blender units), from its
    evaluated state at the depsgraph's frame (animated strength, moving field object)."""
    ev = obj.evaluated_get(depsgraph)
    f = ev.field
    m = np.array(ev.matrix_world, dtype=np.float64)
    axis = m[:3, 2] / max(np.linalg.norm(m[:3, 2]), 1e-30)
    falloff = _falloff(f, axis, np.asarray(at_units, dtype=np.float64) - m[:3, 3])
    if not f.apply_to_location:
        falloff = 0.0
    strength = float(f.strength) * falloff
    noise = WIND_NOISE_RMS * float(f.noise) * falloff
    if f.type == "WIND":
        velocity = axis * strength * speed_per_strength
        return FieldWind(obj.name, tuple(velocity), abs(noise) * speed_per_strength)
    # Turbulence: the noise is added to the strength, which scales the noise vector.
    rms = TURBULENCE_RMS * math.hypot(strength, noise) * speed_per_strength
    return FieldWind(obj.name, (0.0, 0.0, 0.0), rms, float(f.size) * metres_per_unit)


def combine(velocity, turbulence: float, scale: float, fields) -> tuple:
    """The scene's wind plus the fields': velocities add; independent gusts add in r.m.s.; the
    gust size is the scene's unless a Turbulence field gives the strongest gusts."""
    velocity = np.asarray(velocity, dtype=np.float64) + sum(
        (np.asarray(f.velocity) for f in fields), np.zeros(3))
    strongest = max(fields, key=lambda f: f.turbulence, default=None)
    if strongest is not None and strongest.scale is not None and strongest.turbulence > turbulence:
        scale = strongest.scale
    turbulence = math.sqrt(turbulence ** 2 + sum(f.turbulence ** 2 for f in fields))
    return velocity, turbulence, scale


def _falloff(f, axis: np.ndarray, rel: np.ndarray) -> float:
    """Blender's effector_falloff (effect.cc) at offset ``rel`` from the field object, for the
    field's shape, direction filter, falloff type, power and min/max distances."""
    fac = float(axis @ rel)
    if (f.z_direction == "POSITIVE" and fac < 0.0) or (f.z_direction == "NEGATIVE" and fac > 0.0):
        return 0.0
    radial = float(np.linalg.norm(rel - axis * fac))
    if f.falloff_type == "SPHERE":
        # Blender's distance to the field: to its XY plane for a Plane, to its axis for a Line.
        distance = {"PLANE": abs(fac), "LINE": radial}.get(f.shape, float(np.linalg.norm(rel)))
        return _falloff_func(distance, f.use_min_distance, f.distance_min, f.use_max_distance,
                             f.distance_max, f.falloff_power)
    out = _falloff_func(abs(fac), f.use_min_distance, f.distance_min, f.use_max_distance,
                        f.distance_max, f.falloff_power)
    if out == 0.0:
        return 0.0
    if f.falloff_type == "CONE":
        length = float(np.linalg.norm(rel))
        radial = math.degrees(math.acos(max(-1.0, min(1.0, fac / length)))) if length else 0.0
    return out * _falloff_func(radial, f.use_radial_min, f.radial_min, f.use_radial_max,
                               f.radial_max, f.radial_falloff)


def _falloff_func(fac, use_min, min_dist, use_max, max_dist, power) -> float:
    if use_max and fac > max_dist:
        return 0.0
    if use_min and fac < min_dist:
        return 1.0
    return float((1.0 + fac - (min_dist if use_min else 0.0)) ** -power)


def _round(value: float) -> float:
    """Blender stores floats in single precision; keep the 7 digits a float32 holds."""
    return float(f"{value:.7g}")
