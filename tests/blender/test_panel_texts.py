"""The panels and reports as an artist reads them: one form for each figure wherever it appears
(frame ranges, the bake's time), a last-bake summary of a few lines with the whole report one
click away, the Collision-modifier switches saying what they do, and the collider's thickness
in mm like the cloth's."""

from __future__ import annotations

import json
import re
from pathlib import Path

import bpy
import pytest

from scenes import addon, cloth, grid
from test_registration import FakePanel

ADDON = Path(__file__).resolve().parents[2] / "cloth_addon"


def _draw(panel: str) -> list:
    """(kind, text) of what ``panel`` (a class name of panels.py) draws for the active object."""
    cls = getattr(addon().cloth_addon.panels, panel)
    log = []
    assert cls.poll(bpy.context), panel
    cls.draw(FakePanel(log, cls), bpy.context)
    return log


def _labels(panel: str) -> list[str]:
    return [text for kind, text in _draw(panel) if kind == "label"]


def test_frame_ranges_are_written_one_way_everywhere():
    """The progress said "frame 23 of 1–48" (en dash) and the summary "frames 1-16 of 1-48":
    every range goes through formats.frame_range now, which writes a hyphen-minus."""
    written = {path.name: re.findall(r"\}\s*[-–]\s*\{|\d–\d", path.read_text(encoding="utf-8"))
               for path in ADDON.glob("*.py") if path.name != "formats.py"}
    assert {name: found for name, found in written.items() if found} == {}
    obj = cloth("Sheet", n=4, pins=[12, 15], frames=(1, 48))
    job = addon().cloth_addon.bake.BakeJob(bpy.context)
    assert job.progress_text() == "frame 1 of 1-48"
    bpy.context.scene.cloth_solver.frame_end = 3
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    texts = [bpy.context.scene.cloth_solver.last_report,
             *_labels("PHYSICS_PT_cloth_solver_bake"), *_labels("PHYSICS_PT_cloth_solver_report")]
    assert "Baked frames 1-3 (implicit)" in texts
    assert "frames 1-3 with implicit" in texts[0]
    assert not [t for t in texts if "–" in t]


def test_the_last_bake_summary_is_three_short_lines_and_the_report_has_the_rest():
    """The "Last bake:" text ran to 8 wrapped lines in a 320 px editor: now who and which frames,
    the time per frame and the worst strain, then what to look at; the operator's whole report
    is in the Report sub-panel, item by item."""
    sheet = cloth("Sheet", n=4, pins=[12, 15], frames=(1, 3))
    sheet.modifiers.new("Cloth", "CLOTH")  # a warning in the report
    floor = grid("Floor", 3, size=4.0, location=(0, 0, -1))
    floor.cloth_solver.role = "COLLIDER"
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    report = bpy.context.scene.cloth_solver.last_report
    assert "Blender's Cloth modifier 'Cloth'" in report and len(report) > 300
    bpy.context.view_layer.objects.active = floor  # no bake of its own: the scene's last
    labels = _labels("PHYSICS_PT_cloth_solver_bake")
    summary = labels[labels.index("Last bake: Sheet, frames 1-3"):]
    assert len(summary) == 3, summary
    assert re.fullmatch(r"[0-9.]+ m?s/frame, max strain [0-9.]+%", summary[1]), summary
    assert summary[2].endswith("1 warning (Report)"), summary
    shown = " ".join(_labels("PHYSICS_PT_cloth_solver_report"))  # wrapped at spaces
    for item in json.loads(bpy.context.scene.cloth_solver.last_bake)["details"]:
        assert item[1:] in shown, item
    assert report == "; ".join(json.loads(bpy.context.scene.cloth_solver.last_bake)["details"])
    bpy.context.view_layer.objects.active = sheet  # its own bake: status and two lines
    kinds = _draw("PHYSICS_PT_cloth_solver_bake")
    box = [t for k, t in kinds if k == "label"]
    box = box[box.index("Baked frames 1-3 (implicit)"):]
    assert len(box) == 3 and box[1] == summary[1] and box[2] == summary[2], box


def test_the_bake_time_reads_the_same_in_the_panel_and_the_report():
    """The panel said "Time 0.39 s" where the report said "0.4 s": one figure (the time per
    frame; the total in the report), written by one formatter, from one measurement."""
    sheet = cloth("Sheet", n=4, pins=[12, 15], frames=(1, 3))
    bpy.context.view_layer.objects.active = sheet
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    formats = addon().cloth_addon.formats
    last = json.loads(bpy.context.scene.cloth_solver.last_bake)
    assert sheet.cloth_solver.bake_time == pytest.approx(last["wall_time_s"], rel=1e-6)
    per_frame = formats.per_frame(sheet.cloth_solver.bake_time, 2)
    assert f"in {formats.duration(last['wall_time_s'])} ({per_frame});" in \
        bpy.context.scene.cloth_solver.last_report
    assert f"{per_frame}, max strain " \
           f"{formats.strain(sheet.cloth_solver.bake_max_strain)}" in \
        _labels("PHYSICS_PT_cloth_solver_bake")
    assert [formats.duration(t) for t in (0.0042, 0.033, 0.39, 12.44, 154.4, 725.2)] == \
        ["4.2 ms", "33 ms", "0.39 s", "12.4 s", "154 s", "12 min 05 s"]


def test_the_collision_modifier_switches_say_what_they_do():
    """"Use as Collider" / "In Scene" did not say what they switch: the cloth collides with this
    object, or with every Collision-modifier object of the scene; the line below says which
    holds now."""
    obj = grid("Floor", 3)
    obj.modifiers.new("Collision", "COLLISION")
    bpy.context.view_layer.objects.active = obj
    log = _draw("PHYSICS_PT_cloth_solver")
    assert ("heading", "Cloth Collides") in log
    assert ("checkbox", "With This Object") in log and ("checkbox", "With All (Scene)") in log
    assert "Collider from its Collision modifier:" in [t for k, t in log if k == "label"]
    rna = obj.cloth_solver.bl_rna.properties["use_collision_modifier"]
    assert "Off: Bake Cloth ignores this object" in rna.description
    scene_rna = bpy.context.scene.cloth_solver.bl_rna.properties["use_collision_modifiers"]
    assert "whole scene" in scene_rna.description
    obj.cloth_solver.use_collision_modifier = False
    assert "Bake Cloth ignores this object" in _labels("PHYSICS_PT_cloth_solver")
    obj.cloth_solver.use_collision_modifier = True
    bpy.context.scene.cloth_solver.use_collision_modifiers = False
    assert "Bake Cloth ignores the Collision modifiers of this scene" in " ".join(
        _labels("PHYSICS_PT_cloth_solver"))


def test_the_collider_thickness_is_shown_in_mm_like_the_cloths(tmp_path):
    """The collider's Thickness showed in scene units ("0.005 m") beside the cloth's "0.30 mm":
    both in mm now; the stored value (scene units) is unchanged, so a file saved before loads
    with the same physical thickness, at any unit scale."""
    sheet = cloth("Sheet", n=3, frames=(1, 2), location=(0, 0, 1))
    floor = grid("Floor", 3, size=4.0)
    floor.cloth_solver.role = "COLLIDER"
    floor.cloth_solver.thickness = 0.02  # as a file saved before stores it (BU)
    path = str(tmp_path / "old.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    floor, sheet = bpy.data.objects["Floor"], bpy.data.objects["Sheet"]
    assert floor.cloth_solver.thickness == pytest.approx(0.02)
    assert floor.cloth_solver.thickness_display == pytest.approx(20.0)
    bpy.context.view_layer.objects.active = floor
    log = _draw("PHYSICS_PT_cloth_solver")
    drawn = log[log.index(("prop", "thickness_display")):]
    assert ("prop", "thickness") not in log and drawn[1] == ("label", "mm")
    bpy.context.view_layer.objects.active = sheet
    log = _draw("PHYSICS_PT_cloth_solver_collisions")
    assert log[log.index(("prop", "cloth_thickness_display")) + 1] == ("label", "mm")
    units = bpy.context.scene.unit_settings
    units.system, units.scale_length = "METRIC", 0.01  # 1 BU = 1 cm
    assert floor.cloth_solver.thickness_display == pytest.approx(0.2)  # 0.02 BU = 0.2 mm
    floor.cloth_solver.thickness_display = 3.0
    assert floor.cloth_solver.thickness == pytest.approx(0.3)  # BU
    job = addon().cloth_addon.bake.BakeJob(bpy.context)
    assert [c.thickness for c in job.groups[0].spec.colliders] == pytest.approx([0.003])  # m


class _Column:
    def __init__(self, lines):
        self.lines = lines

    def column(self, align=False):
        return self

    def label(self, text="", icon="NONE"):
        self.lines.append(text)


def test_a_wrapped_line_never_ends_on_a_bare_figure_and_counts_agree_with_their_nouns():
    """The Report sub-panel wrapped 'deepest penetration 0.00 / mm' and 'gusts 0 m/s / r.m.s.'
    at 320 px: a figure keeps the word after it on its line (and the report now writes 'r.m.s.
    gusts 0 m/s'). A count reads '1 cloth object', '2 cloth objects', not 'object(s)'."""
    from types import SimpleNamespace
    pkg = addon().cloth_addon
    text = ("max strain 0.42%, deepest penetration 0.00 mm, 0 intersecting triangle pairs at most "
            "and a force field 'Wind': wind 3 m/s, r.m.s. gusts 0 m/s")
    for width in range(120, 400, 7):
        context = SimpleNamespace(region=SimpleNamespace(width=width), preferences=SimpleNamespace(
            system=SimpleNamespace(ui_scale=1.0), ui_styles=[]))  # no font: the estimate
        lines = []
        pkg.panels.wrapped_label(_Column(lines), context, text)
        assert " ".join(lines) == text
        assert not [line for line in lines if pkg.panels.NUMBER.fullmatch(line.split()[-1])], lines
    count = pkg.formats.count
    assert (count(1, "cloth object"), count(2, "cloth object"), count(0, "frame")) == (
        "1 cloth object", "2 cloth objects", "0 frames")
    texts = {path.name: re.findall(r"\b[a-z]+\(s\)(?=[ \")])", path.read_text(encoding="utf-8"))
             for path in ADDON.glob("*.py")}  # 'object(s)', not a call 'name(s)'
    assert {name: found for name, found in texts.items() if found} == {}
