"""Cloth started through bodies as artists have them, and the explicit model on a mesh body.

Scenes (bodies from tests/bodies.py, cotton, implicit model unless named):

* ``through_1m``: a 21 × 21 sheet (2 m, 10 cm edges) with its centre 2 cm inside the top of a
  32 × 16 UV sphere of 1 m (Blender's default sizes; the body's edges are 20 cm): only the
  pole's fan is above the sheet's vertices, the first ring's corners poke through its faces.
  ``clean_1m``: the same sheet 2 cm above the top, for the frame time of a clean start.
* ``through_30cm`` / ``clean_30cm``: a 0.4 m sheet (2 cm edges) on a 0.3 m sphere (6 cm edges).
* ``open_bottom``, ``holes``: the 1 m sphere without its lowest fifth, or with holes in its
  side; the sheet 3 cm inside, off centre.
* ``arm_through``: a nearly upright 0.8 m sheet through the middle of an arm that hangs against
  a torso (one mesh, the arm 5 mm into it). ``sleeve``: a tube posed partly inside a 16-sided arm.
  ``shirt``: a tube through both arms of the torso.
* ``posed_tee``: tests/garments.py's posed scene, the 1.4k-vertex tee on its mannequin with the
  arms 8° higher than it was made on (through the sleeves), self-collision on.

Per scene: collider crossing pairs, impact zones and deepest penetration per frame, the frames
after which all three stay 0, and seconds per frame (the first frame's untangling included);
for the sphere scenes the first and the worst frame against the clean start's median, each
frame's seconds the least of ``--repeat`` runs (frames of 20-60 ms: single spikes of the load
are of their size).
Explicit model:
``through_30cm`` and ``through_1m`` for 36 frames with the mass-spring and the implicit model in
the same process (the ratio is the figure; seconds depend on the load, recorded with them).

    .venv/bin/python bench/bodies.py --json bench/results/bodies.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import garments  # noqa: E402
from bodies import cylinder, torso_with_arms, tube, uv_sphere, without_faces  # noqa: E402
from record import save_json  # noqa: E402
from solver import (ClothSetup, Collider, PolyMesh, SimulationSpec, SolverSettings,  # noqa: E402
                    grid_mesh, load_preset)
from solver.simulation import Simulation  # noqa: E402


def sheet(size, n, center, tilt_deg=0.0) -> PolyMesh:
    g = grid_mesh((size, size), (n, n), (0.0, 0.0, 0.0))
    p = g.positions.copy()
    a = np.radians(tilt_deg)
    p[:, 0], p[:, 2] = p[:, 0] * np.cos(a), p[:, 0] * np.sin(a)
    return PolyMesh(p + np.asarray(center), g.face_indices, g.face_offsets)


def body_spec(cloth: PolyMesh, body: PolyMesh, frames: int, model: str = "implicit"):
    return SimulationSpec(ClothSetup(cloth, load_preset("cotton")), SolverSettings(model=model),
                          frames=frames, colliders=(Collider(kind="mesh", mesh=body),))


def scenes(frames: int) -> dict:
    sphere = uv_sphere(1.0)
    small = uv_sphere(0.3)
    return {
        "through_1m": body_spec(sheet(2.0, 21, (0, 0, 0.98)), sphere, frames),
        "clean_1m": body_spec(sheet(2.0, 21, (0, 0, 1.02)), sphere, frames),
        "through_30cm": body_spec(sheet(0.4, 21, (0, 0, 0.28)), small, frames),
        "clean_30cm": body_spec(sheet(0.4, 21, (0, 0, 0.32)), small, frames),
        "open_bottom": body_spec(sheet(2.0, 21, (0.05, 0.035, 0.97)),
                                 without_faces(sphere, lambda c: c[2] < -0.6), frames),
        "holes": body_spec(sheet(2.0, 21, (0.05, 0.035, 0.97)),
                           without_faces(sphere, lambda c: abs(c[2]) < 0.3
                                         and (c[0] > 0.5 or c[1] > 0.5)), frames),
        "arm_through": body_spec(sheet(0.8, 21, (0.2, 0.01, 1.0), 80.0), torso_with_arms(),
                                 frames),
        "sleeve": body_spec(tube(0.09, 0.4, (0.03, 0.0, 0.0), 24, 21),
                            cylinder(0.07, 0.5, segments=16), frames),
        "shirt": body_spec(tube(0.23, 0.3, (0.0, 0.0, 1.15), 48, 10), torso_with_arms(), frames),
        "posed_tee": garments.scene("posed", frames=frames),
    }


def run(spec, repeat: int = 1) -> dict:
    """Step a simulation to the end ``repeat`` times; per-frame figures from its reports, the
    seconds of each frame the least over the repeats (the counts are the same every time)."""
    walls, total = [], np.inf
    for _ in range(repeat):
        sim = Simulation(spec)
        start = time.perf_counter()
        while not sim.done:
            sim.step()
        total = min(total, time.perf_counter() - start)
        walls.append([r.wall_time_s for r in sim.result.frames])
    f = sim.result.frames
    bad = [i for i, r in enumerate(f) if r.collider_crossings or r.impact_zones
           or r.deepest_penetration_m > 0.0]
    wall = list(np.min(walls, axis=0)) if f else []
    return {
        "vertices": int(sim.model.vertex_count),
        "frames": len(f), "error": sim.result.error,
        "untangled": f[0].untangled if f else 0,
        "crossings": [r.collider_crossings for r in f],
        "impact_zones": [r.impact_zones for r in f],
        "self_intersections": [r.self_intersections for r in f],
        "deepest_penetration_mm": [round(1e3 * r.deepest_penetration_m, 3) for r in f],
        "clean_from_frame": (bad[-1] + 2) if bad else 1,
        "max_strain": max((r.max_strain for r in f), default=0.0),
        "seconds": [round(w, 4) for w in wall],
        "median_s": float(np.median(wall)), "worst_s": float(max(wall)),
        "total_s": total,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--explicit-frames", type=int, default=36)
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of the sphere scenes; each frame's seconds are the least")
    ap.add_argument("--only", nargs="*", help="scene names (default: all)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    # compile the kernels first: no first frame pays for numba
    for spec in (scenes(2)["through_1m"], body_spec(sheet(0.4, 21, (0, 0, 0.28)), uv_sphere(0.3),
                                                    1, "mass_spring")):
        run(spec)
    out = {"load_before": os.getloadavg()[0], "scenes": {}, "explicit": {}}
    for name, spec in scenes(args.frames).items():
        if args.only and name not in args.only:
            continue
        # the sphere scenes' frames are tens of milliseconds, the size of the load's spikes
        r = run(spec, args.repeat if name.endswith(("_1m", "_30cm")) else 1)
        out["scenes"][name] = r
        print(f"{name:14s} {r['vertices']:5d} v  clean from frame {r['clean_from_frame']}  "
              f"crossings {r['crossings'][:4]}  zones {r['impact_zones'][:4]}  "
              f"median {r['median_s']:.3f} s  worst {r['worst_s']:.3f} s  "
              f"strain {r['max_strain']:.3f}", flush=True)
    for size in ("1m", "30cm"):
        s = out["scenes"]
        if f"through_{size}" in s and f"clean_{size}" in s:
            through, clean = s[f"through_{size}"], s[f"clean_{size}"]
            through["first_over_clean_median"] = through["seconds"][0] / clean["median_s"]
            through["worst_over_clean_median"] = through["worst_s"] / clean["median_s"]
            through["worst_over_clean_worst"] = through["worst_s"] / clean["worst_s"]
    if not args.only or "explicit" in args.only:
        for name, (cloth, body) in {"through_30cm": (sheet(0.4, 21, (0, 0, 0.28)), uv_sphere(0.3)),
                                    "through_1m": (sheet(2.0, 21, (0, 0, 0.98)), uv_sphere(1.0))
                                    }.items():
            row = {}
            for model in ("mass_spring", "implicit"):
                r = run(body_spec(cloth, body, args.explicit_frames, model))
                row[model] = {k: r[k] for k in ("frames", "error", "total_s", "median_s",
                                                "max_strain", "clean_from_frame")}
            row["ratio"] = row["mass_spring"]["total_s"] / row["implicit"]["total_s"]
            out["explicit"][name] = row
            print(f"explicit {name}: mass_spring {row['mass_spring']['total_s']:.1f} s, implicit "
                  f"{row['implicit']['total_s']:.1f} s for {args.explicit_frames} frames "
                  f"({row['ratio']:.1f}x)", flush=True)
    out["load_after"] = os.getloadavg()[0]
    save_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
