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
``--repeat`` rounds runs the baseline's own ``run`` and this one's in two processes side by
side and takes their frames in turn, one frame at a time: on a shared machine only frames taken
next to each other compare (docs/yarn.md). ``--json`` writes every run and frame, the median
seconds per frame, the median ratio of a frame to the baseline's frame beside it, the load,
and how far apart the two trees' points end (the last round's, when both knit the same points).

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


# What a worker process runs in a tree: that tree's own ``run`` (older trees have it too, with
# their own frame loop: ``YarnSimulation.advance`` before the yarn model went through
# ``simulation.Simulation``), every frame of the measured swatch held until the parent says
# "go" on stdin, then timed and reported on stdout; the swatch's last positions are saved to
# compare the trees' results
_WORKER = """
import json, os, sys, time
import numpy as np
sys.path.insert(0, "bench")
import yarn_swatch
import solver.simulation as simulation
import solver.yarn as yarn
gate = {{"on": False, "inside": False, "last": None}}
def gated(fn):
    def wrapper(self, *a, **k):
        if not gate["on"] or gate["inside"]:
            return fn(self, *a, **k)
        print("@@ready", flush=True)
        sys.stdin.readline()
        gate["inside"], gate["last"] = True, self
        load = os.getloadavg()[0]
        t, c = time.perf_counter(), time.process_time()
        try:
            return fn(self, *a, **k)
        finally:
            gate["inside"] = False
            print("@@frame " + json.dumps({{"s": time.perf_counter() - t,
                                            "cpu_s": time.process_time() - c,
                                            "load": load}}), flush=True)
    return wrapper
simulation.Simulation.step = gated(simulation.Simulation.step)
if hasattr(yarn, "YarnSimulation"):
    yarn.YarnSimulation.advance = gated(yarn.YarnSimulation.advance)
yarn_swatch.run(3, 1)
gate["on"] = True
row = yarn_swatch.run({n}, {frames}, courses={courses})
sim = gate["last"]
np.save({out!r}, getattr(sim, "solver", sim).x)
print("@@row " + json.dumps(row), flush=True)
"""


class _Worker:
    """One tree's ``run`` in a process of its own, stepping a frame when told to."""

    def __init__(self, tree: Path, n: int, frames: int, courses: int | None, out: str):
        code = _WORKER.format(n=n, frames=frames, courses=courses, out=out)
        self.proc = subprocess.Popen([sys.executable, "-c", code], cwd=tree, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def expect(self, tag: str) -> str:
        """The rest of the next line starting with ``@@tag`` (other output is passed on)."""
        for line in self.proc.stdout:
            if line.startswith("@@" + tag):
                return line[len(tag) + 2:].strip()
            print(line, end="")
        raise RuntimeError(f"the worker ended before '{tag}' (exit {self.proc.wait()})")

    def frame(self) -> dict:
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        return json.loads(self.expect("frame"))


def _interleaved(trees: dict, n: int, frames: int, courses: int | None) -> tuple[dict, dict]:
    """Both trees' swatches relaxed side by side, then their frames taken in turn (the first
    to go alternates from frame to frame), so each pair of frames ran under the same load;
    (each tree's row with its frames, each tree's last positions (P, 3) [m])."""
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        workers = {name: _Worker(tree, n, frames, courses, str(Path(tmp) / f"{name}.npy"))
                   for name, tree in trees.items()}
        for w in workers.values():
            w.expect("ready")
        timed = {name: [] for name in trees}
        names = list(trees)
        for f in range(frames):
            for name in (names if f % 2 == 0 else names[::-1]):
                timed[name].append(workers[name].frame())
                if f + 1 < frames:
                    workers[name].expect("ready")
        rows = {}
        for name, w in workers.items():
            r = json.loads(w.expect("row"))
            # the row's own wall time counts the waits for the other tree's frames
            wall = sum(f["s"] for f in timed[name]) / frames
            scale = r["frame_s"] / wall
            rows[name] = {**r, "frame_s": wall,
                          "frame_cpu_s": sum(f["cpu_s"] for f in timed[name]) / frames,
                          "contact_share": r["contact_share"] * scale,
                          "pairs_share": r["pairs_share"] * scale,
                          "interleaved_frames": timed[name]}
            if w.proc.wait() != 0:
                raise RuntimeError(f"the {name} worker failed")
        return rows, {name: np.load(str(Path(tmp) / f"{name}.npy")) for name in trees}


def _commit(tree: Path) -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree,
                          capture_output=True, text=True).stdout.strip()


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

        trees = {"baseline": args.baseline.resolve(),
                 "this": Path(__file__).resolve().parent.parent}
        runs = {"baseline": [], "this": []}
        last = {}
        for k in range(args.repeat):
            for name in runs:
                runs[name].append([])
            for i, n in enumerate(args.sizes):
                rows, last[n] = _interleaved(trees, n, args.frames, args.courses)
                for name, r in rows.items():
                    runs[name][k].append(r)
                    print(f"round {k + 1} {name:>8}: {_line(r)}  frames "
                          + " ".join(f"{f['s']:.2f}" for f in r["interleaved_frames"]), flush=True)
        summary = {}
        for i, n in enumerate(args.sizes):
            frames = {name: [f for rows in runs[name] for f in rows[i]["interleaved_frames"]]
                      for name in runs}
            # each frame against the baseline's frame taken next to it, under the same load
            pair = [t["s"] / b["s"] for t, b in zip(frames["this"], frames["baseline"])]
            pair_cpu = [t["cpu_s"] / b["cpu_s"] for t, b in zip(frames["this"], frames["baseline"])]
            med = {name: statistics.median(f["s"] for f in frames[name]) for name in runs}
            cpu = {name: statistics.median(f["cpu_s"] for f in frames[name]) for name in runs}
            loads = [f["load"] for name in runs for f in frames[name]]
            x = {name: last[n][name] for name in runs}
            # how far this tree's result lies from the baseline's after the frames [m] (none
            # when the trees knit the swatch with different points)
            apart = (np.linalg.norm(x["this"] - x["baseline"], axis=1)
                     if x["this"].shape == x["baseline"].shape else None)
            summary[f"{n}x{args.courses or n}"] = {
                "baseline_commit": _commit(trees["baseline"]),
                "baseline_frame_s": med["baseline"], "frame_s": med["this"],
                "ratio": statistics.median(pair), "ratio_range": [min(pair), max(pair)],
                "frame_cpu_s": cpu["this"], "baseline_frame_cpu_s": cpu["baseline"],
                "cpu_ratio": statistics.median(pair_cpu),
                "frame_s_runs": [f["s"] for f in frames["this"]],
                "baseline_frame_s_runs": [f["s"] for f in frames["baseline"]],
                "steps_per_frame": runs["this"][0][i]["steps_per_frame"],
                "baseline_steps_per_frame": runs["baseline"][0][i]["steps_per_frame"],
                "points": runs["this"][0][i]["points"],
                "baseline_points": runs["baseline"][0][i]["points"],
                "apart_mean_m": None if apart is None else float(apart.mean()),
                "apart_max_m": None if apart is None else float(apart.max()),
                # the machine's 1-minute load as each frame started (this run's own busy
                # process counts in it), least, median and most
                "load": [min(loads), statistics.median(loads), max(loads)]}
            print(f"{n} x {args.courses or n}: {med['this']:.2f} s/frame against "
                  f"{med['baseline']:.2f} s ({statistics.median(pair):.2f}x, frame by frame "
                  f"{min(pair):.2f}-{max(pair):.2f}; CPU {statistics.median(pair_cpu):.2f}x), "
                  f"load {min(loads):.1f}-{max(loads):.1f}")
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
