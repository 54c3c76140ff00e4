"""Render the relaxed knit swatches of bench/yarn_validation.py side by side into docs/knits.png.

One column per pattern (stockinette, garter, 2×2 rib), the yarn swept as a tube of its radius
(a Blender curve with a round bevel), courses in two alternating colours as in Kaldor's
photographed samples. Top row: lying on the table, seen from above at an angle; bottom row:
floating without gravity, seen edge-on along the course, which shows which way each edge rolls.

Run (the bpy wheel of .venv, Cycles on the CPU):

    PYTHONPATH=. .venv/bin/python scripts/render_knits.py \\
        --results bench/results/yarn_validation_10x10 [--samples 24] [--out docs/knits.png]

It reads ``<results>.json`` (size, figures) and ``<results>.npz`` (positions).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import render_scene as rs  # noqa: E402
from solver.yarn import knit_swatch  # noqa: E402

W, H = 5.6e-3, 4.2e-3
PATTERNS = ("stockinette", "garter", "rib2x2")
COLOURS = ((0.55, 0.08, 0.06), (0.85, 0.78, 0.62))    # alternate courses


def _yarn(bpy, name, x, course_points, radius, mats):
    """One curve object, a poly spline per course, beveled to a tube of the yarn radius."""
    cu = bpy.data.curves.new(name, "CURVE")
    cu.dimensions = "3D"
    cu.bevel_depth = radius
    cu.bevel_resolution = 3
    cu.use_fill_caps = True
    for m in mats:
        cu.materials.append(m)
    for j in range(len(course_points) - 1):
        a, b = course_points[j], min(course_points[j + 1] + 1, len(x))
        sp = cu.splines.new("POLY")
        sp.points.add(b - a - 1)
        for k, p in enumerate(x[a:b]):
            sp.points[k].co = (float(p[0]), float(p[1]), float(p[2]), 1.0)
        sp.material_index = j % 2
    ob = bpy.data.objects.new(name, cu)
    bpy.context.scene.collection.objects.link(ob)
    return ob


def build(bpy, arrays, size, radius, which, spacing):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    mats = [rs.material(bpy, f"course{i}", c, 0.8) for i, c in enumerate(COLOURS)]
    S, C = size
    for i, pattern in enumerate(PATTERNS):
        x = arrays[f"{pattern}_{which}"].copy()
        sw = knit_swatch(pattern, S, C, W, H, radius)
        x -= x.mean(axis=0)
        x[:, 0] += i * spacing
        if which == "table":
            x[:, 2] -= x[:, 2].min() - radius
        _yarn(bpy, pattern, x, sw.course_points, radius, mats)
    if which == "table":
        rs.mesh_object(bpy, "table", [(-1, -1, 0), (1, -1, 0), (1, 1, 0), (-1, 1, 0)],
                       [(0, 1, 2, 3)], rs.material(bpy, "table", (0.35, 0.36, 0.38), 0.8),
                       smooth=False)
    rs.sun_and_sky(bpy, scene, (25, 10, 30), 3.5, (0.85, 0.86, 0.9), 0.7)


def render(bpy, path, centre_x, width_m, px, rows_px, direction, samples):
    """Orthographic view of the row from ``direction`` (relative to its centre)."""
    scene = bpy.context.scene
    eye = (centre_x + direction[0], direction[1], direction[2])
    rs.camera(bpy, scene, eye, (centre_x, 0.0, 0.0), ortho_scale=width_m, name="cam")
    rs.cycles(scene, (px, rows_px), samples)
    rs.render_still(bpy, scene, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, help="bench/results/yarn_validation_<S>x<C>")
    ap.add_argument("--samples", type=int, default=24)
    ap.add_argument("--col", type=int, default=300, help="column width [px]")
    ap.add_argument("--out", default=str(ROOT / "docs" / "knits.png"))
    args = ap.parse_args()
    import bpy
    doc = json.loads(Path(args.results + ".json").read_text())
    arrays = np.load(args.results + ".npz")
    radius = float(arrays["radius"])
    size = doc["size"]
    spacing = 1.5 * max(size[0] * W, size[1] * H)
    centre = spacing
    n = len(PATTERNS)
    with tempfile.TemporaryDirectory() as tmp:
        top, side = Path(tmp) / "table.png", Path(tmp) / "floating.png"
        t = math.radians(50)
        build(bpy, arrays, size, radius, "table", spacing)
        render(bpy, top, centre, n * spacing, n * args.col, int(args.col * 0.8),
               (0.0, -math.sin(t), math.cos(t)), args.samples)
        build(bpy, arrays, size, radius, "floating", spacing)
        # along the course (from +x tilted a little): the top and bottom edges' roll shows
        render(bpy, side, centre, n * spacing, n * args.col, int(args.col * 0.6),
               (0.0, -0.5, 0.12), args.samples)
        head, top_h = 50, int(args.col * 0.8)
        texts = []
        for i, pattern in enumerate(PATTERNS):
            cx = i * args.col + args.col // 2
            r = doc["patterns"][pattern]
            texts += [(cx, 4, pattern, 18, 20, "ma"),
                      (cx, 28, f"{1e3 * r['width_m']:.0f} x {1e3 * r['height_m']:.0f} mm relaxed",
                       13, 60, "ma")]
        texts += [(6, head + 4, "on the table, 0.1 s", 13, 30, "la"),
                  (6, head + top_h + 4, "floating, 0.1 s, from below the bottom edge", 13, 30,
                   "la")]
        rs.stacked([top, side], args.out, head, texts)
    print(f"{args.out}: {', '.join(PATTERNS)} ({size[0]} x {size[1]} stitches)")


if __name__ == "__main__":
    main()
