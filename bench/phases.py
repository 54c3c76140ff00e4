"""Where a headline scene's time goes, phase by phase, in the solver itself.

The scene is the headline's own (bench/headline.py: the add-on builds it as an artist would, a
new cloth object's defaults, and its bake's SimulationSpec is taken), but it is simulated frame
by frame on the main thread with the add-on's copy of the solver, without the bake around it,
and every phase of a step is timed (wall clock; with ``--threads 1`` that is the CPU time):

* ``newton_step``: the implicit step's Newton iterations (``ImplicitSolver._dynamic_step``), of
  which ``forces`` (force and Jacobian evaluations) and ``linear_solve`` (preconditioner
  refreshes and PCG, ``ImplicitSolver._solve``);
* ``contact_set``: the contact set and its matrix pattern (``ImplicitSolver._prepare_contacts``),
  of which ``set_search`` (``ContactPairs._rebuild``: tree queries and the narrow phase);
* ``collider_prediction``: the collider contacts predicted for the solve
  (``CollisionHandler.contact_constraints``, twice per step);
* ``pipeline``: the collision pipeline after the step with its strain-limit rounds
  (``ClothSolver._resolve_collisions``);
* ``frame_report``: the independent checks after every frame (strain, energies,
  intersections, penetration);
* across those: ``tree_queries`` (``TriangleTree.self_pairs``, ``pairs_with`` and
  ``box_pairs``; the frame report counts intersections in its own descent of the trees) and the
  ``narrow_phase``, also by test (``narrow_nearby``, ``narrow_continuous``,
  ``narrow_proximity``, ``narrow_within``).

Each configuration runs ``--rounds`` times and the fastest run is kept. The phases nest (forces and linear_solve are part of newton_step), so they do not add up to
the whole; ``other`` is the frame's time outside the first-level phases. Counts per run: steps,
Newton and PCG iterations, contact sets searched, proximity pushes, continuous collisions,
strain rounds, tree queries and narrow-phase calls.

    .venv/bin/python bench/phases.py --json bench/results/phases_4k.json
    .venv/bin/python bench/phases.py --scenes sphere_self --qualities final --threads 1
"""

from __future__ import annotations

import argparse
import collections
import importlib
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import headline  # noqa: E402  (sets up the scratch Blender resources before bpy)
from record import save_json  # noqa: E402

FIRST_LEVEL = ("newton_step", "contact_set", "collider_prediction", "pipeline", "frame_report")
NARROW = {0: "narrow_nearby", 1: "narrow_continuous", 2: "narrow_proximity", 3: "narrow_within"}


class PhaseClock:
    """Wall time and calls per phase, from wrappers around the solver's methods."""

    def __init__(self):
        self.seconds = collections.defaultdict(float)
        self.calls = collections.defaultdict(int)

    def wrap(self, owner, name: str, phase: str) -> None:
        f = getattr(owner, name)

        def timed(*args, **kw):
            t = time.perf_counter()
            try:
                return f(*args, **kw)
            finally:
                self.seconds[phase] += time.perf_counter() - t
                self.calls[phase] += 1
        setattr(owner, name, timed)

    def wrap_narrow(self, tester_class) -> None:
        f = tester_class._run

        def timed(tester, mode, *args, **kw):
            t = time.perf_counter()
            try:
                return f(tester, mode, *args, **kw)
            finally:
                self.seconds[NARROW[mode]] += time.perf_counter() - t
                self.calls[NARROW[mode]] += 1
        tester_class._run = timed

    def clear(self) -> None:
        self.seconds.clear()
        self.calls.clear()


def instrument(module: str) -> PhaseClock:
    """Timers around the phases of the add-on's copy of the solver (module: its package)."""
    def mod(name):
        return importlib.import_module(f"{module}.solver.{name}")
    implicit, pipeline, simulation = mod("solvers.implicit"), mod("collision.pipeline"), \
        mod("simulation")
    clock = PhaseClock()
    clock.wrap(implicit.ImplicitSolver, "_dynamic_step", "newton_step")
    clock.wrap(mod("system").ForceSystem, "evaluate", "forces")
    clock.wrap(implicit.ImplicitSolver, "_solve", "linear_solve")
    clock.wrap(implicit.ImplicitSolver, "_prepare_contacts", "contact_set")
    clock.wrap(mod("collision.contact_pairs").ContactPairs, "_rebuild", "set_search")
    clock.wrap(pipeline.CollisionHandler, "contact_constraints", "collider_prediction")
    clock.wrap(mod("solvers.base").ClothSolver, "_resolve_collisions", "pipeline")
    clock.wrap(simulation, "frame_report", "frame_report")
    tree = mod("collision.bvh").TriangleTree
    clock.wrap(tree, "self_pairs", "tree_queries")
    clock.wrap(tree, "pairs_with", "tree_queries")
    clock.wrap(tree, "box_pairs", "tree_queries")
    clock.wrap_narrow(mod("collision.narrow_phase").PairTester)
    return clock


def run(scene: str, quality: str, threads: int, n: int, frames: int, rounds: int) -> dict:
    """One scene at one quality and thread count: seconds per phase and counts, of the
    fastest of ``rounds`` runs (the machine is shared)."""
    import bpy
    import numba
    module, cloth = headline._scene_objects(scene, n, frames)
    cloth.cloth_solver.quality = quality.upper()
    bake = importlib.import_module(f"{module}.cloth_addon.bake")
    spec = bake.BakeJob(bpy.context, log=lambda line: None).groups[0].spec
    solver = importlib.import_module(f"{module}.solver")
    threads_module = importlib.import_module(f"{module}.solver.threads")
    threads_module.set_governor(threads_module.ThreadGovernor(enabled=False))
    numba.set_num_threads(threads)
    clock = getattr(solver, "_phase_clock", None)
    if clock is None:  # one set of wrappers per copy of the solver
        # every kernel compiled or loaded first: a scene's first frame does not reach them
        # all (no self-contact yet), and a compilation would land in a timed phase
        importlib.import_module(f"{module}.solver.warmup").warm_up()
        clock = solver._phase_clock = instrument(module)
    Simulation = importlib.import_module(f"{module}.solver.simulation").Simulation
    warm = Simulation(spec)  # compiles or loads every kernel the scene uses, untimed
    warm.step()
    best = None
    for _ in range(rounds):
        clock.clear()
        sim = Simulation(spec)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        while not sim.done:
            sim.step()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        if best is None or wall < best[2]:
            best = (sim, cpu, wall, dict(clock.seconds), dict(clock.calls))
    sim, cpu, wall, seconds, calls = best
    if sim.result.error:
        raise RuntimeError(f"{scene} {quality}: {sim.result.error}")
    fr = sim.result.frames
    phases = {k: round(v, 3) for k, v in sorted(seconds.items())}
    phases["narrow_phase"] = round(sum(seconds.get(k, 0.0) for k in NARROW.values()), 3)
    phases["other"] = round(wall - sum(seconds.get(k, 0.0) for k in FIRST_LEVEL), 3)
    counts = {
        "steps": sum(f.substeps for f in fr),
        "newton_iterations": sum(f.newton_iterations for f in fr),
        "pcg_iterations": sum(f.iterations for f in fr),
        "contact_sets": sum(f.contact_sets for f in fr),
        "proximity_pushes": sum(f.proximity_pushes for f in fr),
        "continuous_collisions": sum(f.continuous_collisions for f in fr),
        "strain_rounds": sum(f.strain_rounds for f in fr),
        **{f"{k}_calls": v for k, v in sorted(calls.items())},
    }
    return {"scene": scene, "quality": quality, "threads": threads, "vertices": n * n,
            "frames": frames, "rounds": rounds, "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
            "ms_per_frame": round(1e3 * wall / frames, 1), "phases_s": phases,
            "counts": counts,
            "worst_strain": max(f.max_strain for f in fr),
            "penetration_m": max(f.deepest_penetration_m for f in fr),
            "crossing_pairs": max(f.self_intersections for f in fr)
            if scene == "sphere_self" else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=65)
    ap.add_argument("--frames", type=int, default=48)
    ap.add_argument("--scenes", nargs="+", choices=headline.SCENES,
                    default=["sphere_self", "sphere"])
    ap.add_argument("--qualities", nargs="+", choices=("final", "preview"),
                    default=["final", "preview"])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=2, help="runs of each; the fastest is kept")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    import os
    import numba
    rows = []
    for threads in args.threads:
        if threads > numba.config.NUMBA_NUM_THREADS:
            print(f"skipping {threads} threads: numba has {numba.config.NUMBA_NUM_THREADS}")
            continue
        for scene in args.scenes:
            for quality in args.qualities:
                r = run(scene, quality, threads, args.size, args.frames, args.rounds)
                rows.append(r)
                top = sorted(((v, k) for k, v in r["phases_s"].items()), reverse=True)[:6]
                print(f"{scene} {quality} {threads} thread(s): {r['ms_per_frame']} ms/frame, "
                      + ", ".join(f"{k} {v:.2f} s" for v, k in top), flush=True)
    runs = {f"{r['scene']}_{r['quality']}_t{r['threads']}": r for r in rows}
    save_json(args.json, {"args": vars(args) | {"json": str(args.json)},
                          "load": os.getloadavg()[0], "runs": runs})
    return 0


if __name__ == "__main__":
    sys.exit(main())
