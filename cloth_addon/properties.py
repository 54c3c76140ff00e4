"""Blender properties: per object (``obj.cloth_solver``) and per scene (``scene.cloth_solver``).

Material and solver fields are generated from ``solver.params`` (names, units, defaults, bounds,
descriptions), so the UI, the scene files and the presets cannot drift apart. The bake validates
the values again through ``MaterialParams.from_mapping``, which names any problem.
"""

from __future__ import annotations

import dataclasses
import sys

import bpy
from bpy.props import (BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty,
                       IntProperty, PointerProperty, StringProperty)

from ..solver import (INTEGRATOR_NAMES, SOLVERS, Collider, FieldSpec, MaterialParams,
                      SolverSettings, Wind, field_defaults, field_specs)
from . import bake_status
from .bake_status import cloth_settings_changed, role_changed, scene_settings_changed

ROLE_ITEMS = (
    ("NONE", "None", "Not part of the cloth simulation"),
    ("CLOTH", "Cloth", "Simulated by Bake Cloth; the result is written as shape keys"),
    ("COLLIDER", "Collider", "The cloth collides with this object's evaluated mesh, every frame"),
)


def _model_doc(cls) -> str:
    """First line of the model module's docstring, for the enum tooltip."""
    doc = sys.modules[cls.__module__].__doc__ or cls.__doc__ or ""
    return doc.strip().splitlines()[0] if doc.strip() else cls.__name__


# Static items (built once at import): the bpy.props docs warn that dynamic item callbacks must
# keep their strings alive. Identifiers are the model names upper-cased.
SOLVER_ITEMS = tuple((name.upper(), name.replace("_", " ").title(), _model_doc(cls))
                     for name, cls in SOLVERS.items())
INTEGRATOR_ITEMS = tuple((name.upper(), name.replace("_", " ").title(), "")
                         for name in INTEGRATOR_NAMES)

MATERIAL_SPECS = field_specs(MaterialParams)
MATERIAL_DEFAULTS = field_defaults(MaterialParams)

# Optional material fields (None = off) get a "use_" switch; when switched on, the value field
# starts from the field it falls back to, or from this value for a pure on/off limit.
OPTIONAL_FALLBACK = {"stretch_stiffness_weft": "stretch_stiffness"}
OPTIONAL_START = {"max_strain": 0.05}  # 5 %: a typical lock-up strain of woven fabric

# The collider's settings are part of the public contract (obj.cloth_solver.thickness,
# .friction); material fields of the same name get a "cloth_" prefix on the object.
COLLIDER_PROPS = ("thickness", "friction")


def prop_name(field: str) -> str:
    """Property name of material field ``field`` on ``obj.cloth_solver``."""
    return f"cloth_{field}" if field in COLLIDER_PROPS else field


def label(name: str, spec: FieldSpec) -> str:
    """UI label with the SI unit, e.g. "Stretch Stiffness (N/m)"."""
    text = name.replace("_", " ").title()
    return f"{text} ({spec.unit})" if spec.unit and spec.unit != "1" else text


def _number_property(name: str, spec: FieldSpec, default):
    """A Float/IntProperty whose bounds, default and tooltip come from ``spec``."""
    unit = f" [{spec.unit}]" if spec.unit else ""
    common = dict(name=label(name, spec), description=f"{spec.doc}{unit}",
                  update=cloth_settings_changed)
    if spec.integer:
        return IntProperty(default=int(default), min=int(spec.minimum),
                           max=int(min(spec.maximum, 2**31 - 1)), **common)
    # Blender floats are single precision; 6 digits shows bending stiffness like 8e-6 N·m.
    return FloatProperty(default=float(default), min=spec.minimum, max=spec.maximum,
                         precision=6 if abs(default) < 1e-2 else 3, step=1, **common)


def _material_annotations() -> dict:
    out = {}
    for name, spec in MATERIAL_SPECS.items():
        default = MATERIAL_DEFAULTS[name]
        if spec.optional:
            start = default if default is not None else (
                MATERIAL_DEFAULTS[OPTIONAL_FALLBACK[name]] if name in OPTIONAL_FALLBACK
                else OPTIONAL_START[name])
            out[f"use_{prop_name(name)}"] = BoolProperty(
                name=f"Use {name.replace('_', ' ').title()}", default=default is not None,
                description=f"Enable: {spec.doc}", update=cloth_settings_changed)
            out[prop_name(name)] = _number_property(name, spec, start)
        else:
            out[prop_name(name)] = _number_property(name, spec, default)
    return out


def _collider_default(name: str):
    return next(f.default for f in dataclasses.fields(Collider) if f.name == name)


def _wind_default(name: str):
    f = next(f for f in dataclasses.fields(Wind) if f.name == name)
    return f.default_factory() if f.default is dataclasses.MISSING else f.default


def _solver_spec(name: str) -> FieldSpec:
    # field_specs() covers only numeric fields; SolverSettings also has choices and switches.
    return next(f.metadata["spec"] for f in dataclasses.fields(SolverSettings) if f.name == name)


_SOLVER_DEFAULTS = {f.name: f.default for f in dataclasses.fields(SolverSettings)}
_SUBSTEPS = _solver_spec("substeps")
_NEWTON = _solver_spec("newton_iterations")


class ClothSolverObjectSettings(bpy.types.PropertyGroup):
    """Per-object settings: role, cloth material and solver, collider, and the bake record."""

    __annotations__ = {
        "role": EnumProperty(name="Role", items=ROLE_ITEMS, default="NONE",
                             description="How Bake Cloth uses this object",
                             update=role_changed),
        # ---- cloth ----
        "solver": EnumProperty(name="Solver", items=SOLVER_ITEMS,
                               default=_SOLVER_DEFAULTS["model"].upper(),
                               description="Cloth model used to simulate this object",
                               update=cloth_settings_changed),
        "preset": StringProperty(name="Preset", default="",
                                 description="Material preset last applied (informative)"),
        **_material_annotations(),
        "pin_group": StringProperty(
            name="Pin Group", default="",
            description="Vertex group of pinned vertices; weight 1 holds a vertex exactly on the "
                        "object's evaluated (animated) mesh, lower weights pull it with a goal "
                        "spring, weight 0 leaves it free", update=cloth_settings_changed),
        "use_custom_substeps": BoolProperty(
            name="Custom Substeps", default=_SOLVER_DEFAULTS["substeps"] is not None,
            description="Set the steps per frame by hand (off: the model's default; the "
                        "explicit model then finds its stable step automatically)",
            update=cloth_settings_changed),
        "substeps": IntProperty(
            name="Substeps", default=_SOLVER_DEFAULTS["substeps"] or 2,
            min=int(_SUBSTEPS.minimum), max=int(min(_SUBSTEPS.maximum, 2**31 - 1)),
            description=_SUBSTEPS.doc, update=cloth_settings_changed),
        "newton_iterations": IntProperty(
            name="Newton Iterations", default=_SOLVER_DEFAULTS["newton_iterations"],
            min=int(_NEWTON.minimum), max=int(_NEWTON.maximum), description=_NEWTON.doc,
            update=cloth_settings_changed),
        "integrator": EnumProperty(
            name="Integrator", items=INTEGRATOR_ITEMS,
            default=_SOLVER_DEFAULTS["integrator"].upper(),
            description="Explicit time integrator of the mass-spring model",
            update=cloth_settings_changed),
        "self_collision": BoolProperty(
            name="Self Collision", default=_SOLVER_DEFAULTS["self_collision"],
            description="Keep the cloth from passing through itself",
            update=cloth_settings_changed),
        # ---- collider ----
        "thickness": FloatProperty(
            name="Thickness (m)", default=_collider_default("thickness"), min=0.0, max=1.0,
            precision=4, step=0.1, unit="LENGTH", update=cloth_settings_changed,
            description="Collision margin around the collider's surface (a length in the "
                        "scene's units, like every Blender length)"),
        "friction": FloatProperty(
            name="Friction", default=_collider_default("friction"), min=0.0, max=10.0,
            update=cloth_settings_changed,
            description="Coulomb friction coefficient between cloth and this collider"),
        "use_collision_modifier": BoolProperty(
            name="Collision Modifier as Collider", default=True, update=role_changed,
            description="With the role None, an enabled Collision modifier (Physics > "
                        "Collision) makes this object a collider, with its Thickness Outer and "
                        "Friction mapped to ours; off: Bake Cloth ignores this object"),
        # ---- bake record (written by Bake Cloth, read by Free Bake and the UI) ----
        "is_baked": BoolProperty(name="Baked", default=False),
        "bake_frame_start": IntProperty(name="Baked From", default=0),
        "bake_frame_end": IntProperty(name="Baked To", default=0),
        "bake_created_basis": BoolProperty(default=False),
        "bake_created_action": StringProperty(default=""),
        "bake_muted_modifiers": StringProperty(default=""),
        "bake_model": StringProperty(name="Model", default=""),
        "bake_time": FloatProperty(name="Bake Time (s)", default=0.0),
        "bake_max_strain": FloatProperty(name="Max Strain", default=0.0, subtype="FACTOR"),
        "bake_deepest_penetration": FloatProperty(
            name="Deepest Penetration (m)", default=0.0, unit="LENGTH",
            description="Deepest cloth vertex inside a collider over the bake"),
        "bake_outdated": StringProperty(
            name="Outdated", default="",
            description="Why the bake no longer matches its inputs ('' = up to date)"),
        "bake_fingerprint": StringProperty(
            default="", description="Hash of the cloth's mesh, shape keys and modifiers at bake"),
        "bake_intersections": IntProperty(
            name="Intersections", default=0,
            description="Most intersecting triangle pairs (cloth/cloth and cloth/collider) in "
                        "one frame of the bake"),
    }


class ClothSolverSceneSettings(bpy.types.PropertyGroup):
    """Per-scene bake settings: frame range and wind."""

    __annotations__ = {
        "frame_start": IntProperty(name="Start", default=1, min=0, max=99999,
                                   description="First frame of the bake (the initial state)"),
        "frame_end": IntProperty(name="End", default=250, min=1, max=99999,
                                 description="Last frame of the bake"),
        "wind_velocity": FloatVectorProperty(
            name="Wind (m/s)", size=3, default=tuple(_wind_default("velocity")),
            subtype="VELOCITY", unit="VELOCITY", update=scene_settings_changed,
            description="Steady wind velocity in world space, felt through air drag (a velocity "
                        "in the scene's units, like every Blender velocity)"),
        "wind_turbulence": FloatProperty(
            name="Turbulence (m/s)", default=_wind_default("turbulence"), min=0.0, max=1000.0,
            update=scene_settings_changed,
            description="R.m.s. speed of smooth pseudo-random gusts [m/s]; 0 = steady"),
        "wind_scale": FloatProperty(
            name="Gust Size (m)", default=_wind_default("turbulence_scale"), min=1e-4,
            max=1e4, unit="LENGTH", update=scene_settings_changed,
            description="Spatial size of the gusts (a length in the scene's units)"),
        "wind_frequency": FloatProperty(
            name="Gust Frequency (Hz)", default=_wind_default("turbulence_frequency"), min=0.0,
            max=1e3, update=scene_settings_changed, description="How fast the gusts change [Hz]"),
        "wind_seed": IntProperty(name="Seed", default=_wind_default("seed"), min=0,
                                 update=scene_settings_changed,
                                 description="Seed of the gust field (bakes are reproducible)"),
        "use_force_fields": BoolProperty(
            name="Force Fields", default=True, update=scene_settings_changed,
            description="Wind and Turbulence force fields in the scene add to this wind "
                        "(docs/blender-conventions.md)"),
        "field_speed": FloatProperty(
            name="Speed per Strength (m/s)", default=0.01, min=0.0, max=1e3, precision=4,
            update=scene_settings_changed,
            description="Air speed [m/s] that one unit of a force field's Strength stands for "
                        "(Blender's strength has no physical unit; 1000 = 10 m/s by default)"),
        "use_collision_modifiers": BoolProperty(
            name="Collision Modifiers", default=True, update=scene_settings_changed,
            description="Objects with Blender's Collision modifier and the role None act as "
                        "colliders (Thickness Outer and Friction mapped to ours)"),
        "last_report": StringProperty(name="Last Bake", default="",
                                      description="Summary of the last bake"),
    }


classes = (ClothSolverObjectSettings, ClothSolverSceneSettings)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Object.cloth_solver = PointerProperty(type=ClothSolverObjectSettings)
    bpy.types.Scene.cloth_solver = PointerProperty(type=ClothSolverSceneSettings)
    bake_status.register()  # the handler that keeps the bake record's outdated mark


def unregister():
    bake_status.unregister()
    del bpy.types.Scene.cloth_solver
    del bpy.types.Object.cloth_solver
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
