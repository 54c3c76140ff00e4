"""Does a relaxed knit stay at rest, and does a hanging one hold? (docs/yarn.md, "Validation").

Wool-worsted swatches of ``--size`` stitches × courses, made as Add > Knit Swatch makes them
(cast-on and bind-off edges, Kaldor's relaxation and the settle, the yarn's default friction or
``--friction``, which then acts in the relaxation and the simulation alike):

- free: each pattern floating with no gravity and nothing pinned for ``--seconds``; its width
  along the course and height along the wale, measured along the fabric (the length of the
  polyline through the loop centroids of each course, resp. each stitch column, times
  n/(n − 1), averaged), against the relaxed swatch's;
- hung: the 2×2 rib hanging from its top course (and bind-off) under gravity for ``--seconds``
  at the model's longest step h and at h/2: its height, the largest loop against its relaxed
  size (a loop's size: the rms distance of its points from their centroid), whether the
  courses stay in order down the wale, and the distance between the two runs' final positions
  (a step-convergence check);
- throughout: yarn length change and the closest non-neighbouring pair, in diameters.

    NUMBA_NUM_THREADS=2 .venv/bin/python bench/yarn_rest.py --json bench/results/yarn_rest.json
    NUMBA_NUM_THREADS=1 .venv/bin/python bench/yarn_rest.py --parts hung --friction 0.3 \
        --json bench/results/yarn_rest_hung_12x12_friction.json
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from record import save_json  # noqa: E402

from solver.params import SolverSettings, YarnParams  # noqa: E402
from solver.yarn import YarnSolver, build_yarn_model, knit_swatch, relax_setup, swatch_setup  # noqa: E402
from solver.yarn.dynamics import DEFAULT_TIME_STEP  # noqa: E402

W, H = 5.6e-3, 4.2e-3          # worsted gauge: stitch width and course height [m]
PATTERNS = ("stockinette", "garter", "rib2x2", "seed")


def loop_sizes(x: np.ndarray, loops: np.ndarray, n: int) -> np.ndarray:
    """(n,) rms distance [m] of each loop's points from their centroid."""
    count = np.bincount(loops, minlength=n)[:, None]
    c = np.zeros((n, 3))
    np.add.at(c, loops, x)
    c /= count
    d2 = np.zeros(n)
    np.add.at(d2, loops, ((x - c[loops]) ** 2).sum(axis=1))
    return np.sqrt(d2 / count[:, 0])


def relaxed(pattern: str, S: int, C: int, yarn: YarnParams):
    sw = knit_swatch(pattern, S, C, W, H, yarn.radius)
    t0 = time.perf_counter()
    setup, rel = relax_setup(swatch_setup(sw, yarn))
    return sw, setup, rel, time.perf_counter() - t0


def run(sw, setup, seconds: float, *, gravity=(0.0, 0.0, 0.0), pins=(), time_step=None):
    """Step the relaxed swatch for ``seconds``; (solver, wall seconds)."""
    setup = dataclasses.replace(setup, pin_indices=np.asarray(pins, np.int64))
    sim = YarnSolver(build_yarn_model(setup), SolverSettings(model="yarn", time_step=time_step),
                     gravity=gravity)
    t0 = time.perf_counter()
    sim.advance(seconds)
    return sim, time.perf_counter() - t0


def guarantees(sim, length0: float) -> dict:
    D = 2.0 * sim.model.radius
    return {"length_change": float(abs(sim.yarn_lengths().sum() / length0 - 1.0)),
            "closest_diameters": float(sim.stats.min_clearance / D),
            "refinements": int(sim.stats.refinements)}


def free(pattern: str, S: int, C: int, seconds: float, yarn: YarnParams) -> dict:
    sw, setup, rel, relax_s = relaxed(pattern, S, C, yarn)
    w0, h0 = sw.fabric_size(setup.positions)
    sim = YarnSolver(build_yarn_model(setup), SolverSettings(model="yarn"), gravity=(0, 0, 0))
    length0 = float(sim.yarn_lengths().sum())
    sim, wall = run(sw, setup, seconds)
    w1, h1 = sw.fabric_size(sim.x)
    return {"width_m": w0, "height_m": h0, "width_after_m": w1, "height_after_m": h1,
            "width_change": w1 / w0 - 1.0, "height_change": h1 / h0 - 1.0,
            "relax_s": relax_s, "wall_s": wall, **guarantees(sim, length0)}


def hung(S: int, C: int, seconds: float, yarn: YarnParams) -> dict:
    sw, setup, rel, relax_s = relaxed("rib2x2", S, C, yarn)
    n = S * C
    size0 = loop_sizes(setup.positions, sw.loops, n)
    h0 = sw.fabric_size(setup.positions)[1]
    out = {"height_m": h0, "relax_s": relax_s}
    finals = {}
    for name, h in (("h", DEFAULT_TIME_STEP), ("h_half", DEFAULT_TIME_STEP / 2)):
        probe = YarnSolver(build_yarn_model(setup), SolverSettings(model="yarn"))
        length0 = float(probe.yarn_lengths().sum())
        sim, wall = run(sw, setup, seconds, gravity=(0.0, -9.81, 0.0), pins=sw.top_course,
                        time_step=h)
        course_y = sw.loop_centroids(sim.x)[:, :, 1].mean(axis=1)
        grow = loop_sizes(sim.x, sw.loops, n) / size0
        out[name] = {"time_step_s": h, "height_ratio": sw.fabric_size(sim.x)[1] / h0,
                     "largest_loop_ratio": float(grow.max()),
                     "bottom_course_largest_loop_ratio": float(grow[:S].max()),
                     "courses_in_order": bool(np.all(np.diff(course_y) > 0)),
                     "wall_s": wall, **guarantees(sim, length0)}
        finals[name] = sim.x.copy()
    d = np.linalg.norm(finals["h"] - finals["h_half"], axis=1)
    out["h_vs_h_half_mean_m"] = float(d.mean())
    out["h_vs_h_half_max_m"] = float(d.max())
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, nargs=2, default=[12, 12], metavar=("S", "C"))
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--patterns", nargs="+", default=list(PATTERNS))
    ap.add_argument("--parts", nargs="+", default=["free", "hung"], choices=["free", "hung"])
    ap.add_argument("--friction", type=float, default=None,
                    help="yarn friction μ, in the relaxation and the simulation "
                    "(default: the yarn's)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    S, C = args.size
    yarn = YarnParams()
    label = "wool_worsted (defaults)"
    if args.friction is not None:
        yarn = dataclasses.replace(yarn, friction=args.friction)
        label = f"wool_worsted (defaults but friction {args.friction:g})"
    result = {"size": [S, C], "seconds": args.seconds, "yarn": label,
              "friction": yarn.friction, "threads": os.environ.get("NUMBA_NUM_THREADS"),
              "free": {}}
    for pattern in args.patterns if "free" in args.parts else ():
        r = free(pattern, S, C, args.seconds, yarn)
        result["free"][pattern] = r
        print(f"free {pattern:>11}: width {100 * r['width_change']:+.1f} %, height "
              f"{100 * r['height_change']:+.1f} %, closest {r['closest_diameters']:.2f} D, "
              f"{r['wall_s']:.0f} s", flush=True)
    if "hung" in args.parts:
        result["hung_rib"] = hung_report(S, C, args.seconds, yarn)
    result["load"] = os.getloadavg()
    if args.json:
        save_json(args.json, result)


def hung_report(S: int, C: int, seconds: float, yarn: YarnParams) -> dict:
    r = hung(S, C, seconds, yarn)
    for name in ("h", "h_half"):
        q = r[name]
        print(f"hung rib at {name}: height {q['height_ratio']:.3f}x, largest loop "
              f"{q['largest_loop_ratio']:.2f}x (bottom course {q['bottom_course_largest_loop_ratio']:.2f}x), "
              f"courses in order {q['courses_in_order']}, closest {q['closest_diameters']:.2f} D, "
              f"{q['wall_s']:.0f} s", flush=True)
    print(f"h vs h/2: mean {1e3 * r['h_vs_h_half_mean_m']:.2f} mm, "
          f"max {1e3 * r['h_vs_h_half_max_m']:.2f} mm")
    return r


if __name__ == "__main__":
    main()
