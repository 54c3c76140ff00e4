"""Knit swatches in Blender (issue 23): Add > Mesh > Knit Swatch makes a relaxed yarn polyline
with a Geometry Nodes sweep; Bake Cloth simulates it with the yarn model into shape keys, as
for cloth (pins, failures and undo keep the previous bake)."""

from __future__ import annotations

import dataclasses

import bpy
import numpy as np
import pytest
from scenes import addon, advance, key_state, same_key_state, solver
from test_registration import _draw_all
from test_undo import _push, _undo_stack

WORSTED = (5.6e-3, 4.2e-3)  # the operator's default gauge for wool worsted [m]


def _add(pattern="STOCKINETTE", n=4, frames=(1, 3)):
    assert bpy.ops.cloth_solver.add_knit_swatch(
        pattern=pattern, stitches=n, courses=n, yarn="wool_worsted") == {"FINISHED"}
    scene = bpy.context.scene
    scene.cloth_solver.frame_start, scene.cloth_solver.frame_end = frames
    return bpy.context.view_layer.objects.active


def _points(obj, key=None) -> np.ndarray:
    """World positions of the yarn points: the mesh's own (Basis), or a shape key's."""
    data = obj.data.vertices if key is None else obj.data.shape_keys.key_blocks[key].data
    buf = np.empty(3 * len(data), dtype=np.float32)
    data.foreach_get("co", buf)
    m = np.array(obj.matrix_world)
    return buf.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]


def _length(x, segments=None) -> float:
    """Total yarn length of points x along ``segments`` (S, 2) (default: one polyline)."""
    if segments is None:
        return float(np.linalg.norm(np.diff(x, axis=0), axis=1).sum())
    return float(np.linalg.norm(x[segments[:, 1]] - x[segments[:, 0]], axis=1).sum())


def _run_directly(obj, pattern, stitches, courses, yarn, pinned, frames=1):
    """The yarn model run directly on the swatch's mesh, through the frame loop every model
    goes through (solver.Simulation): the positions after ``frames`` frames at 24 fps."""
    S = solver()
    sw = S.knit_swatch(pattern, stitches, courses, *WORSTED, yarn.radius, edges=True)
    attr = obj.data.attributes["yarn_rest_curvature"]
    curvature = np.empty(3 * len(obj.data.vertices), np.float32)
    attr.data.foreach_get("vector", curvature)
    setup = S.swatch_setup(sw, yarn, positions=_points(obj), pin_indices=pinned,
                           rest_curvature=curvature.reshape(-1, 3).astype(np.float64))
    sim = S.Simulation(S.SimulationSpec(setup, S.SolverSettings(model="yarn"), frames=frames,
                                        fps=24.0, gravity=np.array(bpy.context.scene.gravity)))
    sim.run()
    assert sim.result.error is None, sim.result.error
    return sim.result.positions[-1]


def _edges(obj) -> np.ndarray:
    """(E, 2) the mesh's edges: the yarn segments of a knit swatch."""
    buf = np.empty(2 * len(obj.data.edges), np.int32)
    obj.data.edges.foreach_get("vertices", buf)
    return buf.reshape(-1, 2)


def _attribute(obj, name) -> np.ndarray:
    """A FLOAT_VECTOR point attribute of the object's mesh, (P, 3)."""
    buf = np.empty(3 * len(obj.data.vertices), np.float32)
    obj.data.attributes[name].data.foreach_get("vector", buf)
    return buf.reshape(-1, 3).astype(np.float64)


def _evaluated_mesh(obj):
    dg = bpy.context.evaluated_depsgraph_get()
    mesh = obj.evaluated_get(dg).to_mesh()
    out = len(mesh.vertices), len(mesh.polygons)
    buf = np.empty(3 * out[0], dtype=np.float32)
    mesh.vertices.foreach_get("co", buf)
    obj.evaluated_get(dg).to_mesh_clear()
    return out, buf.reshape(-1, 3)


def test_add_knit_swatch_makes_a_relaxed_yarn_polyline_swept_into_a_tube():
    bpy.context.scene.cursor.location = (0.0, 0.0, 1.0)
    obj = _add("RIB2X2", n=4)
    S = solver()
    r = S.load_yarn_preset("wool_worsted").radius
    generated = S.knit_swatch("rib2x2", 4, 4, *WORSTED, r)   # with its cast-on and bind-off
    P = len(generated.positions)
    s = obj.cloth_solver
    assert (s.role, s.knit_pattern, s.knit_stitches, s.knit_courses, s.knit_yarn) == (
        "YARN", "RIB2X2", 4, 4, "wool_worsted")
    # the knit's yarn, its cast-on and its bind-off: P points, loose edges through
    # consecutive vertices of each, no faces
    assert s.knit_edges and len(generated.yarn_offsets) == 4
    assert len(obj.data.vertices) == P and len(obj.data.polygons) == 0
    edges = np.empty(2 * len(obj.data.edges), dtype=np.int32)
    obj.data.edges.foreach_get("vertices", edges)
    assert np.array_equal(np.sort(edges.reshape(-1, 2), axis=1), generated.segments)
    # relaxed (Kaldor §7.1): the rest lengths shrank towards c = 0.935 of the generated ones
    x = _points(obj)
    assert _length(x, generated.segments) < 0.97 * _length(generated.positions,
                                                            generated.segments)
    # the rest curvature the relaxation left is kept with the mesh, for the bake
    assert obj.data.attributes["yarn_rest_curvature"].data_type == "FLOAT_VECTOR"
    assert abs(x.mean(axis=0) - (0.0, 0.0, 1.0)).max() < 0.01  # at the 3D cursor
    # hanging in x-z: courses along x, wales up z, thinnest along y (a small rib pulls in to
    # an accordion about 5 yarn diameters deep)
    extent = x.max(axis=0) - x.min(axis=0)
    assert extent[1] < 0.8 * min(extent[0], extent[2]), extent
    # the top course (and the bind-off through it) is the pin group
    top = [v.index for v in obj.data.vertices if v.groups]
    assert s.pin_group == "Top Course"
    assert top == sorted(generated.top_course.tolist())
    # the Geometry Nodes sweep evaluates to a closed-around tube of the yarn's radius
    (nv, nf), tube = _evaluated_mesh(obj)
    assert nf > 8 * (P - 1) and nv > 8 * (P - 1)
    local = _points(obj) - np.array(obj.matrix_world)[:3, 3]
    grow = (tube.max(axis=0) - tube.min(axis=0)) - (local.max(axis=0) - local.min(axis=0))
    assert 1.0 * r < grow[1] < 3.0 * r, grow  # the tube adds about a diameter across
    assert len(obj.data.materials) == 1
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    assert [m.name for m in ev.to_mesh().materials] == [obj.data.materials[0].name]
    ev.to_mesh_clear()


def test_bake_a_knit_swatch_hanging_from_its_top_course():
    obj = _add("STOCKINETTE", n=4, frames=(1, 3))
    x0 = _points(obj)
    pinned = np.array([v.index for v in obj.data.vertices if v.groups])
    free = np.setdiff1d(np.arange(len(x0)), pinned)
    scene = bpy.context.scene
    scene.use_gravity = False  # first without gravity, to see what gravity adds
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    weightless = _points(obj, "cloth_0003")
    scene.use_gravity = True
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    s = obj.cloth_solver
    assert s.is_baked and s.bake_model == "yarn" and (s.bake_frame_start, s.bake_frame_end) == (1, 3)
    assert obj.modifiers["Yarn"].show_viewport  # the sweep stays on top of the keys
    x1, x3 = _points(obj, "cloth_0001"), _points(obj, "cloth_0003")
    np.testing.assert_allclose(x1, x0, atol=1e-6)
    np.testing.assert_allclose(x3[pinned], x0[pinned], atol=1e-6)  # the top course holds
    # gravity pulls the rest down (by about 0.1 mm in two frames: a 4 x 4 worsted swatch
    # weighs 0.2 g and its loops' bending holds most of it)
    drop = weightless[free, 2].mean() - x3[free, 2].mean()
    assert drop > 2e-5, drop
    segments = solver().knit_swatch("stockinette", 4, 4, *WORSTED, 1.25e-3).segments
    assert abs(_length(x3, segments) / _length(x0, segments) - 1.0) < 0.01  # inextensible
    # the same yarn model run directly gives the same keys
    S = solver()
    direct = _run_directly(obj, "stockinette", 4, 4, S.load_yarn_preset("wool_worsted"), pinned)
    np.testing.assert_allclose(_points(obj, "cloth_0002"), direct, atol=2e-6)
    # the sweep follows the keys: the tube moves between frames 1 and 3, as much as the yarn
    scene.frame_set(1)
    tube1 = _evaluated_mesh(obj)[1]
    scene.frame_set(3)
    moved = np.abs(_evaluated_mesh(obj)[1] - tube1).max()
    assert 0.5 < moved / np.abs(x3 - x1).max() < 2.0
    assert "yarn 'Knit Swatch': closest yarns" in scene.cloth_solver.last_report
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert obj.data.shape_keys is None and obj.modifiers["Yarn"].show_viewport


def test_a_swatch_knit_from_a_repeat_keeps_it_and_bakes_from_it():
    assert bpy.ops.cloth_solver.add_knit_swatch(
        pattern="REPEAT", repeat="k1 p3", stitches=4, courses=3,
        yarn="wool_worsted") == {"FINISHED"}
    obj = bpy.context.view_layer.objects.active
    s = obj.cloth_solver
    assert (s.knit_pattern, s.knit_repeat) == ("REPEAT", "k1 p3")
    S = solver()
    r = S.load_yarn_preset("wool_worsted").radius
    generated = S.knit_swatch("k1p3", 4, 3, *WORSTED, r)
    assert (generated.purl == np.array([False, True, True, True])).all()
    assert len(obj.data.vertices) == len(generated.positions)
    labels = [text for kind, text in _draw_all(bpy.context) if kind == "label"]
    assert "Repeat k1 p3, 4 × 3 stitches" in labels     # the panel names the repeat
    scene = bpy.context.scene
    scene.cloth_solver.frame_start, scene.cloth_solver.frame_end = 1, 2
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert obj.cloth_solver.is_baked
    # a repeat that is not one is refused by name, and nothing is added
    count = len(bpy.data.objects)
    with pytest.raises(RuntimeError, match="'q' is neither k .knit. nor p .purl."):
        bpy.ops.cloth_solver.add_knit_swatch(pattern="REPEAT", repeat="k2q2", stitches=4,
                                             courses=3, yarn="wool_worsted")
    assert len(bpy.data.objects) == count
    # nor baked, should the stored repeat be spoilt
    before = key_state(obj)
    s.knit_repeat = "k2 x"
    with pytest.raises(RuntimeError, match="'x' is neither k"):
        bpy.ops.cloth_solver.bake()
    assert same_key_state(before, key_state(obj))


def test_knit_bake_failures_name_the_problem_and_keep_the_previous_bake(monkeypatch):
    obj = _add("GARTER", n=3, frames=(1, 2))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    before = key_state(obj)
    # the yarn model cannot make a step without yarns passing through (as it reports it)
    yarn_bake = addon().cloth_addon.yarn_bake

    def stuck(self, end):
        raise solver().YarnStepError("a step of 1e-05 s still brings yarns within 0.05 "
                                     "diameters (test)")

    monkeypatch.setattr(solver().YarnSolver, "step_toward", stuck)
    with pytest.raises(RuntimeError, match="'Knit Swatch': frame 1: a step .*[(]test[)]"):
        bpy.ops.cloth_solver.bake()
    monkeypatch.undo()
    assert same_key_state(before, key_state(obj))
    # an edited yarn is named, not baked
    obj.cloth_solver.knit_stitches = 5
    with pytest.raises(RuntimeError, match="a 5 × 3 swatch has .* was it edited"):
        bpy.ops.cloth_solver.bake()
    obj.cloth_solver.knit_stitches = 3
    obj.cloth_solver.pin_group = "missing"
    with pytest.raises(RuntimeError, match="pin group 'missing' does not exist"):
        bpy.ops.cloth_solver.bake()
    assert same_key_state(before, key_state(obj))
    assert yarn_bake.yarn_objects(bpy.context.scene) == [obj]


def test_a_knit_bake_is_one_undo_step_and_its_panel_says_what_it_collides_with():
    _undo_stack()
    _add("SEED", n=3, frames=(1, 2))
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(0.0, 0.0, -0.5))
    bpy.context.view_layer.objects.active.cloth_solver.role = "COLLIDER"
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.1, location=(0.5, 0.0, 0.0))
    bpy.context.view_layer.objects.active.cloth_solver.role = "COLLIDER"
    _push("scene")
    assert bpy.ops.cloth_solver.bake("EXEC_DEFAULT", True) == {"FINISHED"}
    report = bpy.context.scene.cloth_solver.last_report
    assert "passes through" not in report
    obj = bpy.data.objects["Knit Swatch"]
    assert obj.cloth_solver.is_baked and obj.data.shape_keys is not None
    # the panel says what the swatch is, its pins, its colliders, and the bake
    bpy.context.view_layer.objects.active = obj
    log = _draw_all(bpy.context)
    labels = [text for kind, text in log if kind == "label"]
    assert "Seed, 3 × 3 stitches" in labels and "Wool Worsted, stitch 5.60 × 4.20 mm" in labels
    assert "Collides with every collider, as cloth does" in labels
    assert ("prop_search", "pin_group") in log and ("operator", "cloth_solver.bake") in log
    assert any("Baked frames 1-2 (yarn)" in t for t in labels)
    assert bpy.ops.ed.undo() == {"FINISHED"}
    obj = bpy.data.objects["Knit Swatch"]
    assert obj.data.shape_keys is None and not obj.cloth_solver.is_baked


def test_a_knit_frame_is_simulated_in_slices_so_stop_and_cancel_are_seen_within_it():
    """A yarn frame takes seconds (12 × 12: 10-20 s): the bake's thread simulates it in slices
    of at most 0.1 s and sees Stop or Cancel between them, not only between frames; a job
    dropped in the middle of its first frame writes nothing."""
    import time
    obj = _add("STOCKINETTE", n=3, frames=(1, 2))
    yarn_bake, yarn_run = addon().cloth_addon.yarn_bake, addon().cloth_addon.yarn_run
    YarnRun = yarn_bake.YarnRun
    slices = []
    real_step = YarnRun.step

    def counted(self):
        rep = real_step(self)
        slices.append(rep is yarn_bake.UNFINISHED)
        return rep

    budget, yarn_run.SLICE_S = yarn_run.SLICE_S, 0.0  # a slice of one step: no timing
    YarnRun.step = counted
    try:
        job = addon().cloth_addon.bake.BakeJob(bpy.context).start()
        advance(job, 1)
        assert sum(slices) >= 3, len(slices)  # a frame is hundreds of steps
        job.run()  # the rest
        assert obj.cloth_solver.is_baked
        before = key_state(obj)
        job = addon().cloth_addon.bake.BakeJob(bpy.context).start()
        end = time.monotonic() + 60
        while not slices[-1] or len(slices) < 3:  # inside the first frame
            assert time.monotonic() < end
            time.sleep(0.001)
        slices.clear()
        job.cancel()
        assert job.runner.join(timeout=5.0)  # ended at the next slice, not the frame's end
        assert job.frames_kept == 0 and len(slices) <= 2
    finally:
        yarn_run.SLICE_S = budget
        YarnRun.step = real_step
    assert same_key_state(before, key_state(obj))


@pytest.mark.physics
def test_a_falling_knit_swatch_lands_on_a_flat_collider():
    """A swatch let go 1 mm above a plane collider (thickness 5 mm above its surface) falls
    onto it within the first frame and stays on it: no yarn point below its top + radius."""
    obj = _add("STOCKINETTE", n=3, frames=(1, 3))
    obj.cloth_solver.pin_group = ""
    x0 = _points(obj)
    r = solver().load_yarn_preset("wool_worsted").radius
    top = x0[:, 2].min() - r - 1e-3
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(0.0, 0.0, top - 0.005))
    plane = bpy.context.view_layer.objects.active
    plane.cloth_solver.role = "COLLIDER"
    plane.cloth_solver.thickness = 0.005
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    for key in ("cloth_0002", "cloth_0003"):
        x = _points(obj, key)
        assert x[:, 2].min() >= top + r - 1e-5, key  # on the plane, never through it
        assert x[:, 2].min() < x0[:, 2].min() - 5e-4, key  # it did fall onto it
    assert abs(_length(x, _edges(obj)) / _length(x0, _edges(obj)) - 1.0) < 0.01


@pytest.mark.physics
def test_a_falling_knit_swatch_lands_on_a_sphere_mesh_collider():
    """A swatch let go just above a UV sphere (a mesh, with Blender's Collision modifier as an
    artist adds it) lands on it and no yarn point comes closer to the mesh than the yarn's
    radius plus the collider's thickness (less the faces' inset from the sphere)."""
    obj = _add("STOCKINETTE", n=3, frames=(1, 3))
    obj.cloth_solver.pin_group = ""
    x0 = _points(obj)
    r = solver().load_yarn_preset("wool_worsted").radius
    R = 0.05
    bpy.ops.mesh.primitive_uv_sphere_add(radius=R, segments=48, ring_count=24)
    ball = bpy.context.view_layer.objects.active
    ball.modifiers.new("Collision", "COLLISION")
    thickness = ball.collision.thickness_outer
    centre = np.array([x0[:, 0].mean(), x0[:, 1].mean(),
                       x0[:, 2].min() - r - thickness - 2e-3 - R])
    ball.location = tuple(centre + [0.0, 0.0, 0.01])       # first inside its thickness:
    with pytest.raises(RuntimeError, match="starts .* mm inside a collider's reach"):
        bpy.ops.cloth_solver.bake()                         # named, not a failed step
    ball.location = tuple(centre)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    inset = R * (1.0 - np.cos(np.pi / 24))  # how far a face of the 48 × 24 sphere dips inside
    for key in ("cloth_0002", "cloth_0003"):
        x = _points(obj, key)
        d = np.linalg.norm(x - centre, axis=1).min()
        assert d >= R - inset + thickness + r - 2e-5, key   # never through it
        assert x[:, 2].min() < x0[:, 2].min() - 1e-3, key   # it did fall onto it
    assert abs(_length(x, _edges(obj)) / _length(x0, _edges(obj)) - 1.0) < 0.01
    report = bpy.context.scene.cloth_solver.last_report
    assert "passes through" not in report


def test_yarn_settings_are_kept_on_the_swatch_and_used_by_its_relaxation_and_bake():
    """Add > Knit Swatch's Yarn Friction and Rest Contacts relax the swatch with them, are
    stored on the object, drawn in its panel, and the bake simulates with them: the keys equal
    the yarn model run directly with them (which either changes), and after both are set back
    to their defaults on the swatch, the model run with those."""
    assert bpy.ops.cloth_solver.add_knit_swatch(
        pattern="RIB2X2", stitches=3, courses=3, yarn="wool_worsted",
        friction=0.3, contact_rest=0.5) == {"FINISHED"}
    obj = bpy.context.view_layer.objects.active
    bpy.context.scene.cloth_solver.frame_start, bpy.context.scene.cloth_solver.frame_end = 1, 2
    assert obj.cloth_solver.knit_friction == pytest.approx(0.3)
    assert obj.cloth_solver.knit_contact_rest == pytest.approx(0.5)
    log = _draw_all(bpy.context)
    assert {("prop", "knit_friction"), ("prop", "knit_contact_rest")} <= set(log)
    S = solver()
    yarn = S.load_yarn_preset("wool_worsted")
    assert (yarn.friction, yarn.contact_rest) == (0.0, 1.0)   # the preset's
    sw = S.knit_swatch("rib2x2", 3, 3, *WORSTED, yarn.radius)
    own = dataclasses.replace(yarn, friction=0.3, contact_rest=0.5)
    relaxed = S.relax_swatch(sw, own)
    assert np.allclose(relaxed.rest_curvature, _attribute(obj, "yarn_rest_curvature"),
                       atol=1e-6)
    x0 = _points(obj)
    # the mesh is the swatch relaxed with them (object frame: courses +x, wales +z)
    local = np.stack([relaxed.positions[:, 0], -relaxed.positions[:, 2],
                      relaxed.positions[:, 1]], axis=1)
    local -= 0.5 * (local.min(axis=0) + local.max(axis=0))
    np.testing.assert_allclose(x0 - x0.mean(axis=0), local - local.mean(axis=0), atol=2e-6)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    pinned = np.array([v.index for v in obj.data.vertices if v.groups])
    direct = _run_directly(obj, "rib2x2", 3, 3, own, pinned)
    np.testing.assert_allclose(_points(obj, "cloth_0002"), direct, atol=2e-6)
    # each of them changes the knit's motion
    for name, default in (("contact_rest", 1.0), ("friction", 0.0)):
        other = _run_directly(obj, "rib2x2", 3, 3, dataclasses.replace(own, **{name: default}),
                              pinned)
        assert np.abs(other - direct).max() > 1e-6, name
    # changed on the swatch, the next bake takes them
    obj.cloth_solver.knit_contact_rest, obj.cloth_solver.knit_friction = 1.0, 0.0
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    np.testing.assert_allclose(_points(obj, "cloth_0002"),
                               _run_directly(obj, "rib2x2", 3, 3, yarn, pinned), atol=2e-6)


def test_the_swatch_yarn_settings_take_their_default_and_bounds_from_the_yarn_parameters():
    """Yarn Friction and Rest Contacts, on the object and in Add > Knit Swatch, are
    YarnParams.friction and .contact_rest: default, bounds, label and description."""
    params = solver().params
    fields = {f.name: f for f in dataclasses.fields(params.YarnParams)}
    ob_rna = addon().cloth_addon.properties.ClothSolverObjectSettings.bl_rna.properties
    op_rna = bpy.ops.cloth_solver.add_knit_swatch.get_rna_type().properties
    for name, label in (("friction", "Yarn Friction"), ("contact_rest", "Rest Contacts")):
        field = fields[name]
        spec, display = field.metadata["spec"], field.metadata["display"]
        for prop in (ob_rna[f"knit_{name}"], op_rna[name]):
            assert prop.name == display.label == label
            assert prop.default == pytest.approx(field.default), name
            assert (prop.hard_min, prop.hard_max) == pytest.approx((spec.minimum,
                                                                    spec.maximum)), name
            assert prop.soft_max == pytest.approx(display.soft_max), name
            assert spec.doc[1:] in prop.description, name


def test_knit_swatch_is_in_the_add_mesh_menu():
    funcs = bpy.types.VIEW3D_MT_mesh_add.draw._draw_funcs
    ours = [f for f in funcs if getattr(f, "__module__", "").endswith("cloth_addon.knit")]
    assert len(ours) == 1  # once, however often the add-on was registered
    layout = type("Layout", (), {})()
    calls = []
    layout.operator = lambda idname, **kw: calls.append(idname)
    ours[0](type("Menu", (), {"layout": layout})(), bpy.context)
    assert calls == ["cloth_solver.add_knit_swatch"]
