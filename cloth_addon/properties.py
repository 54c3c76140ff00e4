"""Blender properties: per object (``obj.cloth_solver``) and per scene (``scene.cloth_solver``).

Material and solver fields are generated from ``solver.params`` (names, units, bounds,
descriptions, display units), so the UI, the scene files and the presets cannot drift apart. The
bake validates the values again through ``MaterialParams.from_mapping``, which names any problem.

Each material field is stored in SI (``bend_stiffness``, N·m: the Python API, presets, old
files) and drawn through a get/set twin in its display unit (``bend_stiffness_display``, µN·m;
``Display`` in solver/params.py, conversion in convert.py). A new cloth's material is the Cotton
preset's (``NEW_CLOTH_PRESET``).
"""

from __future__ import annotations

import dataclasses
import math
import sys

import bpy
from bpy.props import (BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty,
                       IntProperty, PointerProperty, StringProperty)

from ..solver import (CLOTH_MODELS, INTEGRATOR_NAMES, QUALITY_DOCS, QUALITY_NAMES, SOLVERS, Collider,
                      FieldSpec, SolverSettings, Wind, YarnParams, load_preset, preset_info)
from . import bake_status, units
from .convert import (COLLIDER_PROPS, MATERIAL_DISPLAYS, MATERIAL_SPECS,  # noqa: F401 (re-export)
                      OPTIONAL_FALLBACK, display_prop_name, from_display, prop_name, to_display)
from .bake_status import cloth_settings_changed, role_changed, scene_settings_changed

ROLE_ITEMS = (
    ("NONE", "None", "Not part of the cloth simulation"),
    ("CLOTH", "Cloth", "Simulated by Bake Cloth; the result is written as shape keys"),
    ("COLLIDER", "Collider", "The cloth collides with this object's evaluated mesh, every frame"),
    ("YARN", "Yarn", "A knit swatch's yarns (Add > Mesh > Knit Swatch): one polyline of loose "
                     "edges per yarn, simulated by Bake Cloth with the yarn model"),
)

# What a knit swatch was made from (Add > Mesh > Knit Swatch, knit.py). The bake rebuilds the
# swatch's stitch topology (loops, glued ends) from these, so they are shown, not edited.
KNIT_PATTERN_ITEMS = (
    ("STOCKINETTE", "Stockinette", "Knit stitches only: the face is all Vs, the edges curl"),
    ("GARTER", "Garter", "Knit and purl courses alternate: ridged, lies flat"),
    ("RIB2X2", "2×2 Rib", "Columns of knit 2, purl 2: stretchy across, for cuffs"),
    ("SEED", "Seed", "Knit and purl alternate along the course and the wale: bumpy, flat"),
    ("REPEAT", "Repeat", "Your own repeat of knit and purl stitches, such as k3p1 or "
                         "k1p1/p1k1 (/ starts the next course up; read from the face)"),
)
REPEAT_DESCRIPTION = ("Knit and purl counts repeated across each course, such as k3p1; / starts "
                      "the next course up (k1p1/p1k1 is seed); read as seen from the face")

def yarn_property(name: str) -> FloatProperty:
    """A YarnParams field as an object setting of a knit swatch and an option of Add > Knit
    Swatch: its label, default, bounds, precision and description from the field's FieldSpec
    and Display (solver/params.py), the one place they are set. Only fields shown as they are
    stored (Display scale 1, a pure number) are taken: the swatch stores them as drawn."""
    field = next(f for f in dataclasses.fields(YarnParams) if f.name == name)
    spec, display = field.metadata["spec"], field.metadata["display"]
    if display.scale != 1.0 or spec.unit:
        raise ValueError(f"YarnParams.{name} is not a pure number shown as stored")
    return FloatProperty(name=display.label, default=field.default, min=spec.minimum,
                         max=spec.maximum, soft_max=display.soft_max, precision=display.precision,
                         description=spec.doc[0].upper() + spec.doc[1:])


_KNIT = {
    "knit_pattern": EnumProperty(name="Pattern", items=KNIT_PATTERN_ITEMS, default="STOCKINETTE",
                                 description="Stitch pattern of the knit swatch"),
    "knit_repeat": StringProperty(name="Repeat", default="", description=REPEAT_DESCRIPTION),
    "knit_stitches": IntProperty(name="Stitches", default=0, min=0,
                                 description="Stitches per course (0: not a knit swatch)"),
    "knit_courses": IntProperty(name="Courses", default=0, min=0, description="Courses (rows)"),
    "knit_yarn": StringProperty(name="Yarn", default="",
                                description="Yarn preset (presets/yarns) the swatch is made of"),
    "knit_stitch_width": FloatProperty(name="Stitch Width (m)", default=0.0, min=0.0,
                                       precision=5, description="Loop spacing along the course "
                                       "[m] (gauge)"),
    "knit_course_height": FloatProperty(name="Course Height (m)", default=0.0, min=0.0,
                                        precision=5, description="Course spacing along the wale "
                                        "[m] (gauge)"),
    "knit_friction": yarn_property("friction"),
    "knit_contact_rest": yarn_property("contact_rest"),
    # off for swatches made before edges were finished: their meshes have none
    "knit_edges": BoolProperty(name="Cast On and Bind Off", default=False,
                               description="The swatch's bottom edge is a cast-on and its top "
                               "a bind-off (yarns of their own, through every edge stitch), so "
                               "neither edge can open"),
}


def _model_doc(cls) -> str:
    """First line of the model module's docstring, for the enum tooltip."""
    doc = sys.modules[cls.__module__].__doc__ or cls.__doc__ or ""
    return doc.strip().splitlines()[0] if doc.strip() else cls.__name__


# Static items (built once at import): the bpy.props docs warn that dynamic item callbacks must
# keep their strings alive. Identifiers are the model names upper-cased.
SOLVER_ITEMS = tuple((name.upper(), name.replace("_", " ").title(), _model_doc(cls))
                     for name, cls in SOLVERS.items() if name in CLOTH_MODELS)
INTEGRATOR_ITEMS = tuple((name.upper(), name.replace("_", " ").title(), "")
                         for name in INTEGRATOR_NAMES)
QUALITY_ITEMS = tuple((name.upper(), name.title(), QUALITY_DOCS[name]) for name in QUALITY_NAMES)

# A new cloth starts from this preset, strain limit included (the solver's bare MaterialParams
# defaults have no strain limit, and a new user's cloth stretched 7 % on a sphere).
NEW_CLOTH_PRESET = "cotton"
_NEW_CLOTH = load_preset(NEW_CLOTH_PRESET)
NEW_CLOTH_PRESET_NAME = preset_info(NEW_CLOTH_PRESET)["name"]
MATERIAL_DEFAULTS = {name: getattr(_NEW_CLOTH, name) for name in MATERIAL_SPECS}

# An optional field that is off (None) keeps a value: the one it falls back to (the weft
# follows the warp), or for a pure on/off limit this one (a typical lock-up strain of a woven).
OPTIONAL_START = {"max_strain": 0.05}

# What a cloth had before new cloth started from a preset (the SI defaults of that version).
# Files saved then store only the values the user changed; ``_upgrade_old_files`` writes these
# for the rest, so an old file bakes as before instead of silently becoming Cotton.
LEGACY_DEFAULTS = {
    "area_density": 0.15, "stretch_stiffness": 5000.0, "use_stretch_stiffness_weft": False,
    "stretch_stiffness_weft": 5000.0, "shear_stiffness": 50.0, "bend_stiffness": 5.0e-6,
    "stretch_damping": 0.5, "shear_damping": 0.005, "bend_damping": 1.0e-7, "air_drag": 0.1,
    "use_max_strain": False, "max_strain": 0.05, "cloth_thickness": 0.002,
    "cloth_friction": 0.3, "pin_stiffness": 1.0e4, "preset": "", "preset_ident": "",
}
# 1: new cloth starts from NEW_CLOTH_PRESET. Stamped when the role is set; a file whose cloth
# has a role but no stamp was saved before.
MATERIAL_VERSION = 1

_upgrading = False  # no "bake outdated" marks while an old file's values are written


def label(name: str, spec: FieldSpec) -> str:
    """Property name with the unit shown, e.g. "Bend Stiffness (µN·m)"."""
    text = name.replace("_", " ").title()
    unit = MATERIAL_DISPLAYS[name].unit if name in MATERIAL_DISPLAYS else spec.unit
    return f"{text} ({unit})" if unit and unit != "1" else text


def _material_changed(settings, context):
    if not _upgrading:
        cloth_settings_changed(settings, context)


def _weft_toggled(settings, context):
    """Switched on, the weft starts from the warp it followed (no hidden value jumps in)."""
    if not _upgrading and settings.use_stretch_stiffness_weft:
        settings.stretch_stiffness_weft = settings.stretch_stiffness
    _material_changed(settings, context)


def _is_mesh(_settings, obj) -> bool:
    return obj.type == "MESH"


def _role_changed(settings, context):
    settings.material_version = MATERIAL_VERSION
    role_changed(settings, context)


def _si_property(name: str, spec: FieldSpec, default):
    """The stored SI value (the Python API and the bake read it), bounds from ``spec``."""
    unit = f" [{spec.unit}]" if spec.unit else ""
    common = dict(name=f"{name.replace('_', ' ').title()} ({spec.unit})" if spec.unit not in
                  ("", "1") else name.replace("_", " ").title(),
                  description=f"{spec.doc}{unit}", update=_material_changed)
    if spec.integer:
        return IntProperty(default=int(default), min=int(spec.minimum),
                           max=int(min(spec.maximum, 2**31 - 1)), **common)
    return FloatProperty(default=float(default), min=spec.minimum, max=spec.maximum,
                         precision=6, step=1, **common)


def _display_property(name: str, spec: FieldSpec, default):
    """What the panel draws: the SI property seen in its display unit (``Display`` in
    solver/params.py) through get/set, so nothing but the SI value is stored."""
    d = MATERIAL_DISPLAYS[name]
    si = prop_name(name)
    use = f"use_{si}"
    fallback = prop_name(OPTIONAL_FALLBACK[name]) if name in OPTIONAL_FALLBACK else None

    def get(self):
        source = fallback if fallback and not getattr(self, use) else si
        return to_display(name, getattr(self, source))

    def set(self, value):
        value = from_display(name, value)
        if fallback and not getattr(self, use):
            if math.isclose(value, getattr(self, fallback), rel_tol=1e-6):
                return
            setattr(self, use, True)  # typing a weft of its own switches the override on
        setattr(self, si, value)

    lo, hi = spec.minimum * d.scale, spec.maximum * d.scale
    soft_max = min(hi, d.soft_max) if d.soft_max is not None else hi
    unit = f" [{d.unit}]" if d.unit else ""
    follows = (f". Off ('Different {d.label}'): follows "
               f"{MATERIAL_DISPLAYS[OPTIONAL_FALLBACK[name]].label}" if fallback else "")
    return FloatProperty(
        name=label(name, spec), description=f"{spec.doc[0].upper()}{spec.doc[1:]}{unit}{follows}"
        f" (stored in SI: {si}, {spec.unit})", default=float(default) * d.scale,
        min=lo, max=hi, soft_min=lo, soft_max=soft_max, precision=d.precision,
        step=min(100, 10 ** (3 - d.precision)),
        subtype="PERCENTAGE" if d.unit == "%" else "NONE", get=get, set=set)


def _material_annotations() -> dict:
    out = {}
    for name, spec in MATERIAL_SPECS.items():
        default = MATERIAL_DEFAULTS[name]
        if spec.optional:
            start = default if default is not None else (
                MATERIAL_DEFAULTS[OPTIONAL_FALLBACK[name]] if name in OPTIONAL_FALLBACK
                else OPTIONAL_START[name])
            title = name.replace("_", " ").title()
            toggle = (f"Different {MATERIAL_DISPLAYS[name].label}" if name in OPTIONAL_FALLBACK
                      else f"Use {title}")
            out[f"use_{prop_name(name)}"] = BoolProperty(
                name=toggle, default=default is not None, description=f"Enable: {spec.doc}",
                update=_weft_toggled if name in OPTIONAL_FALLBACK else _material_changed)
            out[prop_name(name)] = _si_property(name, spec, start)
            out[display_prop_name(name)] = _display_property(name, spec, start)
        else:
            out[prop_name(name)] = _si_property(name, spec, default)
            out[display_prop_name(name)] = _display_property(name, spec, default)
    return out


def _collider_default(name: str):
    return next(f.default for f in dataclasses.fields(Collider) if f.name == name)


def _wind_default(name: str):
    f = next(f for f in dataclasses.fields(Wind) if f.name == name)
    return f.default_factory() if f.default is dataclasses.MISSING else f.default


def _solver_spec(name: str) -> FieldSpec:
    # field_specs() covers only numeric fields; SolverSettings also has choices and switches.
    return next(f.metadata["spec"] for f in dataclasses.fields(SolverSettings) if f.name == name)


def _collider_thickness_mm() -> FloatProperty:
    """The collider's Thickness as the panel shows it: in mm, as the cloth's thickness, the
    stored value (``thickness``, in scene units as Blender's Collision Thickness Outer) seen
    through the scene's unit scale, so nothing new is stored and old files keep their value."""

    def metres_per_unit() -> float:
        scene = getattr(bpy.context, "scene", None)
        return units.metres_per_unit(scene) if scene is not None else 1.0

    def get(self):
        return 1e3 * self.thickness * metres_per_unit()

    def set(self, value):
        self.thickness = value / (1e3 * metres_per_unit())

    return FloatProperty(
        name="Thickness (mm)", default=1e3 * _collider_default("thickness"), min=0.0,
        soft_max=50.0, precision=2, step=10, get=get, set=set,
        description="Collision margin around the collider's surface [mm] (stored in the "
                    "scene's units: thickness)")


THREADS_MODE_ITEMS = (
    ("AUTO", "Auto-Detect", "As many threads as the cores that other programs leave free, "
                            "judged at every frame"),
    ("FIXED", "Fixed", "At most the number of threads set below (and fewer while other "
                       "programs keep cores busy)"),
)


_SOLVER_DEFAULTS = {f.name: f.default for f in dataclasses.fields(SolverSettings)}
_SUBSTEPS = _solver_spec("substeps")
_NEWTON = _solver_spec("newton_iterations")


class ClothSolverObjectSettings(bpy.types.PropertyGroup):
    """Per-object settings: role, cloth material and solver, collider, and the bake record."""

    __annotations__ = {
        "role": EnumProperty(name="Role", items=ROLE_ITEMS, default="NONE",
                             description="How Bake Cloth uses this object",
                             update=_role_changed),
        "material_version": IntProperty(
            default=0, options={"HIDDEN"},
            description="Which defaults this object's material has (0: saved before new cloth "
                        "started from a preset)"),
        # ---- cloth ----
        "solver": EnumProperty(name="Solver", items=SOLVER_ITEMS,
                               default=_SOLVER_DEFAULTS["model"].upper(),
                               description="Cloth model used to simulate this object",
                               update=cloth_settings_changed),
        "quality": EnumProperty(
            name="Quality", items=QUALITY_ITEMS, default=_SOLVER_DEFAULTS["quality"].upper(),
            description="Final: full accuracy. Preview: faster, with the same strain limit and "
                        "collisions. Implicit model only (no effect on Mass-Spring)",
            update=cloth_settings_changed),
        "preset": StringProperty(
            name="Preset", default=NEW_CLOTH_PRESET_NAME,
            description="Material preset last applied (its display name); the panel adds "
                        "'(edited)' while the material differs from it"),
        "preset_ident": StringProperty(
            default=NEW_CLOTH_PRESET, options={"HIDDEN"},
            description="File stem of the preset last applied ('' = look it up by name)"),
        "preset_user": BoolProperty(default=False, options={"HIDDEN"},
                                    description="The preset last applied is the user's own"),
        **_material_annotations(),
        "pin_group": StringProperty(
            name="Pin Group", default="",
            description="Vertex group of pinned vertices; weight 1 holds a vertex exactly on the "
                        "object's evaluated (animated) mesh, lower weights pull it with a goal "
                        "spring, weight 0 leaves it free", update=cloth_settings_changed),
        "use_custom_substeps": BoolProperty(
            name="Custom Substeps", default=_SOLVER_DEFAULTS["substeps"] is not None,
            description="Set the steps per frame by hand (off: the model's default: the "
                        "implicit model's quality sets them, the explicit model finds its "
                        "stable step automatically)",
            update=cloth_settings_changed),
        "substeps": IntProperty(
            name="Substeps", default=_SOLVER_DEFAULTS["substeps"] or 2,
            min=int(_SUBSTEPS.minimum), max=int(min(_SUBSTEPS.maximum, 2**31 - 1)),
            description=_SUBSTEPS.doc, update=cloth_settings_changed),
        "use_custom_newton_iterations": BoolProperty(
            name="Custom Newton Iterations",
            default=_SOLVER_DEFAULTS["newton_iterations"] is not None,
            description="Set the most Newton iterations per step by hand (off: the quality's)",
            update=cloth_settings_changed),
        "newton_iterations": IntProperty(
            name="Newton Iterations", default=_SOLVER_DEFAULTS["newton_iterations"] or 2,
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
        "use_sewing": BoolProperty(
            name="Sewing", default=False, update=cloth_settings_changed,
            description="The mesh's loose edges (edges without faces) are seams, as Blender's "
                        "sewing springs: each pulls the two vertices it joins together with "
                        "the Seam Force until they meet, then holds them. Off: loose edges are "
                        "ignored"),
        "sew_to": PointerProperty(
            name="Sew To", type=bpy.types.Object, update=cloth_settings_changed,
            poll=_is_mesh,
            description="Another cloth of the same bake this one is sewn to (a sleeve to a "
                        "bodice): the Seam Group's line of vertices here is sewn, vertex by "
                        "vertex, to the line of the group of the same name there"),
        "seam_group": StringProperty(
            name="Seam Group", default="", update=cloth_settings_changed,
            description="Vertex group of the seam line (a line or loop of edges), with the "
                        "same name and vertex count on the Sew To object"),
        **_KNIT,  # ---- yarn (knit swatch) ----
        # ---- collider ----
        "thickness": FloatProperty(
            name="Thickness", default=_collider_default("thickness"), min=0.0, max=1.0,
            precision=4, step=0.1, unit="LENGTH", update=cloth_settings_changed,
            description="Collision margin around the collider's surface (a length in the "
                        "scene's units, like every Blender length)"),
        "thickness_display": _collider_thickness_mm(),
        "friction": FloatProperty(
            name="Friction", default=_collider_default("friction"), min=0.0, max=10.0,
            update=cloth_settings_changed,
            description="Coulomb friction coefficient between cloth and this collider"),
        "use_collision_modifier": BoolProperty(
            name="Cloth Collides with This Object", default=True, update=role_changed,
            description="Bake Cloth's cloth collides with this object through its Collision "
                        "modifier (Physics > Collision, enabled; the role None), with the "
                        "modifier's Thickness Outer and Friction. Off: Bake Cloth ignores this "
                        "object (Blender's own cloth still collides with it)"),
        # ---- bake record (written by Bake Cloth, read by Free Bake and the UI) ----
        "is_baked": BoolProperty(name="Baked", default=False),
        "bake_frame_start": IntProperty(name="Baked From", default=0),
        "bake_frame_end": IntProperty(name="Baked To", default=0),
        "bake_stopped_of": IntProperty(
            name="Stopped Of", default=0,
            description="A bake stopped before its end: the end frame of the range it was "
                        "asked for (0 = not stopped)"),
        "bake_created_basis": BoolProperty(default=False),
        "bake_created_action": StringProperty(default=""),
        "bake_muted_modifiers": StringProperty(default=""),
        "bake_model": StringProperty(name="Model", default=""),
        "bake_time": FloatProperty(
            name="Bake Time (s)", default=0.0,
            description="Wall time of the bake's simulation of this object, writing the keys "
                        "included (for a bake of one simulation, the summary's time)"),
        "bake_max_strain": FloatProperty(name="Max Strain", default=0.0, subtype="FACTOR"),
        "bake_deepest_penetration": FloatProperty(
            name="Deepest Penetration (m)", default=0.0, unit="LENGTH",
            description="Deepest cloth vertex inside a collider over the bake"),
        "bake_outdated": StringProperty(
            name="Outdated", default="",
            description="Why the bake no longer matches its inputs ('' = up to date)"),
        "bake_fingerprint": StringProperty(
            default="", description="Hash of the cloth's mesh, shape keys and modifiers at bake"),
        "bake_cache_file": StringProperty(
            default="",
            description="The point cache of a bake to disk (Bake To: Disk Cache)"),
        "bake_cache_modifier": StringProperty(
            default="", description="The Mesh Cache modifier that reads it"),
        "bake_intersections": IntProperty(
            name="Intersections", default=0,
            description="Most intersecting triangle pairs in one frame of the bake: "
                        "cloth/collider, and cloth/cloth where Self Collision is on (off, the "
                        "cloth may pass through itself)"),
    }


def _play():
    from . import play  # (imports bake, which imports this module's neighbours)
    return play


class ClothSolverSceneSettings(bpy.types.PropertyGroup):
    """Per-scene bake settings: frame range and wind."""

    __annotations__ = {
        "frame_start": IntProperty(name="Start", default=1, min=0, max=99999,
                                   description="First frame of the bake (the initial state)"),
        "frame_end": IntProperty(name="End", default=250, min=1, max=99999,
                                 description="Last frame of the bake"),
        "wind_velocity": FloatVectorProperty(
            name="Wind", size=3, default=tuple(_wind_default("velocity")),
            subtype="VELOCITY", unit="VELOCITY", update=scene_settings_changed,
            description="Steady wind velocity in world space, felt through air drag (a velocity "
                        "in the scene's units, like every Blender velocity)"),
        "wind_turbulence": FloatProperty(
            name="Turbulence", default=_wind_default("turbulence"), min=0.0, max=1000.0,
            update=scene_settings_changed,
            description="R.m.s. speed of smooth pseudo-random gusts [m/s]; 0 = steady"),
        "wind_scale": FloatProperty(
            name="Gust Size", default=_wind_default("turbulence_scale"), min=1e-4,
            max=1e4, unit="LENGTH", update=scene_settings_changed,
            description="Spatial size of the gusts (a length in the scene's units)"),
        "wind_frequency": FloatProperty(
            name="Gust Frequency", default=_wind_default("turbulence_frequency"), min=0.0,
            max=1e3, update=scene_settings_changed, description="How fast the gusts change [Hz]"),
        "wind_seed": IntProperty(name="Seed", default=_wind_default("seed"), min=0,
                                 update=scene_settings_changed,
                                 description="Seed of the gust field (bakes are reproducible)"),
        "use_force_fields": BoolProperty(
            name="Force Fields", default=True, update=scene_settings_changed,
            description="Wind and Turbulence force fields in the scene add to this wind "
                        "(docs/user-guide.md, \"Force fields → wind\")"),
        "field_speed": FloatProperty(
            name="Speed per Strength", default=0.01, min=0.0, max=1e3, precision=4,
            update=scene_settings_changed,
            description="Air speed [m/s] that one unit of a force field's Strength stands for "
                        "(Blender's strength has no physical unit; 1000 = 10 m/s by default)"),
        "use_collision_modifiers": BoolProperty(
            name="Cloth Collides with All (Scene)", default=True, update=scene_settings_changed,
            description="A switch for the whole scene: Bake Cloth's cloth collides with every "
                        "object of the role None that has an enabled Collision modifier (unless "
                        "its own With This Object is off). Off: Bake Cloth ignores every "
                        "Collision modifier of this scene; objects with the role Collider still "
                        "collide"),
        "bake_to": EnumProperty(
            name="Bake To", default="SHAPE_KEYS",
            items=[("SHAPE_KEYS", "Shape Keys", "One shape key per frame, stored in the .blend"),
                   ("PC2", "Disk Cache (PC2)",
                    "A PC2 point cache per cloth in the Cache Directory, read by a Mesh Cache "
                    "modifier: the .blend stays small")],
            description="Where Bake Cloth writes the simulated frames"),
        "simulate_on_play": BoolProperty(
            name="Simulate on Play", default=False,
            update=lambda settings, context: _play().setting_changed(settings, context),
            description="Playing the timeline forward simulates the cloth and shows each "
                        "frame, keeping the frames in memory (as Blender's own cloth); Bake "
                        "Cloth then writes them and simulates the rest"),
        "cache_directory": StringProperty(
            name="Cache Directory", default="//cloth_cache/", subtype="DIR_PATH",
            description="Folder of the disk caches (// = the .blend file's folder)"),
        "last_report": StringProperty(name="Last Bake", default="",
                                      description="Summary of the last bake"),
        "last_bake": StringProperty(
            default="", options={"HIDDEN"},
            description="The last bake's figures and report items, as JSON (the panel's "
                        "short summary and its Report sub-panel)"),
        # ---- performance (as Blender's Render > Performance > Threads) ----
        "threads_mode": EnumProperty(
            name="Threads Mode", items=THREADS_MODE_ITEMS, default="AUTO",
            description="How many threads Bake Cloth simulates with"),
        "threads": IntProperty(
            name="Threads", default=1, min=1, max=1024,
            description="The most threads Bake Cloth uses, for every model (Threads Mode "
                        "Fixed)"),
    }


classes = (ClothSolverObjectSettings, ClothSolverSceneSettings)


def upgrade_old_material(settings) -> bool:
    """Give a cloth saved before new cloth started from a preset the defaults it had then, for
    every value it does not store (Blender stores only the values that were set). True if it
    was such a cloth. Only the values change: the bake record and its outdated mark stay."""
    global _upgrading
    if settings.is_property_set("material_version") or not settings.is_property_set("role"):
        return False
    _upgrading = True
    try:
        for name, value in LEGACY_DEFAULTS.items():
            if not settings.is_property_set(name):
                setattr(settings, name, value)
        settings.material_version = MATERIAL_VERSION
    finally:
        _upgrading = False
    return True


def upgrade_old_newton_iterations(settings) -> bool:
    """A Newton Iterations value set by hand in a file saved before the quality chose the
    count (no Custom Newton Iterations toggle then) stays in use: switch the toggle on. True if
    it did. Written as an ID property, so no update runs: the bake it made is still current."""
    if (settings.is_property_set("use_custom_newton_iterations")
            or not settings.is_property_set("newton_iterations")):
        return False
    settings["use_custom_newton_iterations"] = True
    return True


@bpy.app.handlers.persistent
def _upgrade_old_files(*_args):
    for obj in bpy.data.objects:
        if obj.library is None and obj.type == "MESH":
            upgrade_old_material(obj.cloth_solver)
            upgrade_old_newton_iterations(obj.cloth_solver)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    bpy.types.Object.cloth_solver = PointerProperty(type=ClothSolverObjectSettings)
    bpy.types.Scene.cloth_solver = PointerProperty(type=ClothSolverSceneSettings)
    bake_status.register()  # the handler that keeps the bake record's outdated mark
    bpy.app.handlers.load_post.append(_upgrade_old_files)


def unregister():
    while _upgrade_old_files in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.remove(_upgrade_old_files)
    bake_status.unregister()
    del bpy.types.Scene.cloth_solver
    del bpy.types.Object.cloth_solver
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
