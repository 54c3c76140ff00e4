"""Time per frame of the yarn-level knit model (solver/yarn/, docs/yarn.md, "Speed").

A stockinette swatch of N × N wool-worsted stitches (or ``--courses``) is generated, relaxed
(relax.py: Kaldor's 20 ms, then the settle) and hung from its top course under gravity for
``--frames`` frames at 24 fps through the frame loop every model goes through
(simulation.Simulation); prints the relaxation time, the time per frame (wall and CPU), the
steps and halvings per frame, where a frame's time goes (the contact pass; the
candidate-pair search; the rest), the threads each frame ran on and the machine's load. A
frame of Kaldor's swatch takes seconds to a minute, its relaxation minutes: a few frames say
what a frame costs.

With ``--baseline TREE`` (a checkout of an older commit, e.g. ``git worktree add``), each of
``--repeat`` rounds runs the baseline's own ``bench/yarn_swatch.py`` and then this one, each in
a fresh process, one after the other: on a shared machine only such interleaved runs compare
(docs/yarn.md). ``--json`` writes every run, the medians and their ratio, and how far apart the
two trees' points end (the last round's).

    NUMBA_NUM_THREADS=2 .venv/bin/python bench/yarn_swatch.py --sizes 32 --courses 42 --frames 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from record import save_json  # noqa: E402


def run(n: int, frames: int, fps: float = 24.0, courses: int | None = None) -> dict:
    import dataclasses

    import numpy as np

    from solver import SimulationSpec, SolverSettings, YarnParams
    from solver.simulation import Simulation
    from solver.yarn import knit_swatch, relax_setup, swatch_setup

    p = YarnParams()
    c = n if courses is None else courses
    sw = knit_swatch("stockinette", n, c, 5.6e-3, 4.2e-3, p.radius)
    t0 = time.perf_counter()
    setup, relaxed = relax_setup(swatch_setup(sw, p))
    t_relax = time.perf_counter() - t0
    setup = dataclasses.replace(setup, pin_indices=sw.top_course)
    sim = Simulation(SimulationSpec(setup, SolverSettings(model="yarn"), frames=frames, fps=fps,
                                    gravity=np.array([0.0, -9.81, 0.0])))
    solver = sim.solver
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
    solver._contact = timed("contact", solver._contact)
    solver.tree.pairs = timed("pairs", solver.tree.pairs)
    t0, c0 = time.perf_counter(), time.process_time()
    load0 = os.getloadavg()[0]
    while not sim.done:
        sim.step()
    wall = (time.perf_counter() - t0) / frames
    cpu = (time.process_time() - c0) / frames
    st = solver.stats
    reports = sim.result.frames
    return {"stitches": n, "courses": c, "frames": frames, "points": len(setup.positions),
            "segments": len(solver.rest), "relax_s": t_relax, "settled_s": relaxed.settled,
            "frame_s": wall, "frame_cpu_s": cpu, "steps_per_frame": st.steps / frames,
            "refinements": st.refinements, "stability_refinements": st.stability_refinements,
            "contact_share": spent["contact"] / (wall * frames),
            "pairs_share": spent["pairs"] / (wall * frames),
            "closest_diameters": st.min_clearance / (2 * p.radius),
            "frame_wall_s": [r.wall_time_s for r in reports],
            "threads": [r.threads for r in reports],
            # the machine's 1-minute load at the start and the end of the frames
            "load": [load0, os.getloadavg()[0]],
            "error": sim.result.error}


def _load(r: dict) -> str:
    """The machine's load over a row's frames (rows of older trees have none)."""
    load = r.get("load")
    return "?" if load is None else f"{load[0]:.1f}-{load[1]:.1f}"


def _line(r: dict) -> str:
    return (f"{r['stitches']:>3} x {r['courses']:<3} {r['points']:>6} points  relax "
            f"{r['relax_s']:.1f} s  {r['frame_s']:.2f} s/frame (CPU {r['frame_cpu_s']:.2f} s)  "
            f"{r['steps_per_frame']:.0f} steps/frame  refinements {r['refinements']} "
            f"threads {r.get('threads', '?')}  load {_load(r)}  "
            f"(+{r['stability_refinements']} for stability)  "
            f"contact {100 * r.get('contact_share', 0):.0f}%  "
            f"pair search {100 * r.get('pairs_share', 0):.0f}%  "
            f"closest {r['closest_diameters']:.2f} D")


# What a fresh process runs in a tree: that tree's own ``run`` (older trees have it too), each
# size's last positions kept (from the Simulation it makes) to compare the trees' results
_ROUND = """
import json, sys
import numpy as np
sys.path.insert(0, "bench")
import yarn_swatch
import solver.simulation as simulation
made = []
_init = simulation.Simulation.__init__
def init(self, *a, **k):
    _init(self, *a, **k)
    made.append(self)
simulation.Simulation.__init__ = init
yarn_swatch.run(3, 1)
rows = []
for i, n in enumerate({sizes}):
    rows.append(yarn_swatch.run(n, {frames}, courses={courses}))
    np.save({out!r} + f".{{i}}.npy", made[-1].solver.x)
open({out!r}, "w").write(json.dumps(rows))
"""


def _subprocess(tree: Path, sizes: list[int], frames: int, courses: int | None):
    """Run ``tree``'s ``run`` for ``sizes`` in a fresh process; (its rows, each size's
    positions at the end (P, 3) [m])."""
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "rows.json")
        code = _ROUND.format(frames=frames, courses=courses, sizes=sizes, out=out)
        subprocess.run([sys.executable, "-c", code], check=True, cwd=tree)
        return (json.loads(Path(out).read_text()),
                [np.load(f"{out}.{i}.npy") for i in range(len(sizes))])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--frames", type=int, default=2)
    ap.add_argument("--courses", type=int, default=None,
                    help="courses (default: as many as stitches); 42 with --sizes 32 is "
                         "Kaldor's validation swatch")
    ap.add_argument("--baseline", type=Path, help="a checkout to interleave with (see above)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write every run, medians and ratios here")
    args = ap.parse_args()
    if args.baseline is not None:
        import numpy as np

        here = Path(__file__).resolve().parent.parent
        runs = {"baseline": [], "this": []}
        last = {}
        for k in range(args.repeat):
            for name, tree in (("baseline", args.baseline.resolve()), ("this", here)):
                rows, last[name] = _subprocess(tree, args.sizes, args.frames, args.courses)
                runs[name].append(rows)
                for r in rows:
                    print(f"round {k + 1} {name:>8}: {_line(r)}", flush=True)
        summary = {}
        for i, n in enumerate(args.sizes):
            med = {name: statistics.median(rows[i]["frame_s"] for rows in runs[name])
                   for name in runs}
            # CPU time follows the work done more closely than the wall on a shared machine
            cpu = {name: statistics.median(rows[i]["frame_cpu_s"] for rows in runs[name])
                   for name in runs}
            # how far this tree's result lies from the baseline's after the frames [m]
            apart = np.linalg.norm(last["this"][i] - last["baseline"][i], axis=1)
            summary[f"{n}x{args.courses or n}"] = {
                "baseline_frame_s": med["baseline"], "frame_s": med["this"],
                "ratio": med["this"] / med["baseline"],
                "frame_cpu_s": cpu["this"], "baseline_frame_cpu_s": cpu["baseline"],
                "cpu_ratio": cpu["this"] / cpu["baseline"],
                "frame_s_runs": [rows[i]["frame_s"] for rows in runs["this"]],
                "baseline_frame_s_runs": [rows[i]["frame_s"] for rows in runs["baseline"]],
                "steps_per_frame": runs["this"][0][i]["steps_per_frame"],
                "baseline_steps_per_frame": runs["baseline"][0][i]["steps_per_frame"],
                "apart_mean_m": float(apart.mean()), "apart_max_m": float(apart.max()),
                "load": os.getloadavg()}
            print(f"{n} x {args.courses or n}: {med['this']:.2f} s/frame against "
                  f"{med['baseline']:.2f} s ({med['this'] / med['baseline']:.2f}x; CPU "
                  f"{cpu['this'] / cpu['baseline']:.2f}x); the points "
                  f"{1e3 * apart.mean():.2f} mm apart on average, {1e3 * apart.max():.2f} at most")
        save_json(args.json, {"runs": runs, "sizes": summary,
                              "threads": os.environ.get("NUMBA_NUM_THREADS")})
        return
    run(3, 1)  # compile or load the kernels first
    rows = []
    for n in args.sizes:
        r = run(n, args.frames, courses=args.courses)
        rows.append(r)
        print(_line(r), flush=True)
    save_json(args.json, {"rows": rows, "threads": os.environ.get("NUMBA_NUM_THREADS")})


if __name__ == "__main__":
    main()
