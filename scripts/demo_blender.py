"""The main job: build a demo scene in real Blender (the bpy wheel, no display), bake it with
this project's solver through the add-on, render it with Cycles on the CPU and save it.

Scene: a cotton flag held along its hoist edge on a pole, flying in a gusty 5 m/s wind (gusts
travel with the wind, so they ripple across it); a denim sheet falling over a sphere onto the
floor (both are colliders). Writes into ``--out`` (default ``out/``):
``demo.blend``, ``frames/frame_####.png``, ``demo.gif`` and ``demo.json`` (timings).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import dev_addon  # noqa: E402

FRAMES = (1, 48)  # 2 s at 24 fps


def build_scene(bpy, np):
    import mathutils
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    scene.render.fps = 24
    scene.cloth_solver.frame_start, scene.cloth_solver.frame_end = FRAMES
    scene.cloth_solver.wind_velocity = (5.0, 0.0, 0.0)  # along the flag, from hoist to fly
    scene.cloth_solver.wind_turbulence = 1.5
    scene.cloth_solver.wind_scale = 0.5

    def material(name, rgb, roughness=0.6):
        mat = bpy.data.materials.new(name)
        mat.use_nodes = True
        bsdf = mat.node_tree.nodes.get("Principled BSDF")
        bsdf.inputs["Base Color"].default_value = (*rgb, 1.0)
        bsdf.inputs["Roughness"].default_value = roughness
        return mat

    def grid(name, n, size, location, rotation=(0, 0, 0)):
        xs = (np.arange(n[0]) / (n[0] - 1) - 0.5) * size[0]
        ys = (np.arange(n[1]) / (n[1] - 1) - 0.5) * size[1]
        verts = [(x, y, 0.0) for y in ys for x in xs]
        faces = [(j * n[0] + i, j * n[0] + i + 1, (j + 1) * n[0] + i + 1, (j + 1) * n[0] + i)
                 for j in range(n[1] - 1) for i in range(n[0] - 1)]
        mesh = bpy.data.meshes.new(name)
        mesh.from_pydata(verts, [], faces)
        mesh.update()
        obj = bpy.data.objects.new(name, mesh)
        scene.collection.objects.link(obj)
        obj.location, obj.rotation_euler = location, rotation
        for poly in mesh.polygons:
            poly.use_smooth = True
        return obj

    # Floor and sphere: colliders.
    floor = grid("Floor", (2, 2), (8.0, 8.0), (0.0, 0.0, 0.0))
    floor.data.materials.append(material("Floor", (0.55, 0.55, 0.52), 0.8))
    floor.cloth_solver.role = "COLLIDER"
    bpy.ops.mesh.primitive_uv_sphere_add(segments=32, ring_count=16, radius=0.45,
                                         location=(0.9, 0.0, 0.45))
    sphere = bpy.context.object
    sphere.name = "Sphere"
    bpy.ops.object.shade_smooth()
    sphere.data.materials.append(material("Sphere", (0.8, 0.35, 0.12), 0.35))
    sphere.cloth_solver.role = "COLLIDER"
    sphere.cloth_solver.thickness = 0.01

    # Flag: starts flat in the XZ plane, held along its hoist edge (x = -1.5 m, the pole) and
    # flying along +X with the wind; the gusts push on its faces and ripple it.
    nx, nz = 25, 19
    flag = grid("Flag", (nx, nz), (1.2, 0.9), (-0.9, 0.0, 1.55), (math.pi / 2, 0.0, 0.0))
    flag.data.materials.append(material("Flag", (0.1, 0.3, 0.75)))
    group = flag.vertex_groups.new(name="Pins")
    hoist = [j * nx for j in range(nz)]  # the local -X column -> world x = -1.5 m, vertical
    group.add(hoist, 1.0, "REPLACE")
    bpy.ops.mesh.primitive_cylinder_add(radius=0.018, depth=2.15, location=(-1.52, 0.0, 1.075))
    pole = bpy.context.object  # for the eye only: role None, not a collider
    pole.name = "Pole"
    pole.data.materials.append(material("Pole", (0.75, 0.75, 0.72), 0.3))
    s = flag.cloth_solver
    s.role, s.pin_group = "CLOTH", "Pins"
    s.self_collision = True  # a flapping flag folds onto itself
    bpy.context.view_layer.objects.active = flag
    bpy.ops.cloth_solver.preset_apply(name="cotton")

    # Sheet: falls over the sphere onto the floor (denim: heavy enough to fall through the wind).
    sheet = grid("Sheet", (31, 31), (1.3, 1.3), (0.9, 0.0, 1.2))
    sheet.data.materials.append(material("Sheet", (0.85, 0.82, 0.75), 0.5))
    sheet.cloth_solver.role = "CLOTH"
    sheet.cloth_solver.self_collision = True  # its folds stay free of self-intersections
    bpy.context.view_layer.objects.active = sheet
    bpy.ops.cloth_solver.preset_apply(name="denim")

    # Camera, light, world.
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    cam.location = (2.4, -4.3, 1.9)
    look = mathutils.Vector((-0.05, 0.0, 0.85)) - cam.location  # between flag and sphere
    cam.rotation_euler = look.to_track_quat("-Z", "Y").to_euler()
    cam.data.lens = 32
    scene.camera = cam
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    scene.collection.objects.link(sun)
    sun.rotation_euler = (math.radians(50), math.radians(10), math.radians(30))
    sun.data.energy = 3.5
    world = bpy.data.worlds.new("World")
    world.use_nodes = True
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.55, 0.65, 0.8, 1)
    world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.7
    scene.world = world
    return [flag, sheet]


def render_settings(scene, out: Path, width: int, samples: int):
    r = scene.render
    r.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = False
    scene.cycles.max_bounces = 4
    r.resolution_x, r.resolution_y = width, width * 9 // 16
    r.resolution_percentage = 100
    r.image_settings.file_format = "PNG"
    r.filepath = str(out / "frames" / "frame_")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "out"), help="output folder")
    parser.add_argument("--width", type=int, default=320, help="image width [px] (16:9)")
    parser.add_argument("--samples", type=int, default=16, help="Cycles samples per pixel")
    parser.add_argument("--step", type=int, default=2, help="render every STEP-th frame")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    (out / "frames").mkdir(parents=True, exist_ok=True)

    # A scratch Blender user directory that persists, so numba's cache (in the extension's user
    # directory) makes the next run's bake start fast.
    dev_addon.scratch_user_resources(ROOT / ".cache" / "demo-blender-user")
    import bpy
    import numpy as np

    dev_addon.enable(ROOT / ".cache" / "demo-blender-user")
    bpy.ops.wm.read_homefile(use_empty=True)
    cloths = build_scene(bpy, np)
    scene = bpy.context.scene

    start = time.perf_counter()
    bpy.ops.cloth_solver.bake()
    bake_s = time.perf_counter() - start

    render_settings(scene, out, args.width, args.samples)
    bpy.ops.wm.save_as_mainfile(filepath=str(out / "demo.blend"))

    frames = list(range(FRAMES[0], FRAMES[1] + 1, args.step))
    start = time.perf_counter()
    paths = []
    for f in frames:
        scene.frame_set(f)
        path = out / "frames" / f"frame_{f:04d}.png"
        scene.render.filepath = str(path)
        bpy.ops.render.render(write_still=True)
        paths.append(path)
        print(f"demo: rendered frame {f} -> {path.relative_to(out.parent)}", flush=True)
    render_s = time.perf_counter() - start

    from PIL import Image
    images = [Image.open(p).convert("RGB") for p in paths]
    images[0].save(out / "demo.gif", save_all=True, append_images=images[1:],
                   duration=int(1000 * args.step / 24), loop=0)

    report = {
        "bake_s": round(bake_s, 2), "render_s": round(render_s, 2),
        "frames_baked": FRAMES[1] - FRAMES[0] + 1, "frames_rendered": len(frames),
        "resolution": [scene.render.resolution_x, scene.render.resolution_y],
        "samples": args.samples, "summary": scene.cloth_solver.last_report,
        "cloth_vertices": {o.name: len(o.data.vertices) for o in cloths},
    }
    (out / "demo.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"demo: {report['summary']}")
    print(f"demo: bake {bake_s:.1f} s (includes numba compilation on a first run), render "
          f"{len(frames)} frames at {report['resolution'][0]}x{report['resolution'][1]}, "
          f"{args.samples} samples in {render_s:.1f} s -> {out / 'demo.blend'}, "
          f"{out / 'frames'}, {out / 'demo.gif'}")


if __name__ == "__main__":
    main()
