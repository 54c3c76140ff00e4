"""Bake To: Disk Cache: each cloth's frames in a PC2 file that Blender's own Mesh Cache modifier
reads, written frame by frame while simulating, round-tripping bit for bit; the bake status,
Free Bake, re-bake and cancel behave as with shape keys (disk_cache.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import bpy
from scenes import addon, advance, cloth, evaluated_local



def _saved_scene(tmp_path, frames=(1, 6)):
    obj = cloth(n=5, pins=[20, 24], frames=frames, location=(0.1, 0.0, 1.0))
    sub = obj.modifiers.new("Subdivision", "SUBSURF")
    sub.show_viewport = False
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    return bpy.data.objects["Cloth"]


def test_a_disk_cache_bake_round_trips_bit_for_bit_through_the_mesh_cache_modifier(tmp_path):
    obj = _saved_scene(tmp_path)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}  # shape keys, for comparison
    keys = [evaluated_local(obj, f) for f in range(1, 7)]
    bpy.ops.cloth_solver.free_bake()
    bpy.context.scene.cloth_solver.bake_to = "PC2"
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    s = obj.cloth_solver
    path = tmp_path / "cloth_cache" / "Cloth.pc2"
    assert path.is_file() and not list(path.parent.glob("*.part"))
    assert (s.is_baked, s.bake_frame_start, s.bake_frame_end) == (True, 1, 6)
    assert s.bake_cache_file == "//cloth_cache/Cloth.pc2"  # relative: travels with the file
    assert obj.data.shape_keys is None  # nothing per frame in the .blend
    assert [m.name for m in obj.modifiers] == ["Cloth Cache", "Subdivision"]
    frames, start = addon().solver.read_pc2(path)
    assert frames.shape == (6, 25, 3) and start == 1.0
    for i, f in enumerate(range(1, 7)):
        np.testing.assert_array_equal(evaluated_local(obj, f), frames[i])  # bit for bit
        np.testing.assert_allclose(frames[i], keys[i], atol=2e-6)  # the same bake as keys
    status = addon().cloth_addon.bake_status.status(obj, bpy.context.scene)
    assert status == ("BAKED", "Baked frames 1-6 (implicit)")
    # what Blender shows is the solver's own positions, as float32 object-local coordinates
    job = addon().cloth_addon.bake.BakeJob(bpy.context)
    job.run()
    c, to_local = job.groups[0].cloths[0], addon().cloth_addon.mesh_io.to_local
    for i, f in enumerate(range(1, 7)):
        solver_local = to_local(job.groups[0].frames[i], c.matrices[i]).astype(np.float32)
        np.testing.assert_array_equal(evaluated_local(obj, f), solver_local)
    # saved and reopened: the modifier finds the file relative to the .blend
    bpy.ops.wm.save_mainfile()
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "shot.blend"))
    obj = bpy.data.objects["Cloth"]
    np.testing.assert_array_equal(evaluated_local(obj, 4), frames[3])


def test_free_rebake_and_cancel_behave_as_with_keys(tmp_path):
    obj = _saved_scene(tmp_path, frames=(1, 30))
    bpy.context.scene.cloth_solver.bake_to = "PC2"
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    path = tmp_path / "cloth_cache" / "Cloth.pc2"
    first = path.read_bytes()
    # a re-bake cancelled half-way: the previous cache, its modifier and record stay as they were
    obj.cloth_solver.solver = "MASS_SPRING"
    job = addon().cloth_addon.bake.BakeJob(bpy.context).start(live=True)
    advance(job, 3)
    part = path.with_name("Cloth.pc2.part")
    assert part.is_file()  # written frame by frame while simulating
    job.cancel()
    assert path.read_bytes() == first and not part.exists()
    assert [m.type for m in obj.modifiers] == ["MESH_CACHE", "SUBSURF"]
    assert obj.cloth_solver.bake_model == "implicit"
    # a re-bake replaces the file in place, reading the cloth without the previous cache
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert obj.cloth_solver.bake_model == "mass_spring" and path.read_bytes() != first
    assert [m.name for m in obj.modifiers] == ["Cloth Cache", "Subdivision"]
    assert not list(path.parent.glob("*.p*rt")) and not list(path.parent.glob("*.previous"))
    frames, _ = addon().solver.read_pc2(path)
    np.testing.assert_allclose(frames[0], _rest(obj), atol=1e-6)  # starts from the mesh itself
    # Free Bake removes the modifier and deletes the file, as Blender's own Free Bake does
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert not path.exists() and [m.name for m in obj.modifiers] == ["Subdivision"]
    assert not obj.cloth_solver.is_baked and obj.cloth_solver.bake_cache_file == ""


def _rest(obj) -> np.ndarray:
    buf = np.empty(len(obj.data.vertices) * 3, dtype=np.float32)
    obj.data.vertices.foreach_get("co", buf)
    return buf.reshape(-1, 3)


def test_a_relative_cache_directory_needs_a_saved_file():
    obj = cloth(n=4, pins=[12, 15], frames=(1, 3))
    bpy.context.scene.cloth_solver.bake_to = "PC2"
    with pytest.raises(RuntimeError, match="relative to the .blend file, which is not saved"):
        bpy.ops.cloth_solver.bake()
    assert not obj.cloth_solver.is_baked and [m.name for m in obj.modifiers] == []


def test_a_stopped_disk_cache_bake_keeps_the_frames_so_far(tmp_path):
    obj = _saved_scene(tmp_path, frames=(1, 40))
    bpy.context.scene.cloth_solver.bake_to = "PC2"
    job = addon().cloth_addon.bake.BakeJob(bpy.context).start(limit=6)  # stopped before 40
    advance(job, 4)
    job.stop()
    while job.update(wait_s=0.05):
        pass
    summary = job.finish()
    kept = job.frames_kept
    assert summary.stopped_of == 40 and obj.cloth_solver.bake_frame_end == 1 + kept
    frames, _ = addon().solver.read_pc2(Path(tmp_path / "cloth_cache/Cloth.pc2"))
    assert len(frames) == kept + 1
    np.testing.assert_array_equal(evaluated_local(obj, 1 + kept), frames[-1])
