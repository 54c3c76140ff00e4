"""Our bake and Blender's built-in cloth beside busy processes: slowdown ratios.

In one process (the bpy wheel, or Debian's ``blender -b``), the ``sphere`` scene (a 2 m cloth
of n × n vertices falling onto a sphere of radius 0.5 m; ours: ``bench_collision.sphere_spec``,
Blender: ``blender_builtin.run_builtin``) runs for ``--frames`` frames with 0, 1 and 2 busy
processes beside it (``python -c "while True: pass"``, pinned nowhere, started before and
killed after each run). Each round runs every solver at every load, in an order that rotates
from round to round, so the machine's drift falls on all alike.

Solvers:

* ``blender``: Blender's built-in Cloth (its defaults), its own thread pool;
* ``adaptive``: ours with the thread count following the free cores (``solver/threads.py``);
* ``fixed``: ours with numba's full thread count all along (the model before the governor).

Reported per solver and load: the simulated frames' total time in each round, and the slowdown
ratio time(busy) / time(idle) of the same round, as the median and range over the rounds.
The load average before each run is recorded: the machine may be shared.

    .venv/bin/python bench/busy_machine.py --rounds 3 --frames 24 --json out/busy.json
    blender -b --python bench/busy_machine.py -- --solvers adaptive fixed --frames 16
    blender -b --python bench/busy_machine.py -- --layer workqueue --solvers fixed
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numba  # noqa: E402
import numpy as np  # noqa: E402

from bench_collision import sphere_spec  # noqa: E402
from record import provenance, save_json  # noqa: E402
from solver.simulation import simulate  # noqa: E402

try:
    from solver import threads
except ImportError:  # a commit before the governor: only "fixed" exists
    threads = None

SOLVERS = ("blender", "adaptive", "fixed")
BUSY = "while True: pass"


def _python() -> str:
    """A Python for the busy loops (inside Blender, sys.executable is Blender itself)."""
    if not _in_blender():
        return sys.executable
    return shutil.which("python3") or "python3"


def _in_blender() -> bool:
    """True inside Blender's own executable (not the bpy module in a Python)."""
    return Path(sys.argv[0]).name.startswith("blender")


def _loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ")[0]
    except OSError:
        return "?"


def run_ours(n: int, frames: int, adaptive: bool) -> dict:
    """Our implicit model on the sphere scene; the frames' total wall time and thread counts."""
    if threads is not None:
        threads.set_governor(None if adaptive else threads.ThreadGovernor(enabled=False))
    if not adaptive:
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    counts = []  # the count each frame ran with (the governor gives the full one back after)
    result = simulate(sphere_spec(n, frames, False, None), progress=lambda _: counts.append(
        threads.governor().count if adaptive else numba.get_num_threads()))
    if result.error:
        raise RuntimeError(result.error)
    wall = [f.wall_time_s for f in result.frames]
    return {"total_s": float(sum(wall)), "threads": "".join(map(str, counts)),
            "hash": hashlib.sha256(result.positions.tobytes()).hexdigest()[:12]}


def run_blender(n: int, frames: int) -> dict:
    """Blender's built-in Cloth on the same scene (frame 1 is its rest state, not timed)."""
    from blender_builtin import run_builtin
    r = run_builtin(n, frames + 1, scene="sphere")
    return {"total_s": float(sum(r["ms_per_frame"][1:])) / 1e3, "threads": str(r["threads"])}


def run_beside(solver: str, busy: int, n: int, frames: int) -> dict:
    """One run with ``busy`` busy processes beside it."""
    load = _loadavg()
    procs = [subprocess.Popen([_python(), "-c", BUSY]) for _ in range(busy)]
    try:
        time.sleep(0.5)  # let them start before the timing does
        r = (run_blender(n, frames) if solver == "blender"
             else run_ours(n, frames, solver == "adaptive"))
    finally:
        for p in procs:
            p.kill()
            p.wait()
    r.update(solver=solver, busy=busy, loadavg=load)
    return r


def summarise(runs: list[dict], solvers, loads) -> dict:
    """Per solver and load: times per round and ratios to the same round's idle time."""
    out = {}
    rounds = max(r["round"] for r in runs) + 1
    for s in solvers:
        idle = {r["round"]: r["total_s"] for r in runs if r["solver"] == s and r["busy"] == 0}
        for b in loads:
            times = [r["total_s"] for r in runs if r["solver"] == s and r["busy"] == b]
            ratios = [r["total_s"] / idle[r["round"]] for r in runs
                      if r["solver"] == s and r["busy"] == b and r["round"] in idle]
            out[f"{s}/{b}"] = {"times_s": times, "ratios": ratios, "rounds": rounds,
                               "median_s": float(np.median(times)) if times else None,
                               "median_ratio": float(np.median(ratios)) if ratios else None}
    return out


def main(argv=None) -> int:
    if argv is None and _in_blender():  # blender -b --python this -- args
        argv = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--resolution", type=int, default=65)
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--solvers", nargs="+", choices=SOLVERS, default=list(SOLVERS))
    ap.add_argument("--layer", choices=("omp", "tbb", "workqueue"), default=None,
                    help="numba threading layer for ours (default: the solver's choice)")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    if a.layer:
        numba.config.THREADING_LAYER = a.layer
    if threads is None:
        a.solvers = [s for s in a.solvers if s != "adaptive"]
    ours = [s for s in a.solvers if s != "blender"]
    gomp_first = "/libgomp" in Path("/proc/self/maps").read_text() if sys.platform == "linux" \
        else None  # before any parallel kernel: did the host load OpenMP before numba?
    if ours:  # compile or load every kernel outside the timings (24 frames reach the sphere)
        simulate(sphere_spec(9, 24, False, None))
    info = {"threading_layer": numba.threading_layer() if ours else None,
            "numba_threads": numba.config.NUMBA_NUM_THREADS,
            "libgomp_loaded_first": gomp_first,
            "gomp_spincount": os.environ.get("GOMP_SPINCOUNT"),
            "python": sys.version.split()[0], "numba": numba.__version__,
            "commit_at_start": provenance()["commit"]}  # the tree may move on meanwhile
    if "bpy" in sys.modules:
        info["blender"] = sys.modules["bpy"].app.version_string
    print(json.dumps(info), flush=True)
    plan = [(s, b) for s in a.solvers for b in a.busy]
    runs = []
    for k in range(a.rounds):
        shift = k % len(plan)
        for s, b in plan[shift:] + plan[:shift]:
            r = run_beside(s, b, a.resolution, a.frames)
            r["round"] = k
            runs.append(r)
            print(f"round {k} {s:8s} busy {b}: {r['total_s']:6.2f} s  threads {r['threads']}"
                  f"  load {r['loadavg']}  {r.get('hash', '')}", flush=True)
    summary = summarise(runs, a.solvers, a.busy)
    for key, v in summary.items():
        rs = v["ratios"]
        times = " ".join(f"{t:.2f}" for t in v["times_s"])
        print(f"{key:12s} median {v['median_s']:6.2f} s (runs {times})   ratio to idle "
              f"{v['median_ratio']:.2f} ({min(rs):.2f}-{max(rs):.2f})", flush=True)
    save_json(a.json, {"info": info, "runs": runs, "summary": summary, "frames": a.frames,
                       "resolution": a.resolution})
    return 0


if __name__ == "__main__":
    sys.exit(main())
