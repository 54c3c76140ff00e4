"""Add > Mesh > Knit Swatch: a knitted swatch as yarns (issue 23, docs/yarn.md).

The swatch is a mesh of loose edges, one polyline per yarn (its vertices are the yarn's points,
in order along the yarn), with the role Yarn and the knit settings it was made from; Bake Cloth
simulates it with the yarn model (yarn_bake.py). It is laid out by the solver's stitch generator
and relaxed as Kaldor does (§7.1, ``relax_swatch``), so it starts at rest. A Geometry Nodes
modifier sweeps a circle of the yarn's radius along the polylines so it renders as yarn; it
sits on top of the bake (shape keys act before modifiers) and the bake never switches it off.

The swatch hangs in the object's x–z plane: courses along +x, wales up +z, its face towards −y;
the top course is the vertex group "Top Course", the Pin Group by default.
"""

from __future__ import annotations

import dataclasses

import itertools

import bpy
import numpy as np
from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty, StringProperty

from ..solver import (KNIT_GAUGE_IN_RADII, YarnStepError, knit_swatch, list_yarn_presets,
                      load_yarn_preset, relax_swatch, yarn_preset_info)
from . import units
from .properties import KNIT_PATTERN_ITEMS, REPEAT_DESCRIPTION, yarn_property

PIN_GROUP = "Top Course"
# The rest curvature the relaxation leaves each yarn point (solver/yarn/rods.py), kept on the
# mesh as a point attribute: the bake simulates about it, the mesh's own shape being the
# settled one
REST_CURVATURE = "yarn_rest_curvature"
SWEEP_GROUP = "Yarn Sweep"
MODIFIER = "Yarn"
# Catmull-Rom through the yarn points, 3 samples per segment, an 8-sided tube: smooth at a
# swatch's usual viewing distance, about 24 quads per yarn point.
SPLINE_RESOLUTION = 3
TUBE_SIDES = 8
YARN_COLOUR = (0.50, 0.07, 0.06, 1.0)  # a red wool

YARN_ITEMS = tuple((stem, yarn_preset_info(stem)["name"], yarn_preset_info(stem)["description"])
                   for stem in list_yarn_presets())
DEFAULT_YARN = "wool_worsted"


def solver_pattern(pattern: str, repeat: str) -> str:
    """The stitch generator's pattern for a Pattern item and the Repeat text: the repeat for
    REPEAT, else the item's name (stitches.purl_mask)."""
    return repeat if pattern == "REPEAT" else pattern.lower()


def swatch_params(yarn: str, friction: float, contact_rest: float):
    """The yarn preset with the swatch's own Yarn Friction and Rest Contacts (object
    settings)."""
    return dataclasses.replace(load_yarn_preset(yarn), friction=float(friction),
                               contact_rest=float(contact_rest))


def swatch_geometry(pattern: str, stitches: int, courses: int, yarn: str,
                    stitch_width: float, course_height: float, relax: bool = True,
                    friction: float = 0.0, edges: bool = True, contact_rest: float = 1.0):
    """For ``pattern`` as the stitch generator takes it (``solver_pattern``), the swatch's
    yarn points in its object's frame [m], centred on the origin (courses +x, wales +z, face
    −y), its segments (S, 2), the Swatch (topology: loops, ties), the yarn and the rest
    curvature (P, 3) the relaxation leaves (None without it); relaxed with the yarn friction
    and rest contacts the bake will use."""
    params = swatch_params(yarn, friction, contact_rest)
    sw = knit_swatch(pattern, stitches, courses, stitch_width, course_height, params.radius,
                     edges=edges)
    curvature = None
    x = sw.positions
    if relax:
        relaxed = relax_swatch(sw, params)
        x, curvature = relaxed.positions, relaxed.rest_curvature
    local = np.stack([x[:, 0], -x[:, 2], x[:, 1]], axis=1)
    local -= 0.5 * (local.min(axis=0) + local.max(axis=0))
    return local, sw.segments, sw, params, curvature


def sweep_node_group(radius: float, material) -> bpy.types.NodeTree:
    """Mesh to Curve -> Catmull-Rom -> Curve to Mesh with a circle of ``radius`` (Blender
    units) -> smooth shading -> ``material`` (the curves in between lose the mesh's material
    slots, so the tube is given it). The group interface is ``interface.new_socket`` from Blender 4.0,
    ``inputs``/``outputs`` before."""
    ng = bpy.data.node_groups.new(SWEEP_GROUP, "GeometryNodeTree")
    if hasattr(ng, "interface"):
        for in_out in ("INPUT", "OUTPUT"):
            ng.interface.new_socket(name="Geometry", in_out=in_out,
                                    socket_type="NodeSocketGeometry")
    else:
        ng.inputs.new("NodeSocketGeometry", "Geometry")
        ng.outputs.new("NodeSocketGeometry", "Geometry")
    nodes, links = ng.nodes, ng.links
    group_in, group_out = nodes.new("NodeGroupInput"), nodes.new("NodeGroupOutput")
    to_curve = nodes.new("GeometryNodeMeshToCurve")
    spline = nodes.new("GeometryNodeCurveSplineType")
    spline.spline_type = "CATMULL_ROM"
    resolution = nodes.new("GeometryNodeSetSplineResolution")
    resolution.inputs["Resolution"].default_value = SPLINE_RESOLUTION
    circle = nodes.new("GeometryNodeCurvePrimitiveCircle")
    circle.mode = "RADIUS"
    circle.inputs["Resolution"].default_value = TUBE_SIDES
    circle.inputs["Radius"].default_value = radius
    sweep = nodes.new("GeometryNodeCurveToMesh")
    smooth = nodes.new("GeometryNodeSetShadeSmooth")
    set_material = nodes.new("GeometryNodeSetMaterial")
    set_material.inputs["Material"].default_value = material
    chain = (group_in, to_curve, spline, resolution, sweep, smooth, set_material, group_out)
    for a, b in itertools.pairwise(chain):
        links.new(a.outputs[0], b.inputs[0])  # geometry in and out are every node's first
    links.new(circle.outputs[0], sweep.inputs["Profile Curve"])
    for i, node in enumerate(chain):
        node.location = (200 * i, 0)
    circle.location = (600, -250)
    return ng


def yarn_material(name: str = "Yarn") -> bpy.types.Material:
    mat = bpy.data.materials.new(name)
    mat.diffuse_color = YARN_COLOUR  # the viewport's solid colour
    if mat.node_tree is None:  # Blender < 5.0 makes the node tree on request
        mat.use_nodes = True
    bsdf = next((n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED"), None)
    if bsdf is not None:
        bsdf.inputs["Base Color"].default_value = YARN_COLOUR
        bsdf.inputs["Roughness"].default_value = 0.85
    return mat


def add_swatch(context, pattern: str, stitches: int, courses: int, yarn: str,
               stitch_width: float, course_height: float, relax: bool = True,
               pin_top: bool = True, name: str = "Knit Swatch", friction: float = 0.0,
               repeat: str = "", edges: bool = True, contact_rest: float = 1.0):
    """Create the swatch object at the 3D cursor (see module docstring); returns it.
    ``pattern`` is a Pattern item, ``repeat`` the Repeat text of the item REPEAT."""
    local, segments, sw, params, curvature = swatch_geometry(
        solver_pattern(pattern, repeat), stitches, courses, yarn, stitch_width, course_height,
        relax, friction, edges, contact_rest)
    metres = units.metres_per_unit(context.scene)
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(local))
    mesh.vertices.foreach_set("co", (local / metres).astype(np.float32).ravel())
    mesh.edges.add(len(segments))
    mesh.edges.foreach_set("vertices", segments.astype(np.int32).ravel())
    if curvature is not None:
        # in each point's own frame (turning with the yarn), so no unit scale applies
        attr = mesh.attributes.new(REST_CURVATURE, "FLOAT_VECTOR", "POINT")
        attr.data.foreach_set("vector", curvature.astype(np.float32).ravel())
    mesh.update()
    material = yarn_material()
    mesh.materials.append(material)
    obj = bpy.data.objects.new(name, mesh)
    context.collection.objects.link(obj)
    obj.location = context.scene.cursor.location
    s = obj.cloth_solver
    s.role = "YARN"
    s.knit_pattern = pattern.upper()
    s.knit_repeat = repeat if pattern.upper() == "REPEAT" else ""
    s.knit_stitches, s.knit_courses = stitches, courses
    s.knit_yarn = yarn
    s.knit_stitch_width, s.knit_course_height = stitch_width, course_height
    s.knit_friction, s.knit_contact_rest = friction, contact_rest
    s.knit_edges = edges
    if pin_top:
        group = obj.vertex_groups.new(name=PIN_GROUP)
        group.add([int(i) for i in sw.top_course], 1.0, "REPLACE")
        s.pin_group = PIN_GROUP
    mod = obj.modifiers.new(MODIFIER, "NODES")
    mod.node_group = sweep_node_group(params.radius / metres, material)
    for other in context.view_layer.objects:
        other.select_set(False)
    obj.select_set(True)
    context.view_layer.objects.active = obj
    return obj


class CLOTH_SOLVER_OT_add_knit_swatch(bpy.types.Operator):
    """Add a knitted swatch of yarns, relaxed to rest, hanging from its top course (Bake Cloth
    simulates it with the yarn model)"""

    bl_idname = "cloth_solver.add_knit_swatch"
    bl_label = "Knit Swatch"
    bl_options = {"REGISTER", "UNDO"}

    pattern: EnumProperty(name="Pattern", items=KNIT_PATTERN_ITEMS, default="RIB2X2")
    repeat: StringProperty(name="Repeat", default="k3p1", description=REPEAT_DESCRIPTION)
    stitches: IntProperty(name="Stitches", default=12, min=1, max=200,
                          description="Stitches per course (loops across)")
    courses: IntProperty(name="Courses", default=12, min=1, max=200,
                         description="Courses (rows of loops up the swatch)")
    yarn: EnumProperty(name="Yarn", items=YARN_ITEMS, default=DEFAULT_YARN,
                       description="Yarn preset (presets/yarns)")
    use_yarn_gauge: BoolProperty(
        name="Gauge from Yarn", default=True,
        description="The yarn's usual gauge: a stitch 4.48 and a course 3.36 yarn radii (wool "
                    "worsted: 18 stitches and 24 courses per 10 cm)")
    stitches_per_10cm: FloatProperty(name="Stitches per 10 cm", default=18.0, min=1.0,
                                     max=200.0, description="Gauge along the course")
    courses_per_10cm: FloatProperty(name="Courses per 10 cm", default=24.0, min=1.0,
                                    max=200.0, description="Gauge along the wale")
    relax: BoolProperty(name="Relax", default=True,
                        description="Let the generated loops settle into a rest state first "
                                    "(Kaldor §7.1; a few seconds for 12 × 12 stitches)")
    friction: yarn_property("friction")
    contact_rest: yarn_property("contact_rest")
    edges: BoolProperty(name="Cast On and Bind Off", default=True,
                        description="Finish the bottom edge with a cast-on and the top with a "
                                    "bind-off, so neither can open (off: raw edges)")
    pin_top: BoolProperty(name="Pin Top Course", default=True,
                          description="Put the top course in the vertex group 'Top Course', "
                                      "the swatch's Pin Group")

    def gauge(self) -> tuple[float, float]:
        """Stitch width and course height [m]."""
        if self.use_yarn_gauge:
            r = load_yarn_preset(self.yarn).radius
            return KNIT_GAUGE_IN_RADII[0] * r, KNIT_GAUGE_IN_RADII[1] * r
        return 0.1 / self.stitches_per_10cm, 0.1 / self.courses_per_10cm

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "pattern")
        if self.pattern == "REPEAT":
            layout.prop(self, "repeat")
        for name in ("stitches", "courses", "yarn", "use_yarn_gauge"):
            layout.prop(self, name)
        col = layout.column()
        col.active = not self.use_yarn_gauge
        col.prop(self, "stitches_per_10cm")
        col.prop(self, "courses_per_10cm")
        layout.prop(self, "relax")
        layout.prop(self, "friction")
        layout.prop(self, "contact_rest")
        layout.prop(self, "edges")
        layout.prop(self, "pin_top")

    def execute(self, context):
        if context.mode != "OBJECT":
            bpy.ops.object.mode_set(mode="OBJECT")
        w, h = self.gauge()
        try:
            add_swatch(context, self.pattern, self.stitches, self.courses, self.yarn, w, h,
                       relax=self.relax, pin_top=self.pin_top, friction=self.friction,
                       repeat=self.repeat, edges=self.edges, contact_rest=self.contact_rest)
        except (YarnStepError, ValueError) as err:
            self.report({"ERROR"}, f"Knit Swatch: {err}")
            return {"CANCELLED"}
        return {"FINISHED"}


def _menu(self, context):
    self.layout.operator(CLOTH_SOLVER_OT_add_knit_swatch.bl_idname, icon="MOD_CLOTH")


def register():
    bpy.utils.register_class(CLOTH_SOLVER_OT_add_knit_swatch)
    bpy.types.VIEW3D_MT_mesh_add.append(_menu)


def unregister():
    bpy.types.VIEW3D_MT_mesh_add.remove(_menu)
    bpy.utils.unregister_class(CLOTH_SOLVER_OT_add_knit_swatch)
