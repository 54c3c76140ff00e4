"""Per-frame cost and stretch of our models against Blender's built-in Cloth, in one process.

Scene (the same for everyone): a 1 m × 1 m cloth lying flat at z = 1 m, held at the two corners
of one edge, falling and swinging for ``--frames`` frames at 24 fps. Ours uses the shipped
``cotton`` preset (SI values, 5% strain limit); Blender uses its default Cloth settings (= its
Cotton preset, quality 5). Blender runs through the bpy wheel when it is installed.

JIT compile time is measured separately, in fresh processes: once with an empty numba cache
(cold) and once with the cache filled (warm), so per-frame figures never include it.

    .venv/bin/python bench/bench_cloth.py                  # 1k, 4k, 16k vertices
    .venv/bin/python bench/bench_cloth.py --sizes 33 65 --frames 24 --json out.json
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))  # scenarios.py: set-ups with known answers

from record import save_json  # noqa: E402
from solver import SolverSettings  # noqa: E402
from solver.diagnostics import edge_strain  # noqa: E402
from solver.model import build_model  # noqa: E402
from solver.formats.presets import load_preset  # noqa: E402
from scenarios import hanging_cloth  # noqa: E402
from solver.simulation import simulate  # noqa: E402

JIT_PROBE = (
    "import time; t=time.perf_counter();"
    "from solver import SolverSettings, MaterialParams;"
    "from scenarios import hanging_cloth; from solver.simulation import simulate;"
    "[simulate(hanging_cloth(5, MaterialParams(max_strain=0.1), SolverSettings(model=m),"
    " size=0.1, frames=2)) for m in ('implicit', 'mass_spring')];"
    "print(time.perf_counter()-t)"
)


def jit_seconds(cache_dir: str) -> float:
    """Wall time of a fresh process that imports the solver and runs both models once."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    out = subprocess.run([sys.executable, "-c", JIT_PROBE], env=env, check=True,
                         capture_output=True, text=True, cwd=ROOT)
    return float(out.stdout.strip().splitlines()[-1])


def run_ours(model: str, n: int, frames: int, material) -> dict:
    """Simulate the hanging scene with one of our models; timings exclude the first frame."""
    spec = hanging_cloth(n, material, SolverSettings(model=model), frames=frames)
    result = simulate(spec)
    rep = result.report()
    wall = np.array([f["wall_time_s"] for f in rep["frames"]]) * 1e3
    mesh_model = build_model(spec.cloth)
    strain = edge_strain(result.positions[-1], mesh_model.edges, mesh_model.edge_rest_length)
    return {
        "solver": model, "vertices": n * n, "frames": frames,
        "median_ms": float(np.median(wall[1:])) if len(wall) > 1 else float(wall[0]),
        "worst_ms": float(wall[1:].max()) if len(wall) > 1 else float(wall[0]),
        "first_frame_ms": float(wall[0]),
        "max_strain": float(strain.max()), "p99_strain": float(np.percentile(strain, 99)),
        "mean_strain": float(np.mean(np.abs(strain))),
        "substeps": int(np.median([f["substeps"] for f in rep["frames"]])),
        "iterations": int(np.median([f["iterations"] for f in rep["frames"]])),
        "min_z": float(result.positions[-1][:, 2].min()),
        "error": result.error,
    }


def run_blender(n: int, frames: int) -> dict | None:
    """Blender's built-in Cloth on the same scene, or None when bpy is not installed."""
    try:
        from blender_builtin import run_builtin
    except ImportError:
        return None
    # Blender's frame 1 is the initial state, so frames + 1 evaluations give `frames` steps.
    r = run_builtin(n, frames + 1, scene="hanging")
    r["solver"] = "blender_builtin"
    return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[33, 65, 129])
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--mass-spring-frames", type=int, default=6,
                    help="frames for the explicit model (it takes hundreds of substeps)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as cache:
        cold = jit_seconds(cache)
        warm = jit_seconds(cache)
    jit = {"cold_s": cold, "warm_s": warm}
    print(f"JIT: cold {cold:.1f} s, warm cache {warm:.2f} s (import + first tiny run)", flush=True)
    cotton = load_preset("cotton")
    run_ours("implicit", 5, 2, cotton)  # warm this process's kernels
    run_ours("mass_spring", 5, 2, cotton)
    for n in args.sizes:
        for row in (run_blender(n, args.frames), run_ours("implicit", n, args.frames, cotton),
                    run_ours("mass_spring", n, args.mass_spring_frames, cotton)):
            if row is None:
                continue
            rows.append(row)
            print(f"{row['solver']:16s} {n * n:6d} v  median {row['median_ms']:8.1f} ms  "
                  f"worst {row['worst_ms']:8.1f} ms  max strain {100 * row['max_strain']:6.2f}%  "
                  f"p99 {100 * row.get('p99_strain', float('nan')):5.2f}%", flush=True)
    save_json(args.json, {"jit": jit, "rows": rows, "frames": args.frames})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
