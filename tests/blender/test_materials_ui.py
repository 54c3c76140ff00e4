"""What an artist sees of the material: a new cloth is the Cotton preset (strain limit included)
and says so, "(edited)" once it differs; every value is shown in a readable unit and converts
back to the same SI value; the weft is a toggle whose value follows the warp and the preset;
files saved before new cloth started from a preset keep their old material."""

from __future__ import annotations

import math

import bpy
import pytest

from scenes import addon, cloth, grid
from test_registration import _draw_all


def _pkg():
    return addon().cloth_addon


def _material(obj):
    return _pkg().convert.material_from_props(obj.cloth_solver)


def _header(obj):
    bpy.context.view_layer.objects.active = obj
    log = _draw_all(bpy.context)
    i = log.index(("menu", "CLOTH_SOLVER_MT_presets"))
    return log[i + 1][1]


def test_a_new_cloth_is_the_cotton_preset_strain_limit_included():
    cotton = addon().solver.load_preset("cotton")
    assert cotton.max_strain == 0.05
    obj = cloth(n=3)
    assert _material(obj) == cotton
    assert obj.cloth_solver.use_max_strain and obj.cloth_solver.max_strain_display == \
        pytest.approx(5.0)
    assert obj.cloth_solver.preset == "Cotton"
    assert _header(obj) == "Cotton"
    # The defaults any mesh shows before its role is set are the same.
    fresh = grid("Fresh", 3)
    assert _material(fresh) == cotton and fresh.cloth_solver.preset == "Cotton"


def test_an_edited_value_shows_the_preset_as_edited_until_set_back():
    obj = cloth(n=3)
    s = obj.cloth_solver
    s.bend_stiffness_display = 12.0  # µN·m
    assert s.bend_stiffness == pytest.approx(12e-6)
    assert _header(obj) == "Cotton (edited)"
    cotton = addon().solver.load_preset("cotton")
    s.bend_stiffness_display = cotton.bend_stiffness * 1e6  # the preset's value: not edited
    assert _header(obj) == "Cotton"
    s.use_max_strain = False  # switching the limit off is an edit too
    assert _header(obj) == "Cotton (edited)"
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.cloth_solver.preset_apply(name="denim") == {"FINISHED"}
    assert _header(obj) == "Denim"
    s.area_density = 0.0  # a value the solver refuses is still shown as an edit, not an error
    assert _header(obj) == "Denim (edited)"


def test_user_preset_shows_edited_too():
    obj = cloth(n=3)
    bpy.context.view_layer.objects.active = obj
    obj.cloth_solver.shear_stiffness_display = 70.0
    assert bpy.ops.cloth_solver.preset_save(name="Stiff Shirt") == {"FINISHED"}
    try:
        assert _header(obj) == "Stiff Shirt"
        obj.cloth_solver.shear_stiffness_display = 71.0
        assert _header(obj) == "Stiff Shirt (edited)"
    finally:
        assert bpy.ops.cloth_solver.preset_remove(name="stiff_shirt") == {"FINISHED"}
    assert _header(obj) == "Stiff Shirt"  # its file is gone: the name as it was


def _si_values(name, spec):
    """SI values to convert: every shipped preset's, the bounds, and a few in between."""
    S = addon().solver
    out = {getattr(S.load_preset(p), name) for p in S.list_presets()}
    out |= {spec.maximum, spec.minimum if not spec.exclusive_min else spec.maximum * 1e-6}
    out |= {spec.maximum * f for f in (1e-5, 1e-3, 0.37)}
    return sorted(v for v in out if v is not None)


def test_display_and_si_round_trip_for_every_field():
    pkg = _pkg()
    convert = pkg.convert
    obj = cloth(n=3)
    s = obj.cloth_solver
    s.use_stretch_stiffness_weft = True
    s.use_max_strain = True
    assert set(convert.MATERIAL_DISPLAYS) == set(convert.MATERIAL_SPECS)
    for name, spec in convert.MATERIAL_SPECS.items():
        d = convert.MATERIAL_DISPLAYS[name]
        si_prop, shown_prop = convert.prop_name(name), convert.display_prop_name(name)
        for si in _si_values(name, spec):
            shown = convert.to_display(name, si)
            assert shown == pytest.approx(si * d.scale, rel=1e-12), name
            assert convert.from_display(name, shown) == pytest.approx(si, rel=1e-6), name
            # Through Blender's properties (single precision): the panel's number sets the
            # stored SI value, and the SI value reads back as the panel's number.
            setattr(s, shown_prop, shown)
            assert getattr(s, si_prop) == pytest.approx(si, rel=1e-6), (name, si)
            setattr(s, si_prop, si)
            assert getattr(s, shown_prop) == pytest.approx(shown, rel=1e-6), (name, si)
    # Every preset value reads at a readable magnitude in its unit: neither 0.000000 nor huge.
    S = addon().solver
    for p in S.list_presets():
        material = S.load_preset(p)
        for name, d in convert.MATERIAL_DISPLAYS.items():
            v = getattr(material, name)
            if v is None or name in ("friction",):
                continue
            shown = convert.to_display(name, v)
            assert 10 ** -d.precision <= shown < 1e5, (p, name, shown, d.unit)
            assert shown * 10 ** d.precision >= 1.0, (p, name, shown)  # at least one digit


def test_weft_toggle_follows_the_warp_and_the_preset():
    obj = cloth(n=3)
    s = obj.cloth_solver
    bpy.context.view_layer.objects.active = obj
    assert not s.use_stretch_stiffness_weft
    assert s.stretch_stiffness_weft_display == pytest.approx(4000.0)  # Cotton's warp, shown
    s.stretch_stiffness_display = 3000.0
    assert s.stretch_stiffness_weft_display == pytest.approx(3000.0)  # follows while off
    assert _material(obj).stretch_stiffness_weft is None
    s.use_stretch_stiffness_weft = True  # starts from the warp it followed, no hidden value
    assert s.stretch_stiffness_weft == pytest.approx(3000.0)
    assert _material(obj).weft_stiffness == pytest.approx(3000.0)
    # A preset with a different weft turns it on with the preset's value ...
    assert bpy.ops.cloth_solver.preset_apply(name="denim") == {"FINISHED"}
    assert s.use_stretch_stiffness_weft and s.stretch_stiffness_weft_display == \
        pytest.approx(410.0)
    # ... one without turns it off, and the weft shows (and is) the preset's warp.
    assert bpy.ops.cloth_solver.preset_apply(name="cotton") == {"FINISHED"}
    assert not s.use_stretch_stiffness_weft
    assert s.stretch_stiffness_weft_display == pytest.approx(4000.0)
    assert s.stretch_stiffness_weft == pytest.approx(4000.0)
    assert _material(obj) == addon().solver.load_preset("cotton")
    s.use_stretch_stiffness_weft = True
    assert _material(obj).weft_stiffness == pytest.approx(4000.0)  # ticking it changes nothing
    s.use_stretch_stiffness_weft = False
    # Typing a weft of its own (in the inactive field) switches the override on.
    s.stretch_stiffness_weft_display = 2500.0
    assert s.use_stretch_stiffness_weft and _material(obj).weft_stiffness == \
        pytest.approx(2500.0)


def test_old_file_keeps_its_material_and_a_new_cloth_stays_cotton(tmp_path):
    pkg = _pkg()
    props = pkg.properties
    old = cloth("Old", n=3)
    new = cloth("New", n=3)
    s = old.cloth_solver
    # What a file saved before stores: the role, the values the user set, no version stamp.
    s.stretch_stiffness = 3000.0
    s.property_unset("material_version")
    s.property_unset("preset")
    s.property_unset("preset_ident")
    assert not s.is_property_set("area_density")
    path = str(tmp_path / "old.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    old, new = bpy.data.objects["Old"], bpy.data.objects["New"]
    m = _material(old)
    legacy = props.LEGACY_DEFAULTS
    assert m.stretch_stiffness == pytest.approx(3000.0)  # set by the user: kept
    assert m.area_density == pytest.approx(legacy["area_density"])  # the old default
    assert m.bend_stiffness == pytest.approx(legacy["bend_stiffness"])
    assert m.max_strain is None and m.stretch_stiffness_weft is None  # no limit, as before
    assert old.cloth_solver.preset == "" and old.cloth_solver.bake_outdated == ""
    assert old.cloth_solver.material_version == props.MATERIAL_VERSION
    assert _material(new) == addon().solver.load_preset("cotton")
    assert new.cloth_solver.preset == "Cotton"


def test_old_file_keeps_a_newton_count_set_by_hand(tmp_path):
    """Files saved before the quality chose the Newton count had no Custom toggle: a count set
    by hand switches it on (and outdates nothing); an untouched count follows the quality."""
    by_hand, untouched = cloth("ByHand", n=3), cloth("Untouched", n=3)
    by_hand.cloth_solver.newton_iterations = 5
    for obj in (by_hand, untouched):
        obj.cloth_solver.property_unset("use_custom_newton_iterations")
    path = str(tmp_path / "old_newton.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    by_hand, untouched = bpy.data.objects["ByHand"], bpy.data.objects["Untouched"]
    solver_settings = _pkg().convert.solver_settings_from_props
    assert by_hand.cloth_solver.use_custom_newton_iterations
    assert solver_settings(by_hand.cloth_solver).newton_iterations == 5
    assert by_hand.cloth_solver.bake_outdated == ""
    assert not untouched.cloth_solver.use_custom_newton_iterations
    assert solver_settings(untouched.cloth_solver).newton_iterations is None


def test_labels_and_units_fit_the_default_properties_editor():
    """Short labels in the label column and the unit after the value: Blender 3.4 draws
    labels up to about 14 characters and units up to 7 uncut in a 320 px wide Properties
    editor at scale 1 (docs/ui/, scripts/screenshot_panels.py)."""
    convert = _pkg().convert
    for name, d in convert.MATERIAL_DISPLAYS.items():
        assert d.label and len(d.label) <= 14, d.label
        assert len(d.unit) <= 7, d.unit
        assert math.isfinite(d.scale) and d.scale > 0


def test_editing_a_shown_value_outdates_the_bake():
    obj = cloth(n=3, frames=(1, 2))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    bake_status = _pkg().bake_status
    assert bake_status.status(obj, bpy.context.scene)[0] == "BAKED"
    obj.cloth_solver.bend_stiffness_display = 12.0  # the panel's field sets the SI value
    assert bake_status.status(obj, bpy.context.scene) == (
        "OUTDATED", "Outdated: the cloth settings of 'Cloth' changed")
