"""Inside a bpy wheel (no window): how long Blender's main thread is kept from its events while
a bake simulates beside it, the way the modal bake takes its frames (bench/live_bake.py runs it).

The bake starts as a click starts it (in the worker process, cloth_addon/worker.py); the main
thread does what the modal operator's timer does (take the frames, show them in the live view)
and then sleeps 10 ms, as Blender's event loop does between timer events; how late it comes back
is how long a Python draw callback or Esc would have waited. Usage: ``python
bench/live_probe.py OUT.json N FRAMES ADDON_DIR`` with ``NUMBA_CACHE_DIR`` set (empty: the
session's first bake compiles its kernels); the add-on is copied into ADDON_DIR (the same folder
for a later session: numba finds its cache by the source files' paths).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "scripts")]
import dev_addon  # noqa: E402

dev_addon.scratch_user_resources(Path(tempfile.mkdtemp(prefix="cloth_solver_probe_user_")))
import bpy  # noqa: E402

OUT, N, FRAMES, ADDON_DIR = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
SLEEP_S = 0.01


def scene():
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.mesh.primitive_uv_sphere_add(segments=32, ring_count=16, radius=0.5)
    bpy.context.object.cloth_solver.role = "COLLIDER"
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=N - 1, y_subdivisions=N - 1, size=2.0,
                                    location=(0, 0, 0.9))
    bpy.context.object.cloth_solver.role = "CLOTH"
    sc = bpy.context.scene.cloth_solver
    sc.frame_start, sc.frame_end = 1, FRAMES


def bake(addon) -> dict:
    scene()
    t = time.perf_counter()
    job = addon.cloth_addon.bake.BakeJob(bpy.context)
    read = time.perf_counter() - t
    job.start(live=True, ui=True)
    worst, last, t0 = 0.0, time.perf_counter(), time.perf_counter()
    while job.update(budget_s=0.03):
        time.sleep(SLEEP_S)
        now = time.perf_counter()
        worst, last = max(worst, now - last - SLEEP_S), now
    simulate = time.perf_counter() - t0
    t = time.perf_counter()
    job.finish()
    write = time.perf_counter() - t
    return {"runner": type(job.runner).__name__, "read_s": round(read, 3),
            "simulate_s": round(simulate, 2),
            "worst_block_s": round(worst, 3), "write_s": round(write, 3)}


def main() -> None:
    module = dev_addon.enable(ADDON_DIR)
    addon = sys.modules[module]
    result = {"blender": bpy.app.version_string, "numba_cache": os.environ.get("NUMBA_CACHE_DIR"),
              "first": bake(addon), "second": bake(addon)}
    OUT.write_text(json.dumps(result, indent=1))


main()
