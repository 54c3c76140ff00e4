"""Sewing in Blender: with the Sewing toggle on, the cloth mesh's loose edges are seams that
close; off, they are ignored, as Blender's own cloth ignores them without its Sewing."""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from scenes import evaluated_world


def _sewn_panels():
    """Two 0.2 m panels 6 cm apart in one object; loose edges join the left panel's right
    column to the right panel's left column; the left panel is pinned at its left edge."""
    n = 5
    xs = np.linspace(-0.1, 0.1, n)
    g = np.stack(np.meshgrid(xs, xs), -1).reshape(-1, 2)  # vertex (i, j) at j * n + i
    left = np.column_stack([g[:, 0] - 0.13, g[:, 1], np.full(len(g), 1.0)])
    right = np.column_stack([g[:, 0] + 0.13, g[:, 1], np.full(len(g), 1.0)])
    quads = [(j * n + i, j * n + i + 1, (j + 1) * n + i + 1, (j + 1) * n + i)
             for j in range(n - 1) for i in range(n - 1)]
    V = n * n
    faces = quads + [tuple(v + V for v in q) for q in quads]
    seams = [(j * n + n - 1, V + j * n) for j in range(n)]
    mesh = bpy.data.meshes.new("Panels")
    mesh.from_pydata([tuple(p) for p in np.concatenate([left, right])], seams, faces)
    mesh.update()
    obj = bpy.data.objects.new("Panels", mesh)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.update()
    s = obj.cloth_solver
    s.role = "CLOTH"
    vg = obj.vertex_groups.new(name="pins")
    vg.add([j * n for j in range(n)], 1.0, "REPLACE")
    s.pin_group = "pins"
    bpy.context.scene.cloth_solver.frame_start, bpy.context.scene.cloth_solver.frame_end = 1, 13
    return obj, np.array(seams)


def _gaps(obj, seams, frame):
    x = evaluated_world(obj, frame)
    return np.linalg.norm(x[seams[:, 1]] - x[seams[:, 0]], axis=1)


@pytest.mark.parametrize("sewing", [True, False])
def test_loose_edges_are_seams_only_with_sewing_on(sewing):
    obj, seams = _sewn_panels()
    loose = sum(1 for e in obj.data.edges if not any(
        set(e.vertices) <= set(p.vertices) for p in obj.data.polygons))
    assert loose == len(seams)
    obj.cloth_solver.use_sewing = sewing
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    gaps = _gaps(obj, seams, 13)
    assert _gaps(obj, seams, 1) == pytest.approx(0.06)
    if sewing:  # closed to within the cloth thickness
        assert gaps.max() < obj.cloth_solver.cloth_thickness
    else:  # the right panel falls away, as if the loose edges were not there
        assert gaps.min() > 0.1


def test_a_loose_edge_off_the_faces_is_named_when_sewing():
    obj, _ = _sewn_panels()
    mesh = obj.data
    v = len(mesh.vertices)
    mesh.vertices.add(1)
    mesh.vertices[v].co = (0.0, 0.5, 1.0)
    e = len(mesh.edges)
    mesh.edges.add(1)
    mesh.edges[e].vertices = (0, v)
    mesh.update()
    obj.cloth_solver.use_sewing = True
    before = [k.name for k in (mesh.shape_keys.key_blocks if mesh.shape_keys else [])]
    with pytest.raises(RuntimeError, match=f"loose edge between vertices 0 and {v}"):
        bpy.ops.cloth_solver.bake()
    after = [k.name for k in (mesh.shape_keys.key_blocks if mesh.shape_keys else [])]
    assert after == before  # nothing written


def _panel(name, x, pinned):
    """A 0.2 m 5 x 5 panel centred at (x, 0, 1) in its own object, with a vertex group
    'seam' on its column facing the other panel."""
    n = 5
    xs = np.linspace(-0.1, 0.1, n)
    g = np.stack(np.meshgrid(xs, xs), -1).reshape(-1, 2)
    pos = np.column_stack([g[:, 0] + x, g[:, 1], np.full(len(g), 1.0)])
    quads = [(j * n + i, j * n + i + 1, (j + 1) * n + i + 1, (j + 1) * n + i)
             for j in range(n - 1) for i in range(n - 1)]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(p) for p in pos], [], quads)
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.cloth_solver.role = "CLOTH"
    column = (n - 1) if x < 0 else 0
    obj.vertex_groups.new(name="seam").add([j * n + column for j in range(n)], 1.0, "REPLACE")
    if pinned:
        obj.vertex_groups.new(name="pins").add([j * n for j in range(n)], 1.0, "REPLACE")
        obj.cloth_solver.pin_group = "pins"
    return obj


def test_a_seam_between_two_objects_closes():
    """A sleeve sewn to a bodice, in small: two objects, a vertex group 'seam' on each, the
    first sewn to the second."""
    left, right = _panel("Bodice", -0.13, True), _panel("Sleeve", 0.13, False)
    bpy.context.scene.cloth_solver.frame_start, bpy.context.scene.cloth_solver.frame_end = 1, 13
    bpy.context.view_layer.update()
    s = left.cloth_solver
    s.use_sewing, s.sew_to, s.seam_group = True, right, "seam"
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    a, b = evaluated_world(left, 13), evaluated_world(right, 13)
    gaps = np.linalg.norm(a[np.arange(5) * 5 + 4] - b[np.arange(5) * 5], axis=1)
    assert gaps.max() < s.cloth_thickness
    # a seam group of another vertex count is named, and nothing is baked
    right.vertex_groups["seam"].add([1], 1.0, "REPLACE")
    with pytest.raises(RuntimeError, match="seam lines have 5 and 6 vertices"):
        bpy.ops.cloth_solver.bake()


def test_a_new_loose_edge_outdates_a_sewn_bake():
    obj, _ = _sewn_panels()
    obj.cloth_solver.use_sewing = True
    bpy.context.scene.cloth_solver.frame_end = 3
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    bpy.context.view_layer.update()
    assert obj.cloth_solver.bake_outdated == ""
    mesh = obj.data
    e = len(mesh.edges)
    mesh.edges.add(1)
    mesh.edges[e].vertices = (0, 25)  # another seam
    mesh.update()
    bpy.context.view_layer.update()
    assert "mesh" in obj.cloth_solver.bake_outdated
