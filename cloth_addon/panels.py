"""Physics-tab panels, laid out like Blender's own cloth panels (a mixin, sub-panels with
``bl_parent_id``, property split, the preset menu in the header)."""

from __future__ import annotations

import json
import re

import bpy

from ..solver import QUALITIES
from . import bake_status, blender_physics, presets, units
from .bake_status import BAKED_ROLES
from .formats import count, frame_range, millimetres, per_frame, strain
from .knit import YARN_ITEMS
from .properties import (KNIT_PATTERN_ITEMS, MATERIAL_DISPLAYS, MATERIAL_SPECS, OPTIONAL_FALLBACK,
                         display_prop_name, prop_name)

STIFFNESS = ("stretch_stiffness", "stretch_stiffness_weft", "shear_stiffness", "bend_stiffness")
DAMPING = ("stretch_damping", "shear_damping", "bend_damping", "air_drag")
# Drawn in their own panels; any other material field (added to MaterialParams later) appears
# at the end of Material.
ELSEWHERE = {"area_density", "max_strain", "thickness", "friction", "pin_stiffness",
             "seam_force", *STIFFNESS, *DAMPING}


class ClothSolverPanel:
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"
    role = None  # None: any mesh; otherwise the roles the panel shows for

    @classmethod
    def poll(cls, context):
        ob = context.object
        if ob is None or ob.type != "MESH":
            return False
        return cls.role is None or ob.cloth_solver.role in cls.role


def _value(layout, settings, field, heading, toggle=None):
    """One material row (_unit_row): its display twin, in its display unit."""
    _unit_row(layout, settings, display_prop_name(field), heading,
              MATERIAL_DISPLAYS[field].unit, toggle)


def _unit_row(layout, settings, name, heading, unit, toggle=None):
    """One row: ``heading`` in the label column, [``toggle``] the value of ``name``, then its
    unit, like a value Blender shows with its unit ("400 mN·s/m"); the label stays short enough
    for the 320 px editor. No keyframe dot: the bake reads these values once, so an animated
    value would not animate the cloth."""
    split = layout.split(factor=LABEL_FACTOR)
    left = split.row()
    left.alignment = "RIGHT"
    left.label(text=heading)
    row = split.row()
    row.use_property_split = False
    if toggle is not None:
        row.prop(settings, toggle, text="")
        row = row.row()
        row.active = getattr(settings, toggle)
    row.prop(settings, name, text="")
    sub = row.row()
    sub.ui_units_x = UNIT_WIDTH
    sub.label(text="" if unit == "%" else unit)  # a percentage shows its "%" in the field


LABEL_FACTOR = 0.4  # Blender's property split (UI_ITEM_PROP_SEP_DIVIDE): labels line up
UNIT_WIDTH = 3.2  # ui units (20 px at scale 1): the widest units, "nN·m·s" and "kg/m²/s", fit


def _field(layout, settings, field):
    """Draw one material field in its display unit (``Display`` in solver/params.py) with a
    short label that fits the Properties editor; an optional field gets its switch."""
    name, label = prop_name(field), MATERIAL_DISPLAYS[field].label
    if field in OPTIONAL_FALLBACK:
        # A clear toggle; off, the field shows (and the bake uses) the value it falls back to.
        col = layout.column()
        col.use_property_decorate = False
        col.prop(settings, f"use_{name}")
        sub = col.column()
        sub.active = getattr(settings, f"use_{name}")
        _value(sub, settings, field, label)
    elif MATERIAL_SPECS[field].optional:
        _value(layout, settings, field, label, toggle=f"use_{name}")
    else:
        _value(layout, settings, field, label)


class CLOTH_SOLVER_MT_presets(bpy.types.Menu):
    bl_label = "Cloth Presets"

    def draw(self, context):
        layout = self.layout
        for ident, name in presets.available(user=False):
            op = layout.operator("cloth_solver.preset_apply", text=name)
            op.name, op.user = ident, False
        mine = presets.available(user=True)
        if mine:
            layout.separator()
            for ident, name in mine:
                op = layout.operator("cloth_solver.preset_apply", text=name, icon="USER")
                op.name, op.user = ident, True
        layout.separator()
        layout.operator("cloth_solver.preset_save", text="Save Preset...", icon="ADD")
        if mine:
            layout.menu("CLOTH_SOLVER_MT_presets_remove", icon="REMOVE")


class CLOTH_SOLVER_MT_presets_remove(bpy.types.Menu):
    bl_label = "Remove Preset"

    def draw(self, context):
        for ident, name in presets.available(user=True):
            self.layout.operator("cloth_solver.preset_remove", text=name).name = ident


class PHYSICS_PT_cloth_solver(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Cloth Solver"

    def draw_header_preset(self, context):
        s = context.object.cloth_solver
        if s.role == "CLOTH":
            self.layout.menu("CLOTH_SOLVER_MT_presets",
                             text=presets.shown_name(s) or "Presets", icon="PRESET")

    def draw(self, context):
        layout = self.layout
        s = context.object.cloth_solver
        layout.row().prop(s, "role", expand=True)
        _draw_take_cloth_modifier(layout, context)
        layout.use_property_split = True
        if s.role == "CLOTH":
            layout.prop(s, "solver")
            row = layout.row()
            row.active = s.solver == "IMPLICIT"  # the qualities bundle implicit settings only
            row.prop(s, "quality")
            if s.solver != "IMPLICIT":
                layout.label(text="Quality: implicit model only", icon="INFO")
        elif s.role == "YARN":
            _draw_yarn(layout, context.object)
        elif s.role == "COLLIDER":
            col = layout.column()
            col.use_property_decorate = False  # read once per bake (_unit_row)
            # in mm as the cloth's Thickness (Collisions), whatever the scene's length unit
            _unit_row(col, s, "thickness_display", "Thickness", "mm")
            _unit_row(col, s, "friction", "Friction", "")
            if blender_physics.collision_modifier(context.object) is not None:
                layout.label(text="These replace the Collision", icon="INFO")
                layout.label(text="modifier's Thickness Outer, Friction", icon="BLANK1")
        elif blender_physics.collision_modifier(context.object) is not None:
            _draw_collision_modifier(layout, context)
        else:
            wrapped_label(layout, context, "Choose Cloth or Collider to take part in Bake Cloth")


def _draw_collision_modifier(layout, context):
    """An object of the role None with Blender's Collision modifier: the cloth collides with
    it (blender_physics.uses_collision_modifier) unless its switch or the scene's is off; the
    line below says which it is."""
    ob, scene = context.object, context.scene
    col = layout.column(heading="Cloth Collides")
    row = col.row()
    row.active = scene.cloth_solver.use_collision_modifiers  # the scene's switch comes first
    row.prop(ob.cloth_solver, "use_collision_modifier", text="With This Object")
    col.prop(scene.cloth_solver, "use_collision_modifiers", text="With All (Scene)")
    if blender_physics.uses_collision_modifier(ob, scene):
        thickness, mu = blender_physics.collision_settings(ob, units.metres_per_unit(scene))
        # Two short lines: the Properties editor is about 320 px wide.
        layout.label(text="Collider from its Collision modifier:", icon="MOD_PHYSICS")
        layout.label(text=f"thickness {millimetres(thickness)}, friction {mu:.2f}", icon="BLANK1")
    elif not scene.cloth_solver.use_collision_modifiers:
        wrapped_label(layout, context, "Bake Cloth ignores the Collision modifiers of this "
                      "scene", icon="INFO")
    else:
        wrapped_label(layout, context, "Bake Cloth ignores this object", icon="INFO")


def _draw_take_cloth_modifier(layout, context):
    """The one click that switches a shot made for Blender's own cloth: on an object with a
    Cloth modifier whose settings differ from ours (blender_physics.take_cloth_modifier)."""
    ob = context.object
    mod = blender_physics.cloth_modifier(ob)
    if mod is None or ob.cloth_solver.role == "YARN":
        return
    if not blender_physics.take_cloth_modifier(ob, mod, context.scene, apply=False):
        return
    row = layout.row(align=True)
    row.operator("cloth_solver.take_cloth_modifier", icon="MOD_CLOTH")
    others = sum(1 for o in context.scene.objects if o is not ob and o.type == "MESH"
                 and blender_physics.cloth_modifier(o) is not None)
    if others:
        row.operator("cloth_solver.take_cloth_modifier", text=f"All ({others + 1})"
                     ).all_objects = True


def _draw_yarn(layout, ob):
    """A knit swatch (knit.py): what it was made from (fixed: the bake rebuilds its stitches
    from it), its pins, and what the yarn model does not do yet."""
    s = ob.cloth_solver
    if s.knit_stitches < 1:
        layout.label(text="Not a knit swatch: use Add > Mesh > Knit Swatch", icon="ERROR")
        return
    pattern = next(name for ident, name, _ in KNIT_PATTERN_ITEMS if ident == s.knit_pattern)
    if s.knit_pattern == "REPEAT":
        pattern = f"Repeat {s.knit_repeat}"
    col = layout.column(align=True)
    col.label(text=f"{pattern}, {s.knit_stitches} × {s.knit_courses} stitches", icon="MOD_CLOTH")
    yarn = dict((ident, name) for ident, name, _ in YARN_ITEMS).get(s.knit_yarn, s.knit_yarn)
    col.label(text=f"{yarn}, stitch {1e3 * s.knit_stitch_width:.2f} × "
                   f"{1e3 * s.knit_course_height:.2f} mm", icon="BLANK1")
    if s.knit_edges:
        col.label(text="Cast on and bound off", icon="BLANK1")
    layout.prop_search(s, "pin_group", ob, "vertex_groups", text="Pin Group")
    layout.prop(s, "knit_friction")
    layout.prop(s, "knit_contact_rest")
    col = layout.column(align=True)
    col.label(text="Pin weight 1 holds a point, less pulls it", icon="INFO")
    col.label(text="Collides with every collider, as cloth does", icon="INFO")


class PHYSICS_PT_cloth_solver_material(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Material"
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    role = {"CLOTH"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.object.cloth_solver
        _field(layout, s, "area_density")
        _field(layout, s, "max_strain")
        for name in MATERIAL_SPECS:  # fields added to MaterialParams later appear here
            if name not in ELSEWHERE:
                _field(layout, s, name)


class MaterialFieldsPanel(ClothSolverPanel):
    """A subpanel of Material drawing the material fields ``fields`` (_field)."""

    bl_parent_id = "PHYSICS_PT_cloth_solver_material"
    role = {"CLOTH"}
    fields = ()  # names of MaterialParams fields

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.object.cloth_solver
        for name in self.fields:
            _field(layout, s, name)


class PHYSICS_PT_cloth_solver_stiffness(MaterialFieldsPanel, bpy.types.Panel):
    bl_label = "Stiffness"
    fields = STIFFNESS


class PHYSICS_PT_cloth_solver_damping(MaterialFieldsPanel, bpy.types.Panel):
    bl_label = "Damping"
    fields = DAMPING


class PHYSICS_PT_cloth_solver_pinning(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Pinning"
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    role = {"CLOTH"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        ob = context.object
        layout.prop_search(ob.cloth_solver, "pin_group", ob, "vertex_groups", text="Pin Group")
        _field(layout, ob.cloth_solver, "pin_stiffness")


class PHYSICS_PT_cloth_solver_sewing(ClothSolverPanel, bpy.types.Panel):
    """Seams from the mesh's loose edges, with a checkbox in the header like Blender's own
    Sewing (Cloth > Shape)."""

    bl_label = "Sewing"
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    bl_options = {"DEFAULT_CLOSED"}
    role = {"CLOTH"}

    def draw_header(self, context):
        self.layout.prop(context.object.cloth_solver, "use_sewing", text="")

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.object.cloth_solver
        layout.active = s.use_sewing
        _field(layout, s, "seam_force")
        layout.label(text="Seams: the mesh's loose edges", icon="INFO")  # a hint, as the others
        layout.prop(s, "sew_to")
        row = layout.row()
        row.active = s.sew_to is not None
        row.prop_search(s, "seam_group", context.object, "vertex_groups", text="Seam Group")


class PHYSICS_PT_cloth_solver_collisions(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Collisions"
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    role = {"CLOTH"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.object.cloth_solver
        layout.prop(s, "self_collision")
        _field(layout, s, "friction")
        _field(layout, s, "thickness")


class PHYSICS_PT_cloth_solver_quality(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Steps"  # the Quality menu (Final / Preview) is in the main panel
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    bl_options = {"DEFAULT_CLOSED"}
    role = {"CLOTH"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.object.cloth_solver
        if s.solver == "IMPLICIT":
            quality = QUALITIES[s.quality.lower()]
            name = s.quality.title()  # the menu's name (properties.QUALITY_ITEMS)
            _count(layout, s, "substeps", "Substeps", f"{quality['substeps']} ({name})")
            # "Newton Iterations" is cut in Blender's default 320 px editor; the tooltip names it
            _count(layout, s, "newton_iterations", "Iterations",
                   f"{quality['newton_iterations']} ({name})")
        elif s.solver == "MASS_SPRING":
            _count(layout, s, "substeps", "Substeps", "Automatic")  # its stable step
            layout.prop(s, "integrator")


def _count(layout, settings, name, heading, derived):
    """A count set by hand (its Custom toggle on: the stored value, editable) or left to the
    model (off: ``derived``, the count the bake uses, greyed, as a label, the way Blender's own
    panels show a value they derive, e.g. a strip's End in the sequencer; the stored value
    would mislead, the bake ignores it)."""
    row = layout.row(heading=heading)
    row.prop(settings, f"use_custom_{name}", text="")
    sub = row.row()
    if getattr(settings, f"use_custom_{name}"):
        sub.prop(settings, name, text="")
    else:
        sub.active = False
        sub.label(text=derived)


class PHYSICS_PT_cloth_solver_wind(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Wind (Scene)"
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    bl_options = {"DEFAULT_CLOSED"}
    role = {"CLOTH"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False  # read once per bake (_unit_row)
        s = context.scene.cloth_solver
        layout.prop(s, "wind_velocity")
        col = layout.column()
        # one field width, the unit after the value; m/s and Hz whatever the scene's units,
        # Gust Size in the scene's (Blender shows them in the field)
        _unit_row(col, s, "wind_turbulence", "Turbulence", "m/s")
        sub = col.column()
        sub.active = s.wind_turbulence > 0.0
        _unit_row(sub, s, "wind_scale", "Gust Size", "")
        _unit_row(sub, s, "wind_frequency", "Gust Frequency", "Hz")
        _unit_row(sub, s, "wind_seed", "Seed", "")
        col = layout.column(heading="Force Fields")
        col.prop(s, "use_force_fields", text="Add to Wind")
        sub = col.column()
        sub.active = s.use_force_fields
        _unit_row(sub, s, "field_speed", "Per Strength", "m/s")


class PHYSICS_PT_cloth_solver_bake(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Bake"
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    role = {"CLOTH", "COLLIDER", "YARN"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        scene = context.scene.cloth_solver
        col = layout.column(align=True)
        col.prop(scene, "frame_start", text="Frame Start")
        col.prop(scene, "frame_end", text="End")
        layout.prop(scene, "bake_to")
        if scene.bake_to == "PC2":
            layout.prop(scene, "cache_directory", text="Directory")
        layout.prop(scene, "simulate_on_play")
        from . import bake, play, warmup
        jobs = bake.active_jobs()
        row = layout.row(align=True)
        row.use_property_split = False
        if jobs:  # a bake runs: its progress, Stop (keep the frames so far) and Cancel
            row.operator("cloth_solver.bake_stop", icon="PAUSE")
            row.operator("cloth_solver.bake_cancel", icon="CANCEL")
            layout.label(text=f"Baking {jobs[0].progress_text()}", icon="TIME")
        else:
            row.operator("cloth_solver.bake", icon="PHYSICS")
            row.operator("cloth_solver.free_bake", icon="TRASH")
        played = play.status_text(context.scene)
        if played:
            wrapped_label(layout, context, played, icon="PLAY")
        compiling = warmup.status_line()
        if compiling:
            wrapped_label(layout, context, compiling, icon="TIME")
        s = context.object.cloth_solver
        state, text = bake_status.status(context.object, context.scene)
        if s.role in BAKED_ROLES and state == "NOT_BAKED" and not jobs:  # "Baking" says it
            wrapped_label(layout, context, text, icon="INFO")
        if s.role in BAKED_ROLES and s.is_baked:
            box = layout.box()
            box.use_property_split = False
            if state == "OUTDATED":  # as Blender's point cache: the bake no longer matches
                col = box.column(align=True)
                col.alert = True
                wrapped_label(col, context, f"{text}. Bake again to update", icon="ERROR",
                              inset=BOX_INSET)
                box.label(text=f"Baked frames {frame_range(s.bake_frame_start, s.bake_frame_end)}"
                               f" ({s.bake_model})")
            else:
                wrapped_label(box, context, text, icon="CHECKMARK", inset=BOX_INSET)
            last = last_bake(context.scene)
            warnings = last.get("warnings", 0) if context.object.name in last.get(
                "objects", ()) else 0
            _draw_result(box, context, s.bake_time, s.bake_frame_end - s.bake_frame_start,
                         s.bake_max_strain, s.bake_deepest_penetration, s.bake_intersections,
                         warnings)
        elif scene.last_report:
            # the scene's last bake, which may not have included this object: say whose it is
            last = last_bake(context.scene)
            if not last:  # a file saved before the short summary: the whole report
                wrapped_label(layout, context, f"Last bake: {scene.last_report}")
                return
            names = last["objects"]
            who = names[0] if len(names) == 1 else f"{names[0]} and {len(names) - 1} more"
            frames = frame_range(last["frame_start"], last["frame_end"])
            if last["stopped_of"] is not None:
                frames += f" of {frame_range(last['frame_start'], last['stopped_of'])}"
            col = layout.column(align=True)
            wrapped_label(col, context, f"Last bake: {who}, frames {frames}")
            _draw_result(col, context, last["wall_time_s"],
                         last["frame_end"] - last["frame_start"], last["max_strain"],
                         last["deepest_penetration_m"], last["intersections"], last["warnings"])


def last_bake(scene) -> dict:
    """The scene's last bake as BakeSummary.record() wrote it ({} if there is none, or the file
    was saved before it was kept)."""
    try:
        out = json.loads(scene.cloth_solver.last_bake or "{}")
    except ValueError:
        return {}
    return out if isinstance(out, dict) and "details" in out else {}


def _draw_result(layout, context, seconds, frames, max_strain, penetration, intersections,
                 warnings):
    """A bake's result in two short lines, as an artist reads it: speed and the worst strain,
    then what went wrong (penetrations, intersections, the report's warnings) or that nothing
    did; every figure in the form the report writes it (formats.py), the report itself in the
    Report sub-panel."""
    layout.label(text=f"{per_frame(seconds, frames)}, max strain {strain(max_strain)}")
    problems = []
    if penetration > 0.0:
        problems.append(f"penetration {millimetres(penetration)}")
    if intersections:
        problems.append(count(intersections, "intersecting pair"))
    if warnings:
        problems.append(f"{count(warnings, 'warning')} (Report)")
    if not problems:
        layout.label(text="No penetrations or intersections")
        return
    col = layout.column(align=True)
    col.alert = bool(intersections or warnings)  # a penetration alone may be within thickness
    wrapped_label(col, context, _sentence(", ".join(problems)),
                  icon="ERROR" if col.alert else "NONE", inset=BOX_INSET)


class PHYSICS_PT_cloth_solver_report(ClothSolverPanel, bpy.types.Panel):
    """The last bake's whole report (what the operator reported), one item a paragraph: closed
    by default, as the Bake panel's box shows the figures an artist reads at a glance."""

    bl_label = "Report"
    bl_parent_id = "PHYSICS_PT_cloth_solver_bake"
    bl_options = {"DEFAULT_CLOSED"}
    role = {"CLOTH", "COLLIDER", "YARN"}

    @classmethod
    def poll(cls, context):
        return super().poll(context) and bool(context.scene.cloth_solver.last_report)

    def draw(self, context):
        layout = self.layout
        last = last_bake(context.scene)
        items = last.get("details") or [context.scene.cloth_solver.last_report]
        for item in items:
            wrapped_label(layout, context, _sentence(item))


# A label longer than its row is cut in the middle ("Compiling solve…irst bake only)…"), and
# the Properties editor is about 320 px wide by default: longer texts are wrapped to its width,
# measured in the UI font (blf) where it can be, else estimated.
CHAR_WIDTH = 6.8  # px at resolution scale 1: a wide average of the UI font, when blf cannot tell
PANEL_INSET = 40  # px the panel's margins and the scroll bar take from the region's width
BOX_INSET = 20  # px a box's margins take in addition
ICON_WIDTH = 22  # px an icon and its gap take
NUMBER = re.compile(r"[-+−]?\d[\d.,]*")  # a figure, which keeps its unit on its line


def wrapped_label(layout, context, text: str, icon: str = "NONE", inset: int = 0) -> None:
    """``text`` as labels, in as many lines as the editor's width needs; the first line has
    ``icon``, the others a blank of its width so that they line up."""
    region = getattr(context, "region", None)
    width = region.width if region is not None and region.width > 1 else 320
    scale = getattr(context.preferences.system, "ui_scale", 1.0) or 1.0
    room = width - scale * (PANEL_INSET + inset + (ICON_WIDTH if icon != "NONE" else 0))
    measure = _text_width(context, scale)
    lines, line = [], ""
    for word in _unbroken_words(text):
        candidate = f"{line} {word}" if line else word
        if line and measure(candidate) > room:
            lines.append(line)
            candidate = word
        line = candidate
    lines.append(line)
    col = layout.column(align=True)
    for i, line in enumerate(lines):
        col.label(text=line, icon=icon if i == 0 else ("BLANK1" if icon != "NONE" else "NONE"))


def _sentence(text: str) -> str:
    """``text`` with its first letter capitalised (report items start in lower case)."""
    return text[:1].upper() + text[1:]


def _unbroken_words(text: str) -> list[str]:
    """``text``'s words, a number kept with the word after it: a line never ends on a bare
    figure with its unit on the next ("0.00 / mm")."""
    words = []
    for word in text.split():
        if words and NUMBER.fullmatch(words[-1].split()[-1]):
            words[-1] = f"{words[-1]} {word}"
        else:
            words.append(word)
    return words


def _text_width(context, scale: float):
    """A function giving a text's width [px] in the UI's font as labels draw it."""
    try:
        import blf
        points = context.preferences.ui_styles[0].widget.points * scale
        try:
            blf.size(0, points)
        except TypeError:  # Blender before 4.0 also takes the dpi
            blf.size(0, points, 72)
        if blf.dimensions(0, "Bake Cloth")[0] > 0:  # no fonts without a window
            return lambda text: blf.dimensions(0, text)[0]
    except (ImportError, AttributeError, IndexError, ValueError):
        pass
    return lambda text: len(text) * CHAR_WIDTH * scale


class PHYSICS_PT_cloth_solver_performance(ClothSolverPanel, bpy.types.Panel):
    """Threads, as Blender's Render > Performance: automatic or a fixed ceiling."""

    bl_label = "Performance"
    bl_parent_id = "PHYSICS_PT_cloth_solver_bake"
    bl_options = {"DEFAULT_CLOSED"}
    role = {"CLOTH", "COLLIDER", "YARN"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        s = context.scene.cloth_solver
        col = layout.column(align=True)
        col.prop(s, "threads_mode")
        sub = col.column(align=True)
        sub.enabled = s.threads_mode == "FIXED"
        sub.prop(s, "threads")


classes = (CLOTH_SOLVER_MT_presets, CLOTH_SOLVER_MT_presets_remove, PHYSICS_PT_cloth_solver,
           PHYSICS_PT_cloth_solver_material, PHYSICS_PT_cloth_solver_stiffness,
           PHYSICS_PT_cloth_solver_damping, PHYSICS_PT_cloth_solver_pinning,
           PHYSICS_PT_cloth_solver_sewing, PHYSICS_PT_cloth_solver_collisions,
           PHYSICS_PT_cloth_solver_quality,
           PHYSICS_PT_cloth_solver_wind, PHYSICS_PT_cloth_solver_bake,
           PHYSICS_PT_cloth_solver_report, PHYSICS_PT_cloth_solver_performance)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
