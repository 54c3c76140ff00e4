"""The Quality menu (Final / Preview): drawn in the solver panel, greyed out for the explicit
model, and a Preview bake is the solver's Preview run."""

from __future__ import annotations

import numpy as np

import bpy
from scenes import addon, assert_matches, cloth, reference
from test_registration import FakePanel, _draw_all


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


def _steps(obj):
    """What the Steps panel draws (from its own class: it starts closed)."""
    bpy.context.view_layer.objects.active = obj
    panel = addon().cloth_addon.panels.PHYSICS_PT_cloth_solver_quality
    log = []
    panel.draw(FakePanel(log, panel), bpy.context)
    return log


def test_steps_panel_shows_the_counts_the_bake_uses():
    """Custom off: the quality's counts (from the solver's QUALITIES), never the stored values the
    bake ignores; custom on: the stored value, editable."""
    qualities = addon().solver.QUALITIES
    obj = cloth(n=3)
    s = obj.cloth_solver
    assert not s.use_custom_substeps and not s.use_custom_newton_iterations
    for quality, name in (("PREVIEW", "Preview"), ("FINAL", "Final")):
        s.quality = quality
        log = _steps(obj)
        counts = qualities[quality.lower()]
        assert ("label", f"{counts['substeps']} ({name})") in log
        assert ("label", f"{counts['newton_iterations']} ({name})") in log
        assert ("prop", "substeps") not in log and ("prop", "newton_iterations") not in log
    s.quality = "PREVIEW"
    assert s.substeps != qualities["preview"]["substeps"]  # the stored value would mislead
    s.use_custom_substeps = s.use_custom_newton_iterations = True
    log = _steps(obj)
    assert ("prop", "substeps") in log and ("prop", "newton_iterations") in log
    assert not any(kind == "label" for kind, _ in log)
    s.solver, s.use_custom_substeps = "MASS_SPRING", False  # finds its stable step itself
    log = _steps(obj)
    assert ("label", "Automatic") in log and ("prop", "substeps") not in log
    assert ("prop", "integrator") in log
