"""Material presets: the shipped ones apply exactly; the user's own save, list, apply, remove."""

from __future__ import annotations

import math
import tomllib

import bpy
import pytest

from scenes import addon, cloth


def _close(a, b) -> bool:
    """Materials equal up to Blender's single-precision float storage."""
    import dataclasses
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if (x is None) != (y is None) or (x is not None and not math.isclose(x, y, rel_tol=1e-6)):
            return False
    return True


def test_every_shipped_preset_applies_exactly():
    pkg = addon()
    convert, presets = pkg.cloth_addon.convert, pkg.solver.formats.presets
    obj = cloth(n=3)
    bpy.context.view_layer.objects.active = obj
    shipped = presets.list_presets()
    assert {"cotton", "denim", "silk", "leather", "rubber", "jersey"} <= set(shipped)
    for name in shipped:
        assert bpy.ops.cloth_solver.preset_apply(name=name) == {"FINISHED"}
        assert _close(convert.material_from_props(obj.cloth_solver), presets.load_preset(name))
        assert obj.cloth_solver.preset == presets.preset_info(name)["name"]


def test_user_preset_round_trip():
    pkg = addon()
    convert, storage = pkg.cloth_addon.convert, pkg.cloth_addon.storage
    ui_presets = pkg.cloth_addon.presets
    a = cloth("A", n=3)
    bpy.context.view_layer.objects.active = a
    bpy.ops.cloth_solver.preset_apply(name="denim")
    a.cloth_solver.bend_stiffness = 3.3e-5
    a.cloth_solver.use_max_strain = False
    assert bpy.ops.cloth_solver.preset_save(name="My Denim", description="stiffer") == {"FINISHED"}
    path = storage.user_preset_dir() / "my_denim.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert data["preset"] == {"name": "My Denim", "description": "stiffer"}
    assert math.isclose(data["material"]["bend_stiffness"], 3.3e-5, rel_tol=1e-6)
    assert "max_strain" not in data["material"]  # off = not written (None)
    assert ("my_denim", "My Denim") in ui_presets.available(user=True)

    b = cloth("B", n=3)
    bpy.context.view_layer.objects.active = b
    assert bpy.ops.cloth_solver.preset_apply(name="my_denim", user=True) == {"FINISHED"}
    assert _close(convert.material_from_props(b.cloth_solver),
                  convert.material_from_props(a.cloth_solver))
    assert b.cloth_solver.preset == "My Denim"

    assert bpy.ops.cloth_solver.preset_remove(name="my_denim") == {"FINISHED"}
    assert not path.exists()
    assert ("my_denim", "My Denim") not in ui_presets.available(user=True)


def test_broken_user_preset_is_reported_not_applied():
    pkg = addon()
    folder = pkg.cloth_addon.storage.user_preset_dir()
    (folder / "broken.toml").write_text('[preset]\nname = "Broken"\n[material]\n'
                                        'area_density = -1.0\n', encoding="utf-8")
    obj = cloth(n=3)
    bpy.context.view_layer.objects.active = obj
    before = obj.cloth_solver.area_density
    try:
        with pytest.raises(RuntimeError, match="area_density: must be > 0"):
            bpy.ops.cloth_solver.preset_apply(name="broken", user=True)
        assert obj.cloth_solver.area_density == before
    finally:
        (folder / "broken.toml").unlink()
