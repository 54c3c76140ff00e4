"""Render docs/knit_rib.png: a 2×2 rib cuff (12 × 12 stitches of wool worsted) made with
Add > Mesh > Knit Swatch, hanging from its top course (on a needle), at the first frame (as
added and relaxed) and after a short Bake Cloth with the yarn model, side by side; the Geometry
Nodes sweep renders its yarn (docs/yarn.md, README).

With ``--over-sphere`` the swatch is turned to lie flat, still held by its top course, over a
UV-sphere mesh collider (Collision modifier, thickness 1 mm) that catches it as it swings
down: the scarf end of docs/knit_sphere.png.

Run (the bpy wheel of .venv, Cycles on the CPU):

    NUMBA_CACHE_DIR=$PWD/.cache/numba-py311 .venv/bin/python scripts/render_knit.py \\
        [--out docs/knit_rib.png] [--frames 24] [--stitches 12] [--samples 32] [--over-sphere]
        [--friction 0.3] [--blend out/knit.blend]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import render_scene as rs  # noqa: E402


def _needle(bpy, swatch, radius):
    """A knitting needle through the top course, for the eye (not a collider)."""
    xs = [v.co.x for v in swatch.data.vertices]
    zs = [v.co.z for v in swatch.data.vertices]
    width = max(xs) - min(xs)
    bpy.ops.mesh.primitive_cylinder_add(radius=radius, depth=1.4 * width,
                                        location=(0.0, 0.0, max(zs) - 1.5 * radius),
                                        rotation=(0.0, math.radians(90), 0.0), vertices=24)
    ob = bpy.context.active_object
    for p in ob.data.polygons:
        p.use_smooth = True
    ob.data.materials.append(rs.material(bpy, "Needle", (0.45, 0.3, 0.15), 0.35))


def _over_sphere(bpy, swatch) -> None:
    """Turn the swatch (and its needle) about its top course to lie flat, and put a sphere
    collider under its middle, its top 3 mm below the swatch's lowest yarn; returns the point
    the camera looks at (the top of the sphere)."""
    import mathutils
    top = max(v.co.z for v in swatch.data.vertices)
    turn = (mathutils.Matrix.Translation((0.0, 0.0, top))
            @ mathutils.Matrix.Rotation(math.radians(90), 4, "X")
            @ mathutils.Matrix.Translation((0.0, 0.0, -top)))
    for ob in bpy.context.scene.objects:
        ob.matrix_world = turn @ ob.matrix_world
    bpy.context.view_layer.update()
    world = [swatch.matrix_world @ v.co for v in swatch.data.vertices]
    ys = [p.y for p in world]
    radius = 0.012
    lowest = min(p.z for p in world)
    bpy.ops.mesh.primitive_uv_sphere_add(radius=radius, segments=48, ring_count=24,
                                         location=(0.0, 0.5 * (min(ys) + max(ys)) - 0.01,
                                                   lowest - 0.003 - 0.001 - radius))
    ball = bpy.context.active_object
    for p in ball.data.polygons:
        p.use_smooth = True
    ball.modifiers.new("Collision", "COLLISION")
    ball.collision.thickness_outer = 0.001
    ball.data.materials.append(rs.material(bpy, "Ball", (0.2, 0.35, 0.6), 0.5))
    return (0.0, 0.5 * (min(ys) + max(ys)) - 0.01, lowest - 0.004)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "knit_rib.png")
    ap.add_argument("--frames", type=int, default=24, help="bake frames 1..N")
    ap.add_argument("--stitches", type=int, default=12)
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--friction", type=float, default=0.0,
                    help="Yarn Friction of the swatch (Add > Knit Swatch; 0: Kaldor's model)")
    ap.add_argument("--over-sphere", action="store_true",
                    help="lay the swatch flat over a sphere collider (docs/knit_sphere.png)")
    ap.add_argument("--blend", type=Path, default=None,
                    help="also save the baked scene, camera and lights (to measure or look at)")
    args = ap.parse_args()
    import dev_addon
    dev_addon.scratch_user_resources(Path(tempfile.mkdtemp(prefix="cloth_solver_user_")))
    import bpy
    dev_addon.enable(ROOT / ".cache" / "blender-tests-wheel")
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    t0 = time.perf_counter()
    assert bpy.ops.cloth_solver.add_knit_swatch(
        pattern="RIB2X2", stitches=args.stitches, courses=args.stitches,
        yarn="wool_worsted", friction=args.friction) == {"FINISHED"}
    swatch = bpy.context.view_layer.objects.active
    print(f"knit swatch: {len(swatch.data.vertices)} yarn points, added and relaxed in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)
    _needle(bpy, swatch, 2.0e-3)
    aim = _over_sphere(bpy, swatch) if args.over_sphere else (0.0, 0.0, 0.0)
    scene.cloth_solver.frame_start, scene.cloth_solver.frame_end = 1, args.frames
    t0 = time.perf_counter()
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    print(f"bake: {time.perf_counter() - t0:.1f} s", flush=True)
    eye = (0.055, -0.15, 0.045) if not args.over_sphere else \
        (aim[0] + 0.09, aim[1] - 0.11, aim[2] + 0.07)
    rs.camera(bpy, scene, eye, aim, lens=50.0, clip_start=0.005)
    rs.sun_and_sky(bpy, scene, (60, 15, -35), 3.0, (0.75, 0.75, 0.78), 0.7)
    rs.cycles(scene, (480, 480), args.samples, denoise=None)
    if args.blend:
        bpy.ops.wm.save_as_mainfile(filepath=str(args.blend.resolve()), copy=True)
    t0 = time.perf_counter()
    frames = Path(tempfile.mkdtemp())
    halves = []
    for frame in (1, args.frames):
        scene.frame_set(frame)
        halves.append(rs.render_still(bpy, scene, frames / f"knit_{frame}.png"))
    rs.side_by_side(halves, args.out.resolve())
    print(f"render: {time.perf_counter() - t0:.1f} s", flush=True)
    print(scene.cloth_solver.last_report)


if __name__ == "__main__":
    main()
