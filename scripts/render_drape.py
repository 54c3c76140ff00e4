"""Render the settled Cusick drape specimens of bench/drape.py side by side into docs/drape.png.

One column per preset: its name and drape coefficients on top, then the specimen seen from
above (what the drapemeter's shadow measures) and from an oblique angle. Both views are
orthographic so that the columns line up; a grey disc marks the 18 cm clamp.

Run (the bpy wheel of .venv, Cycles on the CPU):

    PYTHONPATH=. .venv/bin/python scripts/render_drape.py \\
        --results bench/results/drape [--edge 5] [--samples 24] [--out docs/drape.png]

It reads ``<results>.json`` (the figures) and ``<results>.npz`` (settled positions and
triangles, written by bench/drape.py).
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
sys.path.insert(0, str(ROOT / "scripts"))
import render_scene as rs  # noqa: E402

SPACING = 0.40   # m between specimen centres
COLOURS = {"cotton": (0.75, 0.72, 0.62), "denim": (0.03, 0.08, 0.30), "jersey": (0.50, 0.04, 0.05),
           "leather": (0.22, 0.08, 0.02), "rubber": (0.035, 0.035, 0.035), "silk": (0.80, 0.30, 0.40)}


def _flat(bpy, name, rgb):
    """A shadeless material (emission only): receives no shadows, so the floor stays uniform."""
    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    nt = mat.node_tree
    for n in list(nt.nodes):
        if n.type != "OUTPUT_MATERIAL":
            nt.nodes.remove(n)
    em = nt.nodes.new("ShaderNodeEmission")
    em.inputs["Color"].default_value = (*rgb, 1.0)
    em.inputs["Strength"].default_value = 1.0
    out = next(n for n in nt.nodes if n.type == "OUTPUT_MATERIAL")
    nt.links.new(em.outputs["Emission"], out.inputs["Surface"])
    return mat


def _disc(radius, z0, z1, n=96):
    """A closed cylinder (vertices, faces) of the given radius between heights z0 < z1."""
    a = np.linspace(0.0, 2 * np.pi, n, endpoint=False)
    ring = np.column_stack([radius * np.cos(a), radius * np.sin(a)])
    verts = [(x, y, z0) for x, y in ring] + [(x, y, z1) for x, y in ring] + [(0, 0, z0), (0, 0, z1)]
    faces = [(i, (i + 1) % n, n + (i + 1) % n, n + i) for i in range(n)]
    faces += [((i + 1) % n, i, 2 * n) for i in range(n)]
    faces += [(n + i, n + (i + 1) % n, 2 * n + 1) for i in range(n)]
    return verts, faces


def build_scene(bpy, specimens):
    """specimens: list of (name, positions, triangles); returns the row's centre x."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    grey = rs.material(bpy, "clamp", (0.25, 0.25, 0.27), 0.4)
    floor = _flat(bpy, "floor", (0.045, 0.05, 0.06))
    template = _flat(bpy, "template", (0.25, 0.26, 0.29))
    n = len(specimens)
    x0, x1 = -SPACING / 2, (n - 0.5) * SPACING
    rs.mesh_object(bpy, "floor", [(x0, -1.0, -0.26), (x1, -1.0, -0.26), (x1, 1.0, -0.26),
                                (x0, 1.0, -0.26)], [(0, 1, 2, 3)], floor, smooth=False)
    for i, (name, pos, tris) in enumerate(specimens):
        off = np.array([i * SPACING, 0.0, 0.0])
        mat = rs.material(bpy, name, COLOURS.get(name, (0.6, 0.6, 0.6)), 0.7)
        rs.mesh_object(bpy, name, pos + off, tris, mat)
        # the clamped centre (not meshed by the bench) and the clamping disc on top of it
        v, f = _disc(0.0905, -0.002, 0.003)
        rs.mesh_object(bpy, f"{name}_clamp", np.array(v) + off, f, grey, smooth=False)
        # the flat specimen's outline (r = 15 cm) on the floor: the shadow of DC = 100 %
        v, f = _disc(0.15, -0.2595, -0.259)
        rs.mesh_object(bpy, f"{name}_template", np.array(v) + off, f, template, smooth=False)
        # the support post under the disc
        v, f = _disc(0.02, -0.25, -0.002, 32)
        rs.mesh_object(bpy, f"{name}_post", np.array(v) + off, f, grey, smooth=False)
    rs.sun_and_sky(bpy, scene, (12, 8, 40), 3.0, (0.80, 0.82, 0.86), 0.6)
    return (len(specimens) - 1) * SPACING / 2.0


def render_view(bpy, path, centre_x, n, col_px, rows_px, tilt_deg, samples):
    """Orthographic view of the whole row, tilted tilt_deg from straight down."""
    scene = bpy.context.scene
    t = math.radians(tilt_deg)
    target = np.array([centre_x, 0.0, -0.05 if tilt_deg else 0.0])
    eye = target + np.array([0.0, -3.0 * math.sin(t), 3.0 * math.cos(t)])
    rs.camera(bpy, scene, tuple(eye), tuple(target), ortho_scale=n * SPACING,
              name=f"cam{tilt_deg}")
    rs.cycles(scene, (n * col_px, rows_px), samples, max_bounces=4)
    scene.render.film_transparent = False
    rs.render_still(bpy, scene, path)


def compose(top, oblique, labels, col_px, out):
    """The two views one above the other, each column's name, drape coefficients and band on
    top."""
    texts = []
    for i, (name, line, band) in enumerate(labels):
        cx = i * col_px + col_px // 2
        texts += [(cx, 6, name, 19, 20, "ma"), (cx, 31, line, 14, 50, "ma"),
                  (cx, 51, band, 14, 110, "ma")]
    rs.stacked([top, oblique], out, 74, texts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, help="bench/results/drape (no suffix)")
    ap.add_argument("--edge", default="5", help="which resolution's shapes to show [mm]")
    ap.add_argument("--samples", type=int, default=24)
    ap.add_argument("--col", type=int, default=230, help="column width [px]")
    ap.add_argument("--out", default=str(ROOT / "docs" / "drape.png"))
    args = ap.parse_args()
    import bpy
    doc = json.loads(Path(args.results + ".json").read_text())
    arrays = np.load(args.results + ".npz")
    # the saved shapes are the first specimen's (bench/drape.py --seeds)
    shown = doc.get("seeds", [0])[0]
    runs = [r for r in doc["runs"] if r.get("seed", 0) == shown]
    names = list(dict.fromkeys(r["preset"] for r in runs))
    by = {(r["preset"], f"{r['edge_m'] * 1000:.0f}"): r for r in runs}
    specimens, labels = [], []
    for name in names:
        key = f"{name}_{args.edge}mm"
        specimens.append((name, arrays[key + "_positions"], arrays[key + "_triangles"]))
        dcs = [f"{by[(name, e)]['dc_percent']:.0f}" for e in ("5", "10") if (name, e) in by]
        lo, hi, _ = doc["bands"].get(name, [None, None, ""])
        band = f"band {lo:.0f}-{hi:.0f} %" if lo is not None else "no textile band"
        labels.append((name, f"DC {' / '.join(dcs)} %  ({by[(name, args.edge)]['folds']} folds)",
                       band))
    centre = build_scene(bpy, specimens)
    with tempfile.TemporaryDirectory() as tmp:
        top, obl = Path(tmp) / "top.png", Path(tmp) / "oblique.png"
        render_view(bpy, top, centre, len(names), args.col, args.col, 0, args.samples)
        render_view(bpy, obl, centre, len(names), args.col, int(args.col * 0.62), 62, args.samples)
        compose(top, obl, labels, args.col, args.out)
    print(f"{args.out}: {len(names)} specimens ({args.edge} mm mesh), DC at 5 / 10 mm in the labels")


if __name__ == "__main__":
    main()
