"""Register/unregister, properties generated from solver.params, and every panel drawing."""

from __future__ import annotations

import math
import sys

import bpy
import pytest

import dev_addon
from scenes import addon, cloth, grid


def _registered() -> bool:
    return (hasattr(bpy.types.Object, "cloth_solver") and hasattr(bpy.types.Scene, "cloth_solver")
            and hasattr(bpy.types, "PHYSICS_PT_cloth_solver")
            and hasattr(bpy.types, "CLOTH_SOLVER_OT_bake"))


def _our_handlers() -> dict[str, int]:
    """How many of the add-on's functions each app handler list holds."""
    return {name: sum(fn.__module__.endswith("cloth_addon.operators")
                      for fn in getattr(bpy.app.handlers, name))
            for name in ("undo_pre", "redo_pre", "load_pre")}


def test_register_and_unregister_repeatedly(addon_module, scratch_root):
    assert _registered()
    assert _our_handlers() == {"undo_pre": 1, "redo_pre": 1, "load_pre": 1}
    for _ in range(3):
        dev_addon.disable(addon_module)
        assert not hasattr(bpy.types.Object, "cloth_solver")
        assert not hasattr(bpy.types, "PHYSICS_PT_cloth_solver")
        assert not hasattr(bpy.types, "CLOTH_SOLVER_OT_bake")
        assert _our_handlers() == {"undo_pre": 0, "redo_pre": 0, "load_pre": 0}
        dev_addon.enable(scratch_root)
        assert _registered()
        assert _our_handlers() == {"undo_pre": 1, "redo_pre": 1, "load_pre": 1}
    obj = cloth(n=3, frames=(1, 2))  # the re-registered properties work
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert obj.data.shape_keys.key_blocks[-1].name == "cloth_0002"


def test_a_blender_without_numpy_is_told_what_to_install(monkeypatch):
    """Debian's Blender 3.4 without python3-numba (and so without numpy) ended enabling the
    add-on in a raw "No module named 'numpy'"; registration now names the missing package and
    the command that installs it into the Python this Blender runs, before touching anything."""
    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy fails, as without it
    with pytest.raises(ImportError) as info:
        addon().register()
    message = str(info.value)
    assert "Cloth Solver needs numpy, scipy and numba" in message
    assert "which lacks numpy (" in message
    if sys.prefix.startswith("/usr"):  # Debian's blender: the system's Python, apt
        assert "sudo apt install python3-numpy python3-scipy python3-numba" in message
    else:
        assert f'"{sys.executable}" -m pip install numpy scipy numba' in message
    assert _registered()


def test_material_properties_come_from_the_parameter_table():
    """Each material field is stored in SI (bounds, doc from the FieldSpec) and drawn through
    a display twin in the unit and magnitude of its Display (bounds scaled, unit in the name);
    the defaults are the new-cloth preset's."""
    pkg = addon()
    params = pkg.solver.params
    specs = params.field_specs(params.MaterialParams)
    displays = params.field_displays(params.MaterialParams)
    cotton = pkg.solver.load_preset("cotton")
    props = pkg.cloth_addon.properties
    rna = props.ClothSolverObjectSettings.bl_rna.properties
    for name, spec in specs.items():
        d = displays[name]
        si, shown = rna[props.prop_name(name)], rna[props.display_prop_name(name)]
        for prop, scale in ((si, 1.0), (shown, d.scale)):
            assert math.isclose(prop.hard_min, spec.minimum * scale, rel_tol=1e-6,
                                abs_tol=1e-30), name
            assert math.isclose(prop.hard_max, spec.maximum * scale, rel_tol=1e-6), name
            assert spec.doc[1:] in prop.description, name
        if spec.unit not in ("", "1"):
            assert f"({spec.unit})" in si.name, name
        if d.unit:
            assert f"({d.unit})" in shown.name, name
        assert shown.precision == d.precision, name
        value = getattr(cotton, name)
        if spec.optional:
            assert rna[f"use_{props.prop_name(name)}"].default is (value is not None), name
        if value is None:  # the weft follows the warp; the strain limit starts at 5 %
            value = cotton.stretch_stiffness if name == "stretch_stiffness_weft" else 0.05
        assert math.isclose(si.default, value, rel_tol=1e-6), name
        assert math.isclose(shown.default, value * d.scale, rel_tol=1e-6), name


def test_solver_choices_are_the_registered_models():
    pkg = addon()
    rna = pkg.cloth_addon.properties.ClothSolverObjectSettings.bl_rna.properties
    items = [i.identifier for i in rna["solver"].enum_items]
    assert items == [m.upper() for m in pkg.solver.solvers.CLOTH_MODELS]
    assert {"MASS_SPRING", "IMPLICIT"} <= set(items)
    assert [i.identifier for i in rna["role"].enum_items] == ["NONE", "CLOTH", "COLLIDER", "YARN"]


def test_properties_map_to_validated_solver_parameters():
    pkg = addon()
    convert = pkg.cloth_addon.convert
    obj = cloth(n=3)
    s = obj.cloth_solver
    assert convert.material_from_props(s) == pkg.solver.load_preset("cotton")
    s.solver, s.use_custom_substeps, s.substeps, s.self_collision = "MASS_SPRING", True, 7, True
    settings = convert.solver_settings_from_props(s)
    assert (settings.model, settings.substeps, settings.self_collision) == ("mass_spring", 7, True)
    s.area_density = 0.0  # allowed by the slider's bound, refused by the solver's (> 0)
    with pytest.raises(pkg.solver.params.ParameterError, match="area_density: must be > 0"):
        convert.material_from_props(s)


# ---- drawing: every panel and menu against a layout that checks each name it is given ----

class CheckingLayout:
    """Stands in for UILayout in background mode: every property, operator and menu the draw
    code names must exist in RNA, as Blender would require when drawing for real."""

    def __init__(self, log):
        self.log = log

    def __getattr__(self, name):
        if name in ("row", "column", "box", "split", "grid_flow", "column_flow"):
            return self._sub
        raise AttributeError(f"UILayout has no {name!r} in this test double")

    def _sub(self, *args, heading="", **kw):
        if heading:  # drawn in the label column
            self.log.append(("heading", heading))
        return CheckingLayout(self.log)

    def prop(self, data, name, **kw):
        assert name in data.bl_rna.properties, f"{type(data).__name__} has no property {name}"
        self.log.append(("prop", name))
        rna = data.bl_rna.properties[name]
        text = kw.get("text", rna.name)
        if text and not kw.get("expand"):  # the label column, or beside a checkbox
            self.log.append(("checkbox" if rna.type == "BOOLEAN" else "heading", text))

    def prop_search(self, data, name, search_data, search_name, **kw):
        assert name in data.bl_rna.properties, name
        assert search_name in search_data.bl_rna.properties, search_name
        self.log.append(("prop_search", name))

    def operator(self, idname, **kw):
        module, op = idname.split(".")
        rna = getattr(getattr(bpy.ops, module), op).get_rna_type()
        self.log.append(("operator", idname))
        return CheckingProps(rna)

    def menu(self, menu_id, **kw):
        assert hasattr(bpy.types, menu_id), menu_id
        self.log.append(("menu", menu_id))
        self.log.append(("menu_text", kw.get("text", "")))

    def label(self, text="", **kw):
        self.log.append(("label", text))
        if self.__dict__.get("alignment") == "RIGHT":  # a heading drawn as a label
            self.log.append(("heading", text))

    def separator(self, **kw):
        pass


class CheckingProps:
    def __init__(self, rna):
        object.__setattr__(self, "rna", rna)

    def __setattr__(self, name, value):
        assert name in self.rna.properties, f"operator has no property {name}"


class FakePanel:
    """What ``draw`` gets from Blender: a layout, and the attributes of the panel's class."""

    def __init__(self, log, cls):
        self.layout = CheckingLayout(log)
        self._cls = cls

    def __getattr__(self, name):
        return getattr(self._cls, name)


def _draw_all(context):
    pkg = addon().cloth_addon
    log = []
    for cls in pkg.panels.classes:
        if issubclass(cls, bpy.types.Panel):
            if not cls.poll(context):
                continue
            if hasattr(cls, "draw_header_preset"):
                cls.draw_header_preset(FakePanel(log, cls), context)
        cls.draw(FakePanel(log, cls), context)
    return log


@pytest.mark.parametrize("role,solver", [("NONE", "IMPLICIT"), ("CLOTH", "IMPLICIT"),
                                         ("CLOTH", "MASS_SPRING"), ("COLLIDER", "IMPLICIT")])
def test_every_panel_draws(role, solver):
    obj = grid("Thing", 3)
    bpy.context.view_layer.objects.active = obj
    obj.cloth_solver.role, obj.cloth_solver.solver = role, solver
    log = _draw_all(bpy.context)
    drawn = {name for kind, name in log if kind == "prop"}
    if role == "CLOTH":
        assert {"solver", "area_density_display", "stretch_stiffness_display",
                "use_stretch_stiffness_weft", "stretch_stiffness_weft_display",
                "bend_stiffness_display", "use_max_strain", "max_strain_display",
                "self_collision", "frame_start", "frame_end"} <= drawn
        assert ("prop_search", "pin_group") in log
        assert ("operator", "cloth_solver.bake") in log
        assert ("operator", "cloth_solver.free_bake") in log
        assert ("menu", "CLOTH_SOLVER_MT_presets") in log
        props = addon().cloth_addon.properties
        for name in props.MATERIAL_SPECS:  # every material field, in its display unit
            assert props.display_prop_name(name) in drawn, name
            assert props.prop_name(name) not in drawn, name  # never the raw SI number
    elif role == "COLLIDER":
        assert {"thickness_display", "friction"} <= drawn  # the thickness in mm
    else:
        assert drawn == {"role"}


@pytest.mark.parametrize("role,solver", [("NONE", "IMPLICIT"), ("CLOTH", "IMPLICIT"),
                                         ("CLOTH", "MASS_SPRING"), ("COLLIDER", "IMPLICIT")])
def test_labels_fit_the_default_properties_editor(role, solver):
    """Blender 3.4 draws labels of up to about 14 characters uncut in the label column of a
    320 px wide Properties editor at scale 1, and 16 beside a checkbox (looked at under Xvfb:
    "Turbulence (m/s)" and "Add Wind, Turbulence" were cut with "..."); every panel, sub-panels
    drawn open, with a Collision modifier for the None role's collider rows."""
    obj = grid("Thing", 3)
    obj.modifiers.new("Collision", "COLLISION")
    bpy.context.view_layer.objects.active = obj
    obj.cloth_solver.role, obj.cloth_solver.solver = role, solver
    log = _draw_all(bpy.context)
    headings = [text for kind, text in log if kind == "heading"]
    checkboxes = [text for kind, text in log if kind == "checkbox"]
    assert headings and checkboxes
    assert [t for t in headings if len(t) > 14] == []
    assert [t for t in checkboxes if len(t) > 16] == []


def test_panels_show_the_last_bake():
    obj = cloth(n=3, frames=(1, 3))
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    labels = [text for kind, text in _draw_all(bpy.context) if kind == "label"]
    assert any("Baked frames 1-3" in t for t in labels)
    assert any("/frame, max strain " in t for t in labels)
    assert any(t in ("No penetrations or intersections",) or t.startswith("Penetration")
               or "intersecting pair" in t for t in labels)
