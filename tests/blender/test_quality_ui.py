"""The Quality menu (Final / Preview): drawn in the solver panel, greyed out for the explicit
model, and a Preview bake is the solver's Preview run."""

from __future__ import annotations

import numpy as np

import bpy
from scenes import assert_matches, cloth, reference
from test_registration import _draw_all


def _drawn(obj):
    bpy.context.view_layer.objects.active = obj
    return _draw_all(bpy.context)


def test_quality_menu_defaults_to_final_and_says_it_is_for_the_implicit_model():
    obj = cloth(n=3)
    assert obj.cloth_solver.quality == "FINAL"
    log = _drawn(obj)
    assert ("prop", "quality") in log
    assert not any(kind == "label" and "Quality" in text for kind, text in log)
    obj.cloth_solver.solver = "MASS_SPRING"
    log = _drawn(obj)
    assert ("prop", "quality") in log
    assert ("label", "Quality: implicit model only") in log


def test_preview_bake_is_the_solvers_preview_run():
    obj = cloth(n=9, pins=[72, 80], frames=(1, 13))
    obj.cloth_solver.quality = "PREVIEW"
    preview = reference(obj, 12, pins=[72, 80], quality="preview")
    final = reference(obj, 12, pins=[72, 80])
    assert np.abs(preview - final).max() > 1e-4  # the menu reaches the solver: Preview differs
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert_matches(obj, preview)
