"""Render docs/subdivision.png: the same coarse cloth (9 x 9 vertices, 1 m) dropped on a sphere,
baked without (left, flat shaded) and with a Subdivision Surface modifier kept on top of the
bake (right, level 2, smooth shaded): the bake simulates the cage, playback and render are
smooth (docs/user-guide.md, "Modifiers on a cloth object").

A subdivided surface lies inside its cage where the cage bends over a convex collider, by
about e²/(8R) for cage edges e on a radius R (6.5 mm here), so the right sphere's thickness is
raised from 5 to 12 mm; at 5 mm the sphere shows through the smooth surface.

Run (the bpy wheel of .venv, Cycles on the CPU):

    NUMBA_CACHE_DIR=$PWD/.cache/numba-py311 .venv/bin/python scripts/render_subdivision.py \\
        [--out docs/subdivision.png] [--samples 32]
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import render_scene as rs  # noqa: E402


def _cloth(bpy, solver, name, x, subdivided):
    n = 9
    g = solver.grid_mesh((1.0, 1.0), (n, n), (0.0, 0.0, 0.0))
    rgb = (0.8, 0.25, 0.2) if subdivided else (0.25, 0.4, 0.8)
    ob = rs.mesh_object(bpy, name, g.positions, g.faces(), rs.material(bpy, name, rgb, 0.5),
                        smooth=subdivided)
    ob.location = (x, 0.0, 1.2)
    ob.cloth_solver.role = "CLOTH"
    if subdivided:
        mod = ob.modifiers.new("Subdivision", "SUBSURF")
        mod.levels = mod.render_levels = 2
    return ob


def _sphere(bpy, x, thickness):
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.3, location=(x, 0.0, 0.7), segments=48,
                                         ring_count=24)
    ob = bpy.context.active_object
    for p in ob.data.polygons:
        p.use_smooth = True
    ob.cloth_solver.role = "COLLIDER"
    ob.cloth_solver.thickness = thickness


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "subdivision.png")
    ap.add_argument("--samples", type=int, default=32)
    args = ap.parse_args()
    import dev_addon
    dev_addon.scratch_user_resources(Path(tempfile.mkdtemp(prefix="cloth_solver_user_")))
    import bpy
    dev_addon.enable(ROOT / ".cache" / "blender-tests-wheel")
    bpy.ops.wm.read_homefile(use_empty=True)
    solver = next(m for k, m in sys.modules.items()
                  if k.endswith("cloth_solver") and hasattr(m, "solver")).solver
    scene = bpy.context.scene
    _sphere(bpy, -0.65, 0.005)
    _sphere(bpy, 0.65, 0.012)
    _cloth(bpy, solver, "Cage", -0.65, False)
    sub = _cloth(bpy, solver, "Subdivided", 0.65, True)
    scene.cloth_solver.frame_start, scene.cloth_solver.frame_end = 1, 40
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert sub.modifiers["Subdivision"].show_render
    scene.frame_set(40)
    rs.camera(bpy, scene, (0.0, -2.9, 2.3), rotation=(math.radians(58), 0.0, 0.0))
    rs.sun_and_sky(bpy, scene, (50, 20, -30), 3.0, (0.6, 0.6, 0.65), 0.6)
    rs.cycles(scene, (640, 300), args.samples, denoise=None)
    rs.render_still(bpy, scene, args.out.resolve())
    print(scene.cloth_solver.last_report)


if __name__ == "__main__":
    main()
