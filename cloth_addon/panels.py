"""Physics-tab panels, laid out like Blender's own cloth panels (a mixin, sub-panels with
``bl_parent_id``, property split, the preset menu in the header)."""

from __future__ import annotations

import bpy

from . import bake_status, blender_physics, presets, units
from .properties import MATERIAL_SPECS, prop_name

STIFFNESS = ("stretch_stiffness", "stretch_stiffness_weft", "shear_stiffness", "bend_stiffness")
DAMPING = ("stretch_damping", "shear_damping", "bend_damping", "air_drag")


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


def _field(layout, settings, field):
    """Draw one material field; optional fields get their switch beside them."""
    name = prop_name(field)
    if MATERIAL_SPECS[field].optional:
        row = layout.row(heading=settings.bl_rna.properties[name].name)
        row.prop(settings, f"use_{name}", text="")
        sub = row.row()
        sub.active = getattr(settings, f"use_{name}")
        sub.prop(settings, name, text="")
    else:
        layout.prop(settings, name)


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
            self.layout.menu("CLOTH_SOLVER_MT_presets", text=s.preset or "Presets",
                             icon="PRESET")

    def draw(self, context):
        layout = self.layout
        s = context.object.cloth_solver
        layout.row().prop(s, "role", expand=True)
        layout.use_property_split = True
        if s.role == "CLOTH":
            layout.prop(s, "solver")
        elif s.role == "COLLIDER":
            col = layout.column()
            col.prop(s, "thickness")
            col.prop(s, "friction")
            if blender_physics.collision_modifier(context.object) is not None:
                layout.label(text="These replace the Collision modifier's Thickness Outer and "
                                  "Friction", icon="INFO")
        elif blender_physics.collision_modifier(context.object) is not None:
            # Blender's Collision modifier makes it a collider unless the user says otherwise.
            col = layout.column(heading="Blender Collision")
            col.prop(s, "use_collision_modifier", text="Collider")
            col.prop(context.scene.cloth_solver, "use_collision_modifiers", text="In Scene")
            if blender_physics.uses_collision_modifier(context.object, context.scene):
                thickness, mu = blender_physics.collision_settings(
                    context.object, units.metres_per_unit(context.scene))
                layout.label(text=f"Collider from its Collision modifier: thickness "
                                  f"{1e3 * thickness:.3g} mm, friction coefficient {mu:.2f}",
                             icon="MOD_PHYSICS")
        else:
            layout.label(text="Choose Cloth or Collider to take part in Bake Cloth")


class PHYSICS_PT_cloth_solver_material(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Material (SI)"
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    role = {"CLOTH"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.object.cloth_solver
        _field(layout, s, "area_density")
        col = layout.column(heading="Stiffness")
        for name in STIFFNESS:
            _field(col, s, name)
        col = layout.column(heading="Damping")
        for name in DAMPING:
            _field(col, s, name)
        _field(layout, s, "max_strain")
        shown = {"area_density", "max_strain", "thickness", *STIFFNESS, *DAMPING}
        for name in MATERIAL_SPECS:  # fields added to MaterialParams later appear here
            if name not in shown:
                _field(layout, s, name)


class PHYSICS_PT_cloth_solver_pinning(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Pinning"
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    role = {"CLOTH"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        ob = context.object
        layout.prop_search(ob.cloth_solver, "pin_group", ob, "vertex_groups", text="Pin Group")


class PHYSICS_PT_cloth_solver_collisions(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Collisions"
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    role = {"CLOTH"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.object.cloth_solver
        layout.prop(s, "self_collision")
        _field(layout, s, "thickness")


class PHYSICS_PT_cloth_solver_quality(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Quality"
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    bl_options = {"DEFAULT_CLOSED"}
    role = {"CLOTH"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.object.cloth_solver
        row = layout.row(heading="Substeps")
        row.prop(s, "use_custom_substeps", text="")
        sub = row.row()
        sub.active = s.use_custom_substeps
        sub.prop(s, "substeps", text="")
        if s.solver == "IMPLICIT":
            layout.prop(s, "newton_iterations")
        elif s.solver == "MASS_SPRING":
            layout.prop(s, "integrator")


class PHYSICS_PT_cloth_solver_wind(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Wind (Scene)"
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    bl_options = {"DEFAULT_CLOSED"}
    role = {"CLOTH"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        s = context.scene.cloth_solver
        layout.prop(s, "wind_velocity")
        col = layout.column()
        col.prop(s, "wind_turbulence")
        sub = col.column()
        sub.active = s.wind_turbulence > 0.0
        sub.prop(s, "wind_scale")
        sub.prop(s, "wind_frequency")
        sub.prop(s, "wind_seed")
        col = layout.column(heading="Force Fields")
        col.prop(s, "use_force_fields", text="Add Wind, Turbulence")
        sub = col.column()
        sub.active = s.use_force_fields
        sub.prop(s, "field_speed")


class PHYSICS_PT_cloth_solver_bake(ClothSolverPanel, bpy.types.Panel):
    bl_label = "Bake"
    bl_parent_id = "PHYSICS_PT_cloth_solver"
    role = {"CLOTH", "COLLIDER"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        scene = context.scene.cloth_solver
        col = layout.column(align=True)
        col.prop(scene, "frame_start", text="Frame Start")
        col.prop(scene, "frame_end", text="End")
        row = layout.row(align=True)
        row.use_property_split = False
        row.operator("cloth_solver.bake", icon="PHYSICS")
        row.operator("cloth_solver.free_bake", icon="TRASH")
        from . import warmup
        compiling = warmup.status_line()
        if compiling:
            layout.label(text=compiling, icon="TIME")
        s = context.object.cloth_solver
        state, text = bake_status.status(context.object, context.scene)
        if s.role == "CLOTH" and state == "NOT_BAKED":
            layout.label(text=text, icon="INFO")
        if s.role == "CLOTH" and s.is_baked:
            box = layout.box()
            box.use_property_split = False
            if state == "OUTDATED":  # as Blender's point cache: the bake no longer matches
                row = box.row()
                row.alert = True
                row.label(text=text, icon="ERROR")
                box.label(text=f"Baked frames {s.bake_frame_start}-{s.bake_frame_end} "
                               f"({s.bake_model}); bake again to update")
            else:
                box.label(text=text, icon="CHECKMARK")
            box.label(text=f"Time {s.bake_time:.2f} s, max strain {100 * s.bake_max_strain:.2f}%")
            box.label(text=f"Penetrations: deepest {1e3 * s.bake_deepest_penetration:.2f} mm, "
                           f"{s.bake_intersections} intersecting triangle pairs at most")
        elif scene.last_report:
            layout.label(text=scene.last_report)


classes = (CLOTH_SOLVER_MT_presets, CLOTH_SOLVER_MT_presets_remove, PHYSICS_PT_cloth_solver,
           PHYSICS_PT_cloth_solver_material, PHYSICS_PT_cloth_solver_pinning,
           PHYSICS_PT_cloth_solver_collisions, PHYSICS_PT_cloth_solver_quality,
           PHYSICS_PT_cloth_solver_wind, PHYSICS_PT_cloth_solver_bake)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister():
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
