"""The strain-limit rounds after the collision pipeline, with the step's contacts held by the
limiter (``CONTACTS_IN_LIMITER``, collision/pipeline.py) and without, on a garment scene whose
body stretches the tee: the same scene twice in one process, a frame of each in turn, so both
see the same load.

Per frame and variant: seconds, strain rounds, seconds in the strain limiter (every call,
the step's own included) and its passes, proximity pushes, and the benchmark's independent
checks (bench/garments.py ``Checks``: worst edge strain against the tee as modelled, crossing
pairs, deepest vertex inside the body). ``--threads`` sets numba's threads (one by default,
so a frame's time is its CPU time).

    .venv/bin/python bench/strain_rounds.py --json bench/results/strain_rounds.json
    .venv/bin/python bench/strain_rounds.py --garment tee --frames 24
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scene", default="raised", help="tests/garments.py scene kind")
    ap.add_argument("--garment", default="tee_6k", help="examples/garments/ stem")
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    os.environ["NUMBA_NUM_THREADS"] = str(args.threads)  # before numba is imported

    import numpy as np

    import garments as scenes  # tests/garments.py (tests/ comes first on the path)
    from record import save_json
    from solver.collision import pipeline
    from solver.simulation import Simulation
    from solver.solvers import base
    from solver.strain_limit import limit_strain

    no_tethers = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))

    # bench/garments.py's checks (its module name is the scenes' too)
    spec = importlib.util.spec_from_file_location("garments_bench", ROOT / "bench" / "garments.py")
    bench_garments = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_garments)
    Checks = bench_garments.Checks

    limiter = {"s": 0.0, "passes": 0}
    apply_strain_limit = base.apply_strain_limit

    def timed(*a, **k):
        t = time.perf_counter()
        passes = apply_strain_limit(*a, **k)
        limiter["s"] += time.perf_counter() - t
        limiter["passes"] += passes
        return passes

    base.apply_strain_limit = timed
    # compile every kernel of both variants first (the small tee, and the limiter with
    # constraints, which its first frames may not call): no frame pays for numba
    for held in (False, True):
        pipeline.CONTACTS_IN_LIMITER = held
        Simulation(scenes.scene(args.scene, "tee", frames=2)).run()
    x = np.zeros((2, 3))
    limit_strain(x, np.array([[0, 1]]), np.ones(1), np.ones(2), *no_tethers, 0.05, 2, 1e-3,
                 np.zeros((1, 4), np.int64), np.ones((1, 4)), np.ones((1, 3)), np.zeros(1), 0.0)

    variants = {"separate": False, "held": True}
    runs = {}
    for name in variants:
        spec = scenes.scene(args.scene, args.garment, frames=args.frames)
        runs[name] = {"sim": Simulation(spec), "checks": Checks(spec), "rows": []}
    load_before = os.getloadavg()[0]
    for f in range(args.frames):
        # alternate which goes first, so neither always follows the other
        for name in (list(variants) if f % 2 == 0 else list(variants)[::-1]):
            run = runs[name]
            pipeline.CONTACTS_IN_LIMITER = variants[name]
            limiter["s"], limiter["passes"] = 0.0, 0
            t = time.perf_counter()
            run["sim"].step()
            seconds = time.perf_counter() - t
            report = run["sim"].result.frames[-1]
            checks = run["checks"].frame(run["sim"].result.positions[-1], f + 1)
            run["rows"].append({
                "s": seconds, "limiter_s": limiter["s"], "limiter_passes": limiter["passes"],
                "steps": report.substeps, "strain_rounds": report.strain_rounds,
                "pushes": report.proximity_pushes, "strain": checks["strain"],
                "crossings": checks["self_intersections"] + checks["collider_crossings"],
                "penetration_mm": checks["penetration_mm"]})
        a, b = (runs[name]["rows"][-1] for name in variants)
        print(f"{f + 1:3d}  separate {a['s']:6.2f} s {a['strain_rounds']:3d} rounds  "
              f"{100 * a['strain']:.2f} %  |  held {b['s']:6.2f} s {b['strain_rounds']:3d} "
              f"rounds  {100 * b['strain']:.2f} %", flush=True)
    pipeline.CONTACTS_IN_LIMITER = True
    out = {"scene": args.scene, "garment": args.garment, "frames": args.frames,
           "threads": args.threads, "load_before": load_before,
           "load_after": os.getloadavg()[0], "variants": {}}
    for name, run in runs.items():
        rows = run["rows"]
        col = {key: [r[key] for r in rows] for key in rows[0]}
        s = np.array(col["s"])
        out["variants"][name] = {
            **{key: [round(v, 5) if isinstance(v, float) else v for v in values]
               for key, values in col.items()},
            "total_s": float(s.sum()), "median_s": float(np.median(s)),
            "worst_s": float(s.max()), "worst_over_median": float(s.max() / np.median(s)),
            "strain_rounds_total": int(sum(col["strain_rounds"])),
            "strain_rounds_max": int(max(col["strain_rounds"])),
            "limiter_s_total": float(sum(col["limiter_s"])),
            "pushes_total": int(sum(col["pushes"])),
            "worst_strain": float(max(col["strain"])),
            "crossings_max": int(max(col["crossings"])),
            "penetration_mm_max": float(max(col["penetration_mm"])),
            "last_positions_sha256": hashlib.sha256(
                np.ascontiguousarray(run["sim"].result.positions[-1]).tobytes()).hexdigest(),
        }
    sep, held = out["variants"]["separate"], out["variants"]["held"]
    ratio = np.array(sep["s"]) / np.array(held["s"])
    out["separate_over_held"] = {
        "total": sep["total_s"] / held["total_s"],
        "worst_frame": sep["worst_s"] / held["worst_s"],
        "median_frame_ratio": float(np.median(ratio)),
        "strain_rounds": sep["strain_rounds_total"] / max(held["strain_rounds_total"], 1),
        "limiter_s": sep["limiter_s_total"] / max(held["limiter_s_total"], 1e-12),
    }
    print({k: round(v, 3) for k, v in out["separate_over_held"].items()})
    save_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
