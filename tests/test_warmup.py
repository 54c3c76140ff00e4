"""``python -m solver warmup`` compiles every kernel that bakes use into numba's cache (a new
process then simulates other scenes without compiling anything), records it, and never runs
twice at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from solver import warmup

ROOT = Path(__file__).resolve().parent.parent

# Scenes unlike the warm-up's (sizes, materials, frame counts, collider shapes), the way a bake
# builds them: mesh colliders, pins from a vertex group with targets for every frame.
BAKES = r"""
import json, sys
import numpy as np
import numba
from solver import ClothSetup, Collider, PolyMesh, SimulationSpec, SolverSettings, Wind, grid_mesh
from solver.presets import load_preset
from solver.simulation import Simulation

def box(lo, hi):
    (x0, y0, z0), (x1, y1, z1) = lo, hi
    p = [(x0, y0, z0), (x1, y0, z0), (x1, y1, z0), (x0, y1, z0),
         (x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1)]
    f = [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)]
    return PolyMesh.from_faces(p, f)

frames = 12
table = box((-0.2, -0.2, -0.4), (0.2, 0.2, 0.0))
lift = np.repeat(table.positions[None], frames + 1, axis=0)
lift[:, :, 2] += np.linspace(0.0, 0.05, frames + 1)[:, None]
for model, integrator in (("implicit", "symplectic_euler"), ("mass_spring", "rk4")):
    for selfc in (False, True):
        cloth = grid_mesh((0.7, 0.7), (11, 11), (0.0, 0.0, 0.03))
        pins = np.array([0, 10], dtype=np.int64)
        targets = np.repeat(cloth.positions[pins][None], frames + 1, axis=0)
        setup = ClothSetup(cloth, load_preset("cotton"), pins, np.ones(2), targets)
        settings = SolverSettings(model=model, integrator=integrator, self_collision=selfc)
        colliders = (Collider("mesh", mesh=table, positions=lift, thickness=0.004),)
        spec = SimulationSpec(setup, settings, frames=frames, fps=25.0, colliders=colliders,
                              wind=Wind(velocity=np.array([0.0, 2.0, 0.0]), turbulence=0.5))
        sim = Simulation(spec)
        while not sim.done:
            sim.step()
        assert sim.result.error is None, sim.result.error
hits = misses = 0
missed = []
for name, mod in list(sys.modules.items()):
    if name.startswith("solver."):
        for key, value in vars(mod).items():
            if isinstance(value, numba.core.registry.CPUDispatcher) and value.signatures:
                hits += sum(value.stats.cache_hits.values())
                m = sum(value.stats.cache_misses.values())
                misses += m
                if m:
                    missed.append(f"{name}.{key}")
print("RESULT " + json.dumps({"hits": hits, "misses": misses, "missed": missed}))
"""


def _python(args, cache, timeout=900):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_lock_is_exclusive_between_processes_and_dropped_with_its_holder(tmp_path):
    lock = warmup.FileLock(tmp_path / warmup.LOCK_NAME)
    assert not warmup.is_running(tmp_path)
    assert lock.acquire()
    assert warmup.is_running(tmp_path)
    holder = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from solver import warmup; "
              f"print(warmup.FileLock({str(tmp_path / warmup.LOCK_NAME)!r}).acquire())")
    assert _python(["-c", holder], tmp_path).stdout.strip() == "False"
    lock.release()
    assert not warmup.is_running(tmp_path)
    # a process that took the lock and ended (or crashed) leaves it free
    assert _python(["-c", holder], tmp_path).stdout.strip() == "True"
    assert not warmup.is_running(tmp_path)


def test_warmup_stops_when_another_python_would_fill_another_cache(tmp_path):
    run = _python(["-m", "solver", "warmup", "--expect", "0" * 64], tmp_path)
    assert run.returncode == 3, run.stderr
    assert not warmup.is_warm(tmp_path) and not any(tmp_path.rglob("*.nbi"))


@pytest.mark.slow
def test_warmup_compiles_every_kernel_that_bakes_use(tmp_path):
    cache = tmp_path / "cache"
    first = _python(["-m", "solver", "warmup", "--expect", warmup.stamp()], cache)
    assert first.returncode == 0, first.stderr[-3000:]
    assert warmup.is_warm(cache)
    marker = json.loads((cache / warmup.MARKER_NAME).read_text())
    assert marker["key"] == warmup.cache_key()

    again = _python(["-m", "solver", "warmup"], cache, timeout=120)
    assert again.returncode == 0 and "already warm" in again.stderr

    bakes = _python(["-c", BAKES], cache)
    assert bakes.returncode == 0, bakes.stderr[-3000:]
    line = next(l for l in bakes.stdout.splitlines() if l.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    assert result["hits"] > 20
    assert result["misses"] == 0, result["missed"]
