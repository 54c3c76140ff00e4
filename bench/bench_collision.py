"""Collision benchmark: cloth falling onto a sphere, ours against Blender's built-in Cloth.

Scene (Blender's ``sphere`` scene of blender_builtin.py): a 2 m × 2 m grid of n × n vertices
at z = 1 m falls for ``--frames`` frames at 24 fps onto a sphere of radius 0.5 m at the
origin, with and without self-collision. Ours: the implicit model with the ``cotton`` preset,
an analytic sphere collider (thickness 5 mm, friction 0.3). Blender: default Cloth settings
(Cotton, quality 5) and a UV-sphere Collision object (its defaults).

Reported per run: median and worst ms per frame (frames 2..N; the first frame of ours excludes
JIT compilation, which happens in a warm-up run first), max edge strain at the end, the deepest
penetration into the sphere and the most self-intersecting triangle pairs over all frames
(ours: the frame report; Blender: our independent checks applied to its final frame).

    .venv/bin/python bench/bench_collision.py --sizes 65 129 --frames 40 --json out.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from record import save_json  # noqa: E402
from solver import ClothSetup, Collider, SimulationSpec, SolverSettings, grid_mesh  # noqa: E402
from solver.collision.intersections import analytic_depth  # noqa: E402
from solver.collision.pipeline import CollisionHandler  # noqa: E402
from solver.diagnostics import edge_strain  # noqa: E402
from solver.model import build_model  # noqa: E402
from solver.formats.presets import load_preset  # noqa: E402
from solver.simulation import simulate  # noqa: E402

RADIUS = 0.5


def sphere_spec(n: int, frames: int, self_collision: bool, substeps: int | None,
                model: str = "implicit", **settings) -> SimulationSpec:
    cloth = ClothSetup(grid_mesh((2.0, 2.0), (n, n), (0.0, 0.0, 1.0)), load_preset("cotton"))
    sphere = Collider("sphere", center=np.zeros(3), radius=RADIUS, thickness=0.005, friction=0.3)
    return SimulationSpec(cloth, SolverSettings(model=model, self_collision=self_collision,
                                                substeps=substeps, **settings),
                          frames=frames, colliders=(sphere,))


def run_ours(n: int, frames: int, self_collision: bool, substeps: int | None) -> dict:
    spec = sphere_spec(n, frames, self_collision, substeps)
    result = simulate(spec)
    rep = result.report()
    wall = np.array([f["wall_time_s"] for f in rep["frames"]]) * 1e3
    model = build_model(spec.cloth)
    strain = edge_strain(result.positions[-1], model.edges, model.edge_rest_length)
    rows = rep["frames"]
    return {
        "solver": "ours_implicit", "vertices": n * n, "frames": frames,
        "self_collision": self_collision, "substeps": int(rows[0]["substeps"]),
        "median_ms": float(np.median(wall[1:])), "worst_ms": float(wall[1:].max()),
        "mean_ms": float(wall[1:].mean()),
        "max_strain": float(strain.max()), "p99_strain": float(np.percentile(strain, 99)),
        "deepest_penetration_m": max(r["deepest_penetration_m"] for r in rows),
        "max_self_intersections": max(r["self_intersections"] for r in rows),
        "final_self_intersections": rows[-1]["self_intersections"],
        "collision_pairs_per_frame": float(np.mean([r["collision_pairs"] for r in rows])),
        "impact_zones": int(sum(r["impact_zones"] for r in rows)),
        "min_z": float(result.positions[-1][:, 2].min()),
        "error": result.error,
    }


def check_positions(n: int, pos: np.ndarray) -> tuple[float, int]:
    """Our independent checks on a state of the sphere scene: (penetration [m], self pairs)."""
    spec = sphere_spec(n, 1, True, None)
    model = build_model(spec.cloth)
    handler = CollisionHandler(model, spec.colliders, True, spec.fps, spec.frames)
    rep = handler.report(np.ascontiguousarray(pos, dtype=np.float64), handler.colliders.state(0))
    depth = analytic_depth(pos, np.zeros((1, 3)), np.array([RADIUS]), np.zeros((0, 3)),
                           np.zeros((0, 3)))
    return float(depth), rep.self_intersections


def run_blender(n: int, frames: int, self_collision: bool) -> dict | None:
    try:
        from blender_builtin import run_builtin
    except ImportError:
        return None
    # Blender's frame 1 is the initial state, so frames + 1 evaluations give `frames` steps.
    r = run_builtin(n, frames + 1, scene="sphere", self_collision=self_collision,
                    return_positions=True)
    pos = np.asarray(r.pop("positions"), dtype=np.float64)
    r["deepest_penetration_m"], r["final_self_intersections"] = check_positions(n, pos)
    r["self_collision"] = self_collision
    return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[65, 129])
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--substeps", type=int, default=None, help="ours (default: the model's)")
    ap.add_argument("--self-collision", choices=["off", "on", "both"], default="both")
    ap.add_argument("--no-blender", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.self_collision]

    run_ours(9, 3, True, args.substeps)  # compile (or load) every kernel outside the timings
    rows = []
    for n in args.sizes:
        for sc in modes:
            pair = [run_ours(n, args.frames, sc, args.substeps)]
            if not args.no_blender:
                pair.append(run_blender(n, args.frames, sc))
            for row in pair:
                if row is None:
                    continue
                rows.append(row)
                print(f"{row['solver']:16s} {n * n:6d} v  self={sc!s:5s} "
                      f"median {row['median_ms']:8.1f} ms  worst {row['worst_ms']:8.1f} ms  "
                      f"strain {100 * row['max_strain']:5.1f}%  "
                      f"penetration {1e3 * row['deepest_penetration_m']:.2f} mm  "
                      f"self-int {row.get('final_self_intersections')}", flush=True)
            if len(pair) == 2 and pair[1] is not None:
                print(f"   ratio Blender/ours: median {pair[1]['median_ms'] / pair[0]['median_ms']:.2f}x"
                      f"  worst {pair[1]['worst_ms'] / pair[0]['worst_ms']:.2f}x", flush=True)
    save_json(args.json, {"rows": rows, "frames": args.frames})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
