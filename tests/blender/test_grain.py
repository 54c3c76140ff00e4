"""The fabric's grain in Blender: warp along the active UV map's U, else along the object's own
X axis, so an anisotropic cloth keeps its grain when the object or its UV layout turns."""

from __future__ import annotations

import bpy
import numpy as np

from scenes import addon, assert_matches, cloth, evaluated_world, reference


def _denim(obj):
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.cloth_solver.preset_apply(name="denim") == {"FINISHED"}


def _uv_map(obj, turn: bool):
    """A UV map from the object's local XY (turned 90°: U along local Y)."""
    layer = obj.data.uv_layers.new(name="UVMap")
    co = np.array([obj.data.vertices[i].co[:2] for p in obj.data.polygons
                   for i in p.vertices])
    uv = co[:, ::-1] * np.array([1.0, -1.0]) if turn else co
    layer.data.foreach_set("uv", uv.astype(np.float32).ravel())
    obj.data.uv_layers.active = layer


def _bake(obj) -> np.ndarray:
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    return np.array([evaluated_world(obj, f) for f in (1, 2, 3, 4)])


def test_the_grain_follows_the_uv_map_and_else_the_object_axis():
    solver = addon().solver
    denim = solver.load_preset("denim")
    assert denim.weft_stiffness < 0.5 * denim.stretch_stiffness  # anisotropic
    results = {}
    for name, turn in (("no UV", None), ("UV", False), ("UV turned", True)):
        for o in list(bpy.data.objects):
            bpy.data.objects.remove(o)
        obj = cloth("Cloth", n=6, pins=[30, 35], frames=(1, 4), location=(0, 0, 1))
        _denim(obj)
        if turn is not None:
            _uv_map(obj, turn)
        results[name] = _bake(obj)
        expected = reference(obj, 3, pins=[30, 35], material=denim)
        assert_matches(obj, expected)
    # U along local X is the object's X axis: the same grain as no UV map at all
    np.testing.assert_allclose(results["UV"], results["no UV"], atol=1e-5)
    # U along local Y turns the stiff warp across the cloth: it hangs differently
    assert np.abs(results["UV turned"] - results["UV"]).max() > 1e-3
