"""Screenshots of the Cloth Solver panel as an artist sees it, in Blender with a real window.

Run under Xvfb with the add-on installed as a legacy add-on (Debian's Blender 3.4; the bpy
wheels of 4.2+ cannot open a window)::

    xvfb-run -a -s "-screen 0 1280x1800x24" blender --factory-startup --addons cloth_solver \\
        --python scripts/screenshot_panels.py -- OUT_DIR

with the add-on in ``$BLENDER_USER_SCRIPTS/addons/cloth_solver`` (``__init__.py``,
``blender_manifest.toml``, ``cloth_addon/``, ``solver/``, ``presets/``). The Properties editor is
a 320 px wide strip split off the 3D view, the width of Blender's default Properties editor at
resolution scale 1, so what is cut here is cut for an artist too. The pictures are taken once
the add-on's background warm-up (cloth_addon/warmup.py) has finished, as an artist sees the panel
from the second session on (set ``NUMBA_CACHE_DIR`` to a cache to keep; with a cold one the
first shot waits for it). Writes, each cropped to the drawn panels, these pictures as they are in
docs/ui/:

- ``cloth_new.png``: a new cloth (the Cotton preset in the header, its material);
- ``quality_preview.png``: the same with the Quality menu set to Preview: the top of the panel,
  the role, Solver and Quality rows;
- ``material_edited.png``: Denim applied (its own weft: the toggle on), then the bending
  stiffness edited ("Denim (edited)");
- ``cloth_baked.png``: after *Bake Cloth* (the bake record);
- ``bake_report.png``: the Bake sub-panel's Report sub-panel opened (the bake's whole summary):
  that sub-panel alone;
- ``bake_outdated.png``: after the floor collider moved;
- ``collider_collision_modifier.png``: the floor, a Collision modifier acting as a collider;
- ``collider.png``: the floor given the role Collider (its Thickness in mm, Friction, and the
  scene's last bake, which it took part in);
- ``sewing.png``: the cloth with Sewing on, its sub-panel opened (it starts closed, like
  Blender's own Shape panel): that sub-panel alone;
- ``knit_swatch.png``: a 4 × 3 swatch of the repeat k3p1 made by Add > Knit Swatch with Yarn
  Friction 0.3 and Rest Contacts at its default (the Yarn role's panel);
- ``take_cloth_modifier.png``: a curtain set up for Blender's own cloth (a Cloth modifier with a
  pin group, self-collision, a 1-48 cache), its role still None: the Cloth Solver panel below
  Blender's Cloth panels, with the Take Cloth Modifier Settings button;
- ``performance.png``: the Bake sub-panel's Performance sub-panel opened, Threads Fixed at 2:
  that sub-panel alone;
- ``steps_preview.png``: the Steps sub-panel opened at Quality Preview, its Custom toggles off:
  the counts Preview takes, greyed; that sub-panel alone.

A script cannot open a panel: an opened one is the add-on's panel registered again under a new
name without DEFAULT_CLOSED (a panel's open state is kept by its name), which draws it last, so
the bottom of the editor is that sub-panel alone; afterwards the add-on's panels are registered
again in their own order, so the later pictures show them where an artist sees them.

docs/ui/bake_in_progress.png and docs/ui/bake_panel_running.png (a bake running) come from
tests/blender/live_ui_session.py (``bench/live_bake.py --shots DIR``).
"""
import os
import sys
from contextlib import contextmanager

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timer_steps import run_steps  # noqa: E402
from window_areas import properties_area  # noqa: E402

OUT = sys.argv[sys.argv.index("--") + 1]
WIDTH = 320  # px: Blender's default Properties editor at resolution scale 1
REPORT_ROWS = 230  # px: the Report sub-panel's header and items
COLLIDER_ROWS = 474  # px: the Cloth Solver panel of a collider, its Bake sub-panel


def build():
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=12, y_subdivisions=12, size=1.0,
                                    location=(0, 0, 1))
    cloth = bpy.context.object
    cloth.name = "Sheet"
    cloth.cloth_solver.role = "CLOTH"
    pins = cloth.vertex_groups.new(name="Pins")  # two corners: it hangs and stretches a little
    row = len([v for v in cloth.data.vertices if abs(v.co.y - cloth.data.vertices[0].co.y) < 1e-6])
    pins.add([0, row - 1], 1.0, "REPLACE")
    cloth.cloth_solver.pin_group = "Pins"
    bpy.ops.mesh.primitive_plane_add(size=4, location=(0, 0, 0))
    floor = bpy.context.object
    floor.name = "Floor"
    floor.modifiers.new("Collision", "COLLISION")
    bpy.ops.object.effector_add(type="WIND", location=(-2, 0, 1), rotation=(0, 1.5708, 0))
    bpy.context.object.field.strength = 300
    sc = bpy.context.scene.cloth_solver
    sc.frame_start, sc.frame_end = 1, 12
    bpy.context.view_layer.objects.active = cloth
    return cloth, floor


def shot(name, win, area, rows=None):
    """Screenshot ``area`` into OUT/name.png, cropped to the drawn panels; ``rows`` (a slice
    of pixel rows from the top, e.g. ``slice(-154, None)``: the bottom 154 px) keeps part."""
    path = f"{OUT}/{name}.png"
    with bpy.context.temp_override(window=win, screen=win.screen, area=area):
        bpy.ops.screen.screenshot_area(filepath=path)
    crop(path, rows)
    print("SHOT", name, area.width, area.height, flush=True)


def crop(path, rows=None, margin=12):
    """Cut the empty editor background below the last drawn panel, then keep ``rows``."""
    import numpy as np
    img = bpy.data.images.load(path)
    w, h = img.size
    px = np.array(img.pixels[:], dtype=np.float32).reshape(h, w, img.channels)  # bottom row 0
    # Ignore the left edge (the tab bar) and the scroll bar on the right.
    body = px[:, 40:w - 20, :3]
    background = body[8, body.shape[1] // 2]  # above the editor's bottom edge
    used = np.nonzero(np.abs(body - background).max(axis=(1, 2)) > 0.02)[0]
    used = used[used > 8]  # not the editor's bottom edge
    first = max(0, int(used.min()) - margin) if used.size else 0
    kept = px[first:]
    if rows is not None:
        kept = kept[::-1][rows][::-1]  # rows count from the top
    if kept.shape[0] < h:
        out = bpy.data.images.new("crop", w, kept.shape[0], alpha=img.channels == 4)
        out.pixels[:] = np.ascontiguousarray(kept).ravel()
        out.filepath_raw, out.file_format = path, "PNG"
        out.save()
        bpy.data.images.remove(out)
    bpy.data.images.remove(img)


def addon_panels():
    """The add-on's panel classes in the order it registers them (the order they draw in)."""
    module = next(m for name, m in sys.modules.items() if name.endswith("cloth_addon.panels"))
    return [cls for cls in module.classes if issubclass(cls, bpy.types.Panel)]


@contextmanager
def opened(panel):
    """Draw ``panel`` opened (see the module's docstring), then put the panels back in order."""
    bpy.utils.unregister_class(panel)
    open_panel = type(f"{panel.__name__}_open", (panel,), {"bl_options": set()})
    bpy.utils.register_class(open_panel)
    try:
        yield
    finally:
        bpy.utils.unregister_class(open_panel)
        later = addon_panels()
        later = later[later.index(panel) + 1:]
        for cls in reversed(later):
            bpy.utils.unregister_class(cls)
        for cls in (panel, *later):
            bpy.utils.register_class(cls)


def warmup_running():
    module = next(m for name, m in sys.modules.items() if name.endswith("cloth_addon.warmup"))
    return module.running()


def steps():
    cloth, floor = build()
    win, area = bpy.context.window_manager.windows[0], properties_area(WIDTH)
    yield 1.0
    area.spaces[0].context = "PHYSICS"
    while warmup_running():  # its "Compiling solver kernels" line goes once it has finished
        yield 2.0
    yield 1.0
    shot("cloth_new", win, area)
    cloth.cloth_solver.quality = "PREVIEW"
    yield 1.0
    shot("quality_preview", win, area, rows=slice(172, 284))  # role, Solver, Quality
    cloth.cloth_solver.quality = "FINAL"
    with bpy.context.temp_override(window=win, screen=win.screen, area=area):
        bpy.ops.cloth_solver.preset_apply(name="denim")
    cloth.cloth_solver.bend_stiffness_display = 20.0  # µN·m (Denim: 17)
    yield 1.0
    shot("material_edited", win, area)
    with bpy.context.temp_override(window=win, screen=win.screen, area=area):
        bpy.ops.cloth_solver.preset_apply(name="cotton")
        bpy.ops.cloth_solver.bake()
    yield 1.0
    shot("cloth_baked", win, area)
    with opened(bpy.types.PHYSICS_PT_cloth_solver_report):
        yield 1.0
        shot("bake_report", win, area, rows=slice(-REPORT_ROWS, None))
    floor.location.z = 0.2
    yield 1.0
    print("STATUS after move", cloth.cloth_solver.bake_outdated, flush=True)
    shot("bake_outdated", win, area)
    bpy.context.view_layer.objects.active = floor
    yield 1.0
    shot("collider_collision_modifier", win, area)
    floor.cloth_solver.role = "COLLIDER"
    yield 1.0
    shot("collider", win, area, rows=slice(-COLLIDER_ROWS, None))  # below Blender's panels
    floor.cloth_solver.role = "NONE"
    bpy.context.view_layer.objects.active = cloth
    cloth.cloth_solver.use_sewing = True
    with opened(bpy.types.PHYSICS_PT_cloth_solver_sewing):
        yield 1.0
        shot("sewing", win, area, rows=slice(-154, None))
    with bpy.context.temp_override(window=win, screen=win.screen, area=area):
        bpy.ops.cloth_solver.add_knit_swatch(pattern="REPEAT", repeat="k3p1", stitches=4,
                                             courses=3, friction=0.3)
    yield 1.0
    shot("knit_swatch", win, area)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=8, y_subdivisions=8, size=1.0,
                                    location=(3, 0, 1))
    curtain = bpy.context.object
    curtain.name = "Curtain"
    curtain.vertex_groups.new(name="Pins").add([0, 7], 1.0, "REPLACE")
    mod = curtain.modifiers.new("Cloth", "CLOTH")
    mod.settings.vertex_group_mass = "Pins"
    mod.collision_settings.use_self_collision = True
    mod.point_cache.frame_start, mod.point_cache.frame_end = 1, 48
    yield 1.0
    shot("take_cloth_modifier", win, area, rows=slice(-150, None))  # below Blender's panels
    bpy.context.view_layer.objects.active = cloth
    sc = bpy.context.scene.cloth_solver
    sc.threads_mode, sc.threads = "FIXED", 2
    with opened(bpy.types.PHYSICS_PT_cloth_solver_performance):
        yield 1.0
        shot("performance", win, area, rows=slice(-104, None))
    cloth.cloth_solver.quality = "PREVIEW"
    with opened(bpy.types.PHYSICS_PT_cloth_solver_quality):
        yield 1.0
        shot("steps_preview", win, area, rows=slice(-102, None))


run_steps(steps(), first_interval=1.0)
