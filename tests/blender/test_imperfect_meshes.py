"""Meshes as artists bring them: a cloth with a degenerate face, a collapsed quad or a
zero-length edge bakes like the sound cloth and the summary names what was simulated around
(solver/degenerate.py); a bake whose cloth tears apart fails and keeps the previous bake, as
every failed bake does (its message is the solver's: the same in the status bar and, through
``blender -b``'s exit status, in a pipeline)."""

from __future__ import annotations

import bpy
import numpy as np
import pytest

from scenes import cloth, evaluated_world, key_state, mesh_object, same_key_state, solver

N = 6  # vertices per side


def _break(obj, defect):
    """Give the cloth's mesh one defect in its middle (vertex coordinates only, as an artist
    scaling vertices to zero or snapping one onto another leaves it)."""
    mesh = obj.data
    quad = mesh.polygons[(N - 1) * (N // 2 - 1) + N // 2 - 1]
    v = [mesh.vertices[i] for i in quad.vertices]
    if defect == "collapsed quad":  # its four corners scaled to one point
        centre = sum((x.co for x in v), v[0].co * 0) / 4
        for x in v:
            x.co = centre
    elif defect == "zero-length edge":  # one corner snapped onto its neighbour
        v[1].co = v[0].co
    elif defect == "degenerate face":  # its other two corners moved onto its diagonal 0-2:
        v[1].co = v[0].co.lerp(v[2].co, 1 / 3)  # no two at one point, yet no area
        v[3].co = v[0].co.lerp(v[2].co, 2 / 3)
    mesh.update()
    return quad.index


@pytest.mark.parametrize("defect", ["collapsed quad", "zero-length edge", "degenerate face"])
def test_a_cloth_with_a_degenerate_element_bakes_like_a_sound_one(defect):
    sound = cloth("Sound", n=N, pins=[N * (N - 1), N * N - 1], frames=(1, 6))
    obj = cloth("Cloth", n=N, pins=[N * (N - 1), N * N - 1], frames=(1, 6))
    face = _break(obj, defect)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    report = bpy.context.scene.cloth_solver.last_report
    assert "'Cloth': " in report and "Merge by Distance" in report
    if defect != "zero-length edge":
        assert f"face {face} without area" in report
    if defect != "degenerate face":
        assert "joined by zero-length edges" in report
    assert obj.cloth_solver.bake_max_strain < 0.06  # cotton's 5 % limit, not 300 %
    x, ref = evaluated_world(obj, 6), evaluated_world(sound, 6)
    assert np.all(np.abs(x) < 2.0)
    far = np.arange(N)  # the free edge swings as the sound cloth's does
    assert np.max(np.linalg.norm(x[far] - ref[far], axis=1)) < 0.05


def test_a_cloth_torn_apart_fails_the_bake_and_keeps_the_previous_one():
    """Its two pinned corners follow the object scaled 4x in two frames: the cloth between
    them cannot follow. The bake fails with the solver's message; nothing is written."""
    obj = cloth(n=4, pins=[12, 15], frames=(1, 3))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    evaluated_world(obj, 1)
    before = key_state(obj)
    obj.scale = (1, 1, 1)
    obj.keyframe_insert("scale", frame=1)
    obj.scale = (4, 4, 4)
    obj.keyframe_insert("scale", frame=3)
    with pytest.raises(RuntimeError, match=r"'Cloth': frame \d: simulation blew up \(the cloth "
                                           r"tore apart: the edge between vertices"):
        bpy.ops.cloth_solver.bake()
    assert same_key_state(before, key_state(obj))


def test_a_cloth_split_along_duplicate_vertices_bakes_and_the_summary_says_where():
    """Two halves whose faces never share their middle row of vertices (an STL import, or
    Split): the bake simulates them as they are, and the summary names the vertices."""
    g = solver().grid_mesh((1.0, 0.5), (4, 3), (0.0, -0.25, 0.0))
    h = solver().grid_mesh((1.0, 0.5), (4, 3), (0.0, 0.25, 0.0))
    obj = mesh_object("Split", np.concatenate([g.positions, h.positions]),
                      list(g.faces()) + [f + 12 for f in h.faces()], location=(0, 0, 1))
    obj.cloth_solver.role = "CLOTH"
    bpy.context.scene.cloth_solver.frame_start, bpy.context.scene.cloth_solver.frame_end = 1, 3
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert ("'Split': vertices 8, 9, 10, 11, 12, … lie on other vertices without an edge "
            "between them: the cloth is split there") in bpy.context.scene.cloth_solver.last_report
