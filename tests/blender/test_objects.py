"""Objects as real scenes have them: parented and animated transforms (rotation, non-uniform and
negative scale), linked duplicates sharing one mesh, objects linked from a library, hidden
objects and objects the view layer does not evaluate, and objects changed while a (modal) bake
simulates."""

from __future__ import annotations

import re

import numpy as np
import pytest

import bpy
from scenes import (addon, advance, assert_matches, cloth, evaluated_world, grid, key_state,
                    local_positions, reference, same_key_state)


def _bake():
    return bpy.ops.cloth_solver.bake()


def test_cloth_parented_to_an_animated_rotating_negatively_scaled_parent():
    rig = bpy.data.objects.new("Rig", None)
    bpy.context.scene.collection.objects.link(rig)
    rig.location, rig.rotation_euler, rig.scale = (0.0, 0.0, 1.5), (0.0, 0.0, 0.0), (1.2, -0.8, 1.0)
    for attr in ("location", "rotation_euler", "scale"):
        rig.keyframe_insert(attr, frame=1)
    rig.location, rig.rotation_euler, rig.scale = (0.3, 0.1, 1.2), (0.2, 0.0, 0.8), (1.5, -0.8, 0.6)
    for attr in ("location", "rotation_euler", "scale"):
        rig.keyframe_insert(attr, frame=5)
    bpy.context.scene.frame_set(1)
    obj = cloth(n=5, pins=[20, 24], frames=(1, 5), location=(0.1, 0.0, 0.0),
                rotation=(0.3, 0.0, 0.0))
    obj.parent = rig
    from mathutils import Matrix
    obj.matrix_parent_inverse = Matrix.Translation((0.0, 0.0, -0.5))  # as Ctrl+P sets one
    bpy.context.view_layer.update()
    matrices = []
    for f in range(1, 6):
        bpy.context.scene.frame_set(f)
        matrices.append(np.array(obj.matrix_world))
    linear = [m[:3, :3] for m in matrices]
    assert all(np.linalg.det(a) < 0 for a in linear)  # mirrored at every frame
    assert not np.allclose(linear[-1].T @ linear[-1], np.diag(np.diag(linear[-1].T @ linear[-1])),
                           atol=1e-3)  # rotation under non-uniform scale: a sheared frame
    targets = np.stack([evaluated_world(obj, f)[[20, 24]] for f in range(1, 6)])
    assert np.ptp(targets[:, 0, 0]) > 0.1  # the pins really travel with the parent
    expected = reference(obj, 4, pins=[20, 24], pin_targets=targets)
    assert _bake() == {"FINISHED"}
    assert_matches(obj, expected)


def test_linked_duplicates_sharing_a_mesh_are_refused_and_free_bake_still_works():
    a = cloth("Cloth", n=4, pins=[12, 15], frames=(1, 3))
    assert _bake() == {"FINISHED"}
    before, mesh_before = key_state(a), local_positions(a)
    b = a.copy()  # Alt+D: shares the mesh (and its shape keys), copies the settings
    bpy.context.scene.collection.objects.link(b)
    assert b.data == a.data and b.cloth_solver.role == "CLOTH" and b.cloth_solver.is_baked
    shared = (r"'Cloth' shares its mesh 'Cloth' with 'Cloth.001'; shape keys belong to the "
              r"mesh, so the bake would move those objects too. Make the mesh single-user")
    with pytest.raises(RuntimeError, match=shared):
        _bake()
    assert same_key_state(before, key_state(a))
    b.cloth_solver.role = "NONE"  # one cloth and a plain object on the same mesh: the same
    with pytest.raises(RuntimeError, match=shared):
        _bake()
    assert same_key_state(before, key_state(a)) and a.cloth_solver.is_baked

    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}  # both records, one set of keys
    assert a.data.shape_keys is None
    assert not a.cloth_solver.is_baked and not b.cloth_solver.is_baked
    np.testing.assert_array_equal(local_positions(a), mesh_before)

    b.data = a.data.copy()  # Make Single User > Object & Data
    b.cloth_solver.role = "CLOTH"
    assert _bake() == {"FINISHED"}
    for obj in (a, b):
        assert [kb.name for kb in obj.data.shape_keys.key_blocks] == \
            ["Basis", "cloth_0001", "cloth_0002", "cloth_0003"]
    assert a.data.shape_keys != b.data.shape_keys


def test_cloth_linked_from_a_library_is_refused(tmp_path):
    asset = cloth("Asset", n=4, pins=[12, 15], frames=(1, 3))  # set up as cloth in its library
    library = str(tmp_path / "assets.blend")
    bpy.data.libraries.write(library, {asset})
    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(library, link=True) as (_, linked):
        linked.objects = ["Asset"]
    obj = linked.objects[0]
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.scene.cloth_solver.frame_start, bpy.context.scene.cloth_solver.frame_end = 1, 3
    assert obj.library is not None and obj.cloth_solver.role == "CLOTH"
    with pytest.raises(RuntimeError, match=(
            f"'Asset' is linked from the library '{re.escape(library)}'; a bake written into "
            "it would be lost on reload. Make it local")):
        _bake()
    assert obj.data.shape_keys is None and not obj.cloth_solver.is_baked

    local = bpy.data.objects.new("Local", obj.data)  # a local object on the linked mesh
    bpy.context.scene.collection.objects.unlink(obj)
    bpy.context.scene.collection.objects.link(local)
    local.cloth_solver.role = "CLOTH"
    with pytest.raises(RuntimeError, match="the mesh of 'Local' is linked from the library"):
        _bake()
    assert local.data.shape_keys is None and not local.cloth_solver.is_baked


def _excluded_collection(name="Excluded"):
    coll = bpy.data.collections.new(name)
    bpy.context.scene.collection.children.link(coll)
    return coll


def _move_to(obj, coll):
    coll.objects.link(obj)
    bpy.context.scene.collection.objects.unlink(obj)


def test_hidden_cloth_bakes_and_unevaluated_objects_are_skipped_with_their_bake_kept():
    shown = cloth("Shown", n=4, pins=[12, 15], frames=(1, 3), location=(-2, 0, 1))
    eye = cloth("Eye", n=4, pins=[12, 15], frames=(1, 3), location=(0, 0, 1))
    monitor = cloth("Monitor", n=4, pins=[12, 15], frames=(1, 3), location=(2, 0, 1))
    outside = cloth("Outside", n=4, pins=[12, 15], frames=(1, 3), location=(4, 0, 1))
    wall = grid("Wall", 3, size=2.0, location=(4, 0, 0.9))
    wall.cloth_solver.role = "COLLIDER"
    coll = _excluded_collection()
    _move_to(outside, coll)
    _move_to(wall, coll)
    assert _bake() == {"FINISHED"}  # everything visible: all four bake
    kept = {o.name: key_state(o) for o in (monitor, outside)}

    eye.hide_set(True)  # hidden (eye icon): still evaluated, still baked
    monitor.hide_viewport = True  # disabled in viewports: not evaluated
    layer = bpy.context.view_layer
    layer.layer_collection.children["Excluded"].exclude = True  # not in the view layer
    for obj in (shown, eye, monitor, outside):
        obj.cloth_solver.solver = "MASS_SPRING"
    lines = []  # what `blender -b` prints
    job = addon().cloth_addon.bake.BakeJob(bpy.context, log=lines.append)
    assert lines == [
        "cloth_solver: warning: skipped cloth 'Monitor' (disabled in viewports (its own or its "
        "collection's monitor icon))",
        f"cloth_solver: warning: skipped cloth 'Outside' (excluded from the view layer "
        f"'{layer.name}')",
        f"cloth_solver: warning: skipped collider 'Wall' (excluded from the view layer "
        f"'{layer.name}')"]
    assert [c.obj.name for g in job.groups for c in g.cloths] == ["Shown", "Eye"]
    assert len(job.groups[0].spec.colliders) == 0  # the excluded collider too
    del job
    assert _bake() == {"FINISHED"}
    assert (shown.cloth_solver.bake_model, eye.cloth_solver.bake_model) == \
        ("mass_spring", "mass_spring")
    for obj in (monitor, outside):  # skipped: their previous bake is exactly as it was
        assert same_key_state(kept[obj.name], key_state(obj))
        assert obj.cloth_solver.bake_model == "implicit"
    report = bpy.context.scene.cloth_solver.last_report
    assert report.startswith("Baked 2 cloth objects (Shown, Eye)")
    assert report.endswith(
        "; skipped cloth 'Monitor' (disabled in viewports (its own or its collection's monitor "
        f"icon)), cloth 'Outside' (excluded from the view layer '{layer.name}'), "
        f"collider 'Wall' (excluded from the view layer '{layer.name}')")

    for obj in (shown, eye):
        obj.cloth_solver.role = "NONE"
    with pytest.raises(RuntimeError, match=(
            f"no cloth object to bake in view layer '{layer.name}': cloth 'Monitor' "
            r"\(disabled in viewports")):
        _bake()


def test_objects_changed_while_the_bake_simulates_stop_it_before_anything_is_written():
    a = cloth("A", n=4, pins=[12, 15], frames=(1, 3), location=(-1, 0, 1))
    b = cloth("B", n=4, pins=[12, 15], frames=(1, 3), location=(1, 0, 1))
    assert _bake() == {"FINISHED"}
    before = key_state(a)
    for obj in (a, b):
        obj.cloth_solver.solver = "MASS_SPRING"
    BakeJob = addon().cloth_addon.bake.BakeJob
    BakeError = addon().cloth_addon.errors.BakeError

    job = BakeJob(bpy.context).start()  # what the modal bake runs, between UI events
    advance(job, job.frames)
    own = b.data
    b.data = bpy.data.meshes.new("Other")  # the user gives B another mesh meanwhile
    b.data.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    with pytest.raises(BakeError, match="'B': its mesh changed from 16 to 3 vertices while "
                                        "baking; nothing was written"):
        job.finish()
    b.data = own
    assert same_key_state(before, key_state(a))  # A comes first, and was not rewritten either
    assert a.cloth_solver.bake_model == "implicit"

    job = BakeJob(bpy.context).start()
    advance(job, job.frames)
    bpy.data.objects.remove(b)  # deleted while the bake simulates
    with pytest.raises(BakeError, match="'B' was deleted while baking; nothing was written"):
        job.finish()
    assert same_key_state(before, key_state(a)) and a.cloth_solver.bake_model == "implicit"


def test_bad_objects_name_the_problem_and_keep_the_previous_bake():
    obj = cloth("Cloth", n=4, pins=[12, 15], frames=(1, 3))
    assert _bake() == {"FINISHED"}
    bpy.context.scene.frame_set(2)
    before = key_state(obj)

    def unchanged():
        bpy.context.scene.frame_set(2)
        return same_key_state(before, key_state(obj)) and obj.cloth_solver.is_baked

    wire = bpy.data.objects.new("Wire", bpy.data.meshes.new("Wire"))
    wire.data.from_pydata([(0, 0, 0), (1, 0, 0), (1, 1, 0)], [(0, 1), (1, 2)], [])
    bpy.context.scene.collection.objects.link(wire)
    wire.cloth_solver.role = "CLOTH"
    with pytest.raises(RuntimeError, match="'Wire' has no faces; cloth and colliders need faces"):
        _bake()
    assert unchanged() and wire.data.shape_keys is None
    wire.cloth_solver.role = "COLLIDER"
    with pytest.raises(RuntimeError, match="'Wire' has no faces"):
        _bake()
    assert unchanged()
    wire.cloth_solver.role = "NONE"

    obj.keyframe_insert("scale", frame=1)  # flattened to zero thickness along Z on frame 3:
    obj.scale = (1.0, 1.0, 0.0)  # the cloth simulates, but no key can hold it in local space
    obj.keyframe_insert("scale", frame=3)
    with pytest.raises(RuntimeError, match="'Cloth' has zero scale on some axis"):
        _bake()
    obj.animation_data_clear()
    obj.scale = (1.0, 1.0, 1.0)
    assert unchanged()

    bpy.context.view_layer.objects.active = obj
    obj.select_set(True)
    assert bpy.ops.object.mode_set(mode="EDIT") == {"FINISHED"}
    with pytest.raises(RuntimeError, match="'Cloth' is in Edit Mode; leave it before baking"):
        _bake()
    assert bpy.ops.object.mode_set(mode="OBJECT") == {"FINISHED"}
    assert unchanged()

    # A loose vertex (no face, no mass) bakes too: it stays put, as the solver keeps it.
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    obj.data.vertices.add(1)
    obj.data.vertices[-1].co = (0.0, 0.0, 0.5)
    obj.data.update()
    assert _bake() == {"FINISHED"}
    worlds = np.stack([evaluated_world(obj, f) for f in (1, 2, 3)])
    assert np.isfinite(worlds).all() and worlds.shape == (3, 17, 3)
    np.testing.assert_allclose(worlds[:, 16], [[0.0, 0.0, 0.5]] * 3, atol=1e-6)
    assert worlds[-1, :16, 2].min() < -1e-3  # while the cloth falls
