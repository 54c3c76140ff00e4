"""The main job: build a demo scene in real Blender (the bpy wheel, no display), bake it with
this project's solver through the add-on, render it with Cycles on the CPU and save it.

Scene: a cotton flag held along its hoist edge on a pole, flying in a gusty 5 m/s wind (gusts
travel with the wind, so they ripple across it); a denim sheet falling over a sphere onto the
floor (both are colliders); a sleeve sewn from two flat cotton panels around a horizontal arm
(the mesh's loose edges are its seams, Sewing on); a 2×2 rib cuff knitted yarn by yarn (Add >
Knit Swatch, the yarn model) hanging from a needle, which a ball rolls into and out of again; a
tee worn on a faceted mannequin that turns and lifts its arms (its four parts are colliders,
keyframed). Writes into ``--out`` (default ``out/``): ``demo.blend``, ``frames/frame_####.png``,
``demo.gif``, ``garment.png`` (close-ups of the sleeve at frames 1, 4, 8 and 48), ``knit.png``
(close-ups of the cuff at frames 1, 8, 16 and 48), ``tee.png`` (the tee at frames 1, 16, 32 and
48) and ``demo.json`` (timings).
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
sys.path.insert(1, str(ROOT / "tests"))  # garments.py: the tee, the mannequin, its motion
sys.path.insert(2, str(ROOT))  # ... which reads them with the solver's OBJ reader
import dev_addon  # noqa: E402
import render_scene as rs  # noqa: E402

FRAMES = (1, 48)  # 2 s at 24 fps


def build_scene(bpy, np):
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = FRAMES
    scene.render.fps = 24
    scene.cloth_solver.frame_start, scene.cloth_solver.frame_end = FRAMES
    scene.cloth_solver.wind_velocity = (5.0, 0.0, 0.0)  # along the flag, from hoist to fly
    scene.cloth_solver.wind_turbulence = 1.5
    scene.cloth_solver.wind_scale = 0.5

    def grid(name, n, size, location, rotation, rgb, roughness):
        xs = (np.arange(n[0]) / (n[0] - 1) - 0.5) * size[0]
        ys = (np.arange(n[1]) / (n[1] - 1) - 0.5) * size[1]
        verts = [(x, y, 0.0) for y in ys for x in xs]
        faces = [(j * n[0] + i, j * n[0] + i + 1, (j + 1) * n[0] + i + 1, (j + 1) * n[0] + i)
                 for j in range(n[1] - 1) for i in range(n[0] - 1)]
        obj = rs.mesh_object(bpy, name, verts, faces, rs.material(bpy, name, rgb, roughness))
        obj.location, obj.rotation_euler = location, rotation
        return obj

    # Floor and sphere: colliders.
    floor = grid("Floor", (2, 2), (8.0, 8.0), (0.0, 0.0, 0.0), (0, 0, 0), (0.55, 0.55, 0.52), 0.8)
    floor.cloth_solver.role = "COLLIDER"
    collider_sphere(bpy, "Sphere", 0.45, (0.9, 0.0, 0.45), (0.8, 0.35, 0.12), 0.01)

    # Flag: starts flat in the XZ plane, held along its hoist edge (x = -1.5 m, the pole) and
    # flying along +X with the wind; the gusts push on its faces and ripple it.
    nx, nz = 25, 19
    flag = grid("Flag", (nx, nz), (1.2, 0.9), (-0.9, 0.0, 1.55), (math.pi / 2, 0.0, 0.0),
                (0.1, 0.3, 0.75), 0.6)
    group = flag.vertex_groups.new(name="Pins")
    hoist = [j * nx for j in range(nz)]  # the local -X column -> world x = -1.5 m, vertical
    group.add(hoist, 1.0, "REPLACE")
    bpy.ops.mesh.primitive_cylinder_add(radius=0.018, depth=2.15, location=(-1.52, 0.0, 1.075))
    pole = bpy.context.object  # for the eye only: role None, not a collider
    pole.name = "Pole"
    pole.data.materials.append(rs.material(bpy, "Pole", (0.75, 0.75, 0.72), 0.3))
    s = flag.cloth_solver
    s.role, s.pin_group = "CLOTH", "Pins"
    s.self_collision = True  # a flapping flag folds onto itself
    bpy.context.view_layer.objects.active = flag
    bpy.ops.cloth_solver.preset_apply(name="cotton")

    # Sheet: falls over the sphere onto the floor (denim: heavy enough to fall through the wind).
    sheet = grid("Sheet", (31, 31), (1.3, 1.3), (0.9, 0.0, 1.2), (0, 0, 0), (0.85, 0.82, 0.75),
                 0.5)
    sheet.cloth_solver.role = "CLOTH"
    sheet.cloth_solver.self_collision = True  # its folds stay free of self-intersections
    bpy.context.view_layer.objects.active = sheet
    bpy.ops.cloth_solver.preset_apply(name="denim")

    # Sleeve: two flat cotton panels above and below a horizontal arm (a collider), joined
    # along both long edges by loose edges; with Sewing on the seams pull the panels round the
    # arm into a tube that hangs on it.
    garment = sleeve(bpy, np, ARM)

    # Knit: a rib cuff on a needle, pushed by a ball (the yarn model).
    cuff = knit_cuff(bpy, KNIT)

    # Tee: worn on a faceted mannequin that turns and lifts its arms (animated colliders).
    tee = worn_tee(bpy, MANNEQUIN)

    # Camera (aimed between flag and sphere), light, sky.
    rs.camera(bpy, scene, (2.4, -4.3, 1.9), (-0.05, 0.0, 0.85), lens=32)
    rs.sun_and_sky(bpy, scene, (50, 10, 30), 3.5, (0.55, 0.65, 0.8), 0.7)
    return [flag, sheet, garment, tee], cuff


def collider_sphere(bpy, name, radius, location, rgb, thickness):
    """A smooth 32 × 16 UV sphere with the Collider role and ``thickness`` [m]."""
    bpy.ops.mesh.primitive_uv_sphere_add(segments=32, ring_count=16, radius=radius,
                                         location=location)
    obj = bpy.context.object
    obj.name = name
    bpy.ops.object.shade_smooth()
    obj.data.materials.append(rs.material(bpy, name, rgb, 0.35))
    obj.cloth_solver.role = "COLLIDER"
    obj.cloth_solver.thickness = thickness
    return obj


ARM = ((-0.75, -1.25, 0.62), 0.07, 0.75)  # centre [m], radius [m], length [m] (axis along x)


def sleeve(bpy, np, arm):
    """The demo's garment: the arm (collider) and a sleeve sewn from two panels around it."""
    (cx, cy, cz), radius, length = arm
    bpy.ops.mesh.primitive_cylinder_add(vertices=32, radius=radius, depth=length,
                                        location=(cx, cy, cz), rotation=(0.0, 1.5708, 0.0))
    rod = bpy.context.object
    rod.name = "Arm"
    bpy.ops.object.shade_smooth()
    rod.data.materials.append(rs.material(bpy, "Arm", (0.8, 0.68, 0.55), 0.45))
    rod.cloth_solver.role = "COLLIDER"
    rod.cloth_solver.thickness = 0.004
    nx, ny, size, lift = 13, 15, (0.45, 0.42), 0.13
    xs = (np.arange(nx) / (nx - 1) - 0.5) * size[0]
    ys = (np.arange(ny) / (ny - 1) - 0.5) * size[1]
    panel = [(x, y) for y in ys for x in xs]
    verts = [(x, y, lift) for x, y in panel] + [(x, y, -lift) for x, y in panel]
    V = nx * ny
    quads = [(j * nx + i, j * nx + i + 1, (j + 1) * nx + i + 1, (j + 1) * nx + i)
             for j in range(ny - 1) for i in range(nx - 1)]
    faces = quads + [tuple(V + v for v in q[::-1]) for q in quads]
    edge = [i for i in range(nx)] + [(ny - 1) * nx + i for i in range(nx)]
    seams = [(v, V + v) for v in edge]  # loose edges: the top panel's long edges to the bottom's
    obj = rs.mesh_object(bpy, "Sleeve", verts, faces,
                         rs.material(bpy, "Sleeve", (0.12, 0.45, 0.25), 0.7), edges=seams)
    obj.location = (cx, cy, cz)
    s = obj.cloth_solver
    s.role = "CLOTH"
    bpy.context.view_layer.objects.active = obj
    bpy.ops.cloth_solver.preset_apply(name="cotton")
    s.use_sewing = True  # the loose edges are seams (Blender's own Sewing checkbox)
    s.self_collision = True
    return obj


# where the mannequin stands [m], facing −Y: outside the main camera's view (the tee has its own
# close-up)
MANNEQUIN = (-2.6, -2.8, 0.0)


def worn_tee(bpy, location):
    """A cotton tee on a mannequin whose four parts (torso, head, arms: examples/garments/) are
    colliders keyframed as tests/garments.py's worn scene moves them: the body turns by 60° and
    lifts its arms by 50° over the demo's frames. The tee (examples/garments/tee.obj, 1.4k
    irregular triangles) is the front and back panels of tee_panels.obj sewn round this body
    by this project's solver (scripts/make_garments.py) and welded into one mesh."""
    import garments

    root = bpy.data.objects.new("Mannequin", None)  # turns the body about its vertical
    bpy.context.scene.collection.objects.link(root)
    root.location = location
    skin = rs.material(bpy, "Mannequin", (0.8, 0.68, 0.55), 0.45)
    parts = garments.body_parts()
    # a stand from the floor to the torso, on the axis the body turns about; for the eye only
    bottom = min(float(m.positions[:, 2].min()) for m in parts.values())
    bpy.ops.mesh.primitive_cylinder_add(radius=0.015, depth=bottom, vertices=16,
                                        location=(location[0], location[1], 0.5 * bottom))
    stand = bpy.context.object
    stand.name = "Stand"
    stand.data.materials.append(rs.material(bpy, "Stand", (0.2, 0.2, 0.22), 0.3))
    joints = {}
    for name, mesh in parts.items():
        parent, offset = root, (0.0, 0.0, 0.0)
        if name.startswith("arm_"):  # an arm turns about its shoulder joint
            sign = 1.0 if name.endswith("_r") else -1.0
            offset = tuple(garments.SHOULDER * (sign, 1.0, 1.0))
            joint = bpy.data.objects.new(f"Shoulder {name[-1].upper()}", None)
            bpy.context.scene.collection.objects.link(joint)
            joint.parent, joint.location = root, offset
            joints[joint] = sign
            parent = joint
        obj = rs.mesh_object(bpy, f"Body {name}", mesh.positions - offset, mesh.faces(), skin,
                             smooth=False)
        obj.parent = parent
        obj.cloth_solver.role = "COLLIDER"
        obj.cloth_solver.thickness = garments.BODY_THICKNESS
    turns, lifts = garments.body_motion(FRAMES[1] - FRAMES[0])
    for k, (turn, lift) in enumerate(zip(turns, lifts)):
        root.rotation_euler = (0.0, 0.0, float(turn))
        root.keyframe_insert("rotation_euler", frame=FRAMES[0] + k)
        for joint, sign in joints.items():
            joint.rotation_euler = (0.0, -sign * float(lift), 0.0)
            joint.keyframe_insert("rotation_euler", frame=FRAMES[0] + k)
    mesh = garments.garment("tee")
    tee = rs.mesh_object(bpy, "Tee", mesh.positions, mesh.faces(),
                         rs.material(bpy, "Tee", (0.5, 0.07, 0.06), 0.75))
    tee.location = location
    s = tee.cloth_solver
    s.role = "CLOTH"
    bpy.context.view_layer.objects.active = tee
    bpy.ops.cloth_solver.preset_apply(name="cotton")
    s.self_collision = True
    return tee


# The cuff: where its middle starts [m], stitches and courses, yarn friction; the ball's radius
# [m], how far [m] it rolls along +y into the cuff (from in front of its face), and the frames at
# which it starts, is furthest in and is back.
KNIT = ((0.25, -1.75, 0.32), (8, 10), 0.3, 0.012, 0.03, (1, 14, 28))


def knit_cuff(bpy, knit):
    """A 2×2 rib cuff of wool worsted made by Add > Knit Swatch (relaxed, its top course pinned
    as on a needle), a needle for the eye, and a ball (a collider, keyframed) that rolls into
    it from in front, pushing it back on its needle, and rolls back out."""
    (cx, cy, cz), (stitches, courses), friction, radius, travel, (f0, f1, f2) = knit
    scene = bpy.context.scene
    scene.cursor.location = (cx, cy, cz)
    bpy.ops.cloth_solver.add_knit_swatch(pattern="RIB2X2", stitches=stitches, courses=courses,
                                         yarn="wool_worsted", friction=friction)
    cuff = bpy.context.view_layer.objects.active
    cuff.name = "Cuff"
    xs = [v.co.x for v in cuff.data.vertices]
    ys = [v.co.y for v in cuff.data.vertices]
    zs = [v.co.z for v in cuff.data.vertices]
    width = max(xs) - min(xs)
    bpy.ops.mesh.primitive_cylinder_add(radius=0.002, depth=1.5 * width, vertices=16,
                                        location=(cx, cy, cz + max(zs) - 0.003),
                                        rotation=(0.0, 1.5708, 0.0))
    needle = bpy.context.object  # for the eye only: role None
    needle.name = "Needle"
    needle.data.materials.append(rs.material(bpy, "Needle", (0.45, 0.3, 0.15), 0.35))
    ball = collider_sphere(bpy, "Ball", radius,
                           (cx, cy + min(ys) - radius - 0.006, cz - 0.2 * (max(zs) - min(zs))),
                           (0.2, 0.35, 0.6), 0.001)
    ball.keyframe_insert("location", frame=f0)
    ball.location.y += travel
    ball.keyframe_insert("location", frame=f1)
    ball.location.y -= travel
    ball.keyframe_insert("location", frame=f2)
    return cuff


def render_closeup(bpy, scene, out: Path, name: str, eye, target, frames, lens=50) -> Path:
    """Close-ups from ``eye`` towards ``target`` at a few frames, side by side, into
    ``out/<name>.png``."""
    main_camera = scene.camera
    rs.camera(bpy, scene, eye, target, lens=lens, clip_start=0.005, name=f"{name} camera")
    r = scene.render
    size = r.resolution_x, r.resolution_y
    r.resolution_x, r.resolution_y = 240, 240
    paths = []
    for f in frames:
        scene.frame_set(f)
        paths.append(rs.render_still(bpy, scene, out / "frames" / f"{name}_{f:04d}.png"))
    scene.camera = main_camera
    r.resolution_x, r.resolution_y = size
    return rs.side_by_side(paths, out / f"{name}.png")


def render_settings(scene, out: Path, width: int, samples: int):
    rs.cycles(scene, (width, width * 9 // 16), samples, max_bounces=4)
    scene.render.filepath = str(out / "frames" / "frame_")


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
    cloths, cuff = build_scene(bpy, np)
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
        path = rs.render_still(bpy, scene, out / "frames" / f"frame_{f:04d}.png")
        paths.append(path)
        print(f"demo: rendered frame {f} -> {path.relative_to(out.parent)}", flush=True)
    render_s = time.perf_counter() - start

    (cx, cy, cz), _, _ = ARM
    garment = render_closeup(bpy, scene, out, "garment", (cx + 0.55, cy - 0.95, cz + 0.35),
                             (cx, cy, cz - 0.06), (1, 4, 8, 48))
    print(f"demo: the sleeve at frames 1, 4, 8 and 48 -> {garment}", flush=True)
    (kx, ky, kz) = KNIT[0]
    knit = render_closeup(bpy, scene, out, "knit", (kx + 0.12, ky - 0.07, kz + 0.03),
                          (kx, ky + 0.012, kz - 0.008), (1, 8, 16, 48))
    print(f"demo: the knit cuff at frames 1, 8, 16 and 48 -> {knit}", flush=True)
    (mx, my, mz) = MANNEQUIN
    tee = render_closeup(bpy, scene, out, "tee", (mx + 0.9, my - 2.2, mz + 1.5),
                         (mx, my, mz + 1.2), (1, 16, 32, 48))
    print(f"demo: the tee on the turning mannequin at frames 1, 16, 32 and 48 -> {tee}",
          flush=True)

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
        "yarn_points": {cuff.name: len(cuff.data.vertices)},
    }
    (out / "demo.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"demo: {report['summary']}")
    print(f"demo: bake {bake_s:.1f} s (includes numba compilation on a first run), render "
          f"{len(frames)} frames at {report['resolution'][0]}x{report['resolution'][1]}, "
          f"{args.samples} samples in {render_s:.1f} s -> {out / 'demo.blend'}, "
          f"{out / 'frames'}, {out / 'demo.gif'}")


if __name__ == "__main__":
    main()
