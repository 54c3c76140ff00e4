"""Time per frame of the yarn-level knit model (solver/yarn/, docs/yarn.md).

A stockinette swatch of N × N wool-worsted stitches is generated, relaxed (Kaldor §7.1,
20 ms) and hung from its top course under gravity for ``--frames`` frames at 24 fps; prints the
relaxation time, the time per frame, the steps and refinements per frame and where the time of
one frame goes (the contact pass: forces and clearance check; the candidate-pair search; the
rest).

    NUMBA_NUM_THREADS=1 .venv/bin/python bench/yarn_swatch.py --sizes 4 8 12 --frames 2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solver.params import YarnParams
from solver.yarn import YarnSimulation, knit_swatch, loop_regions, relax_swatch


def run(n: int, frames: int, fps: float = 24.0, courses: int | None = None) -> dict:
    p = YarnParams()
    c = n if courses is None else courses
    sw = knit_swatch("stockinette", n, c, 5.6e-3, 4.2e-3, p.radius)
    t0 = time.perf_counter()
    relaxed = relax_swatch(sw, p, duration=0.02)
    t_relax = time.perf_counter() - t0
    x = relaxed.positions
    top = sw.top_course
    sim = YarnSimulation(x, sw.yarn_offsets, p, pins=top, ties=sw.ties, rest=relaxed.rest,
                         gravity=(0.0, -9.81, 0.0), regions=loop_regions(sw.loops, n, c))
    spent = {"contact": 0.0, "pairs": 0.0}

    def timed(name, fn):
        def wrapper(*a, **k):
            s = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[name] += time.perf_counter() - s
        return wrapper

    # the contact pass (forces and clearance check in one) and the candidate-pair search
    sim._contact = timed("contact", sim._contact)
    sim.tree.pairs = timed("pairs", sim.tree.pairs)
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(frames):
        sim.advance(1.0 / fps)
    wall = (time.perf_counter() - t0) / frames
    cpu = (time.process_time() - c0) / frames
    st = sim.stats
    return {"stitches": n, "courses": c, "points": len(x), "segments": len(sim.segments.rest),
            "relax_s": t_relax, "frame_s": wall, "frame_cpu_s": cpu, "steps_per_frame": st.steps / frames,
            "refinements": st.refinements, "stability_refinements": st.stability_refinements,
            "contact_share": spent["contact"] / (wall * frames),
            "pairs_share": spent["pairs"] / (wall * frames),
            "closest_diameters": st.min_clearance / (2 * p.radius)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--frames", type=int, default=2)
    ap.add_argument("--courses", type=int, default=None,
                    help="courses (default: as many as stitches); 42 with --sizes 32 is "
                         "Kaldor's validation swatch")
    args = ap.parse_args()
    run(3, 1)  # compile or load the kernels first
    for n in args.sizes:
        r = run(n, args.frames, courses=args.courses)
        print(f"{r['stitches']:>3} x {r['courses']:<3} {r['points']:>6} points "
              f"{r['segments']:>6} segments  relax {r['relax_s']:.1f} s  "
              f"{r['frame_s']:.2f} s/frame (CPU {r['frame_cpu_s']:.2f} s)  "
              f"{r['steps_per_frame']:.0f} steps/frame  "
              f"refinements {r['refinements']} (+{r['stability_refinements']} for stability)  "
              f"contact {100 * r['contact_share']:.0f}%  pair search {100 * r['pairs_share']:.0f}%"
              f"  closest {r['closest_diameters']:.2f} D", flush=True)


if __name__ == "__main__":
    main()
