"""Screenshots of the Cloth Solver panel as an artist sees it, in Blender with a real window.

Run under Xvfb with the add-on installed as a legacy add-on (Debian's Blender 3.4):
``xvfb-run -a -s "-screen 0 1280x1800x24" blender --factory-startup --addons cloth_solver
--python scripts/screenshot_panels.py -- OUT_DIR``. Writes ``1_not_baked.png`` (a new cloth),
``2_baked.png``, ``3_outdated.png`` (after the floor collider moved) and
``4_collision_object.png`` (the floor: a Collision modifier acting as a collider). The pictures
in docs/ui/ come from it.
"""
import os
import sys

import bpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timer_steps import run_steps  # noqa: E402

OUT = sys.argv[sys.argv.index("--") + 1]

def build():
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=12, y_subdivisions=12, size=1.0, location=(0, 0, 1))
    cloth = bpy.context.object
    cloth.name = "Sheet"
    cloth.cloth_solver.role = "CLOTH"
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

def props_area():
    win = bpy.context.window_manager.windows[0]
    for area in win.screen.areas:
        if area.type == "VIEW_3D":
            area.type = "PROPERTIES"
            return win, area
    raise RuntimeError("no properties editor")

def shot(name, win, area):
    with bpy.context.temp_override(window=win, screen=win.screen, area=area):
        bpy.ops.screen.screenshot_area(filepath=f"{OUT}/{name}.png")

def steps():
    print("STEP build", flush=True)
    cloth, floor = build()
    print("STEP built", flush=True)
    win, area = props_area()
    yield 1.0
    area.spaces[0].context = "PHYSICS"
    print("STEP yield", flush=True)
    yield 1.0
    shot("1_not_baked", win, area)
    with bpy.context.temp_override(window=win, screen=win.screen):
        bpy.ops.cloth_solver.bake()
    print("STEP yield", flush=True)
    yield 1.0
    shot("2_baked", win, area)
    floor.location.z = 0.2
    print("STEP yield", flush=True)
    yield 1.0
    print("STATUS after move", cloth.cloth_solver.bake_outdated, flush=True)
    shot("3_outdated", win, area)
    bpy.context.view_layer.objects.active = floor
    print("STEP yield", flush=True)
    yield 1.0
    shot("4_collision_object", win, area)

run_steps(steps(), first_interval=1.0)
