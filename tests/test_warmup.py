"""``python -m solver warmup`` compiles every kernel that bakes use, cloth and knits, into
numba's cache (after its scenes, other scenes need no kernel signature it did not make),
records it, and never runs twice at once."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from solver import warmup

ROOT = Path(__file__).resolve().parent.parent

# Scenes unlike the warm-up's (sizes, materials, frame counts, collider shapes), the way a bake
# builds them: mesh colliders, pins from a vertex group with targets for every frame.
BAKES = r"""
import json, sys
import numpy as np
import numba
from solver import ClothSetup, Collider, PolyMesh, SimulationSpec, SolverSettings, Wind, grid_mesh
from solver.formats.presets import load_preset
from solver import warmup
from solver.simulation import Simulation

def dispatchers():
    for name, mod in list(sys.modules.items()):
        if name.startswith("solver."):
            for key, value in vars(mod).items():
                if isinstance(value, numba.core.registry.CPUDispatcher):
                    yield f"{name}.{key}", value

warmup.warm_up()
made = {name: set(d.signatures) for name, d in dispatchers()}

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
        seams = np.array([[5, 115]]) if selfc else None  # sewn: the seam kernel's signature
        setup = ClothSetup(cloth, load_preset("cotton"), pins, np.ones(2), targets, seams=seams)
        settings = SolverSettings(model=model, integrator=integrator, self_collision=selfc)
        colliders = (Collider("mesh", mesh=table, positions=lift, thickness=0.004),)
        spec = SimulationSpec(setup, settings, frames=frames, fps=25.0, colliders=colliders,
                              wind=Wind(velocity=np.array([0.0, 2.0, 0.0]), turbulence=0.5))
        sim = Simulation(spec)
        while not sim.done:
            sim.step()
        assert sim.result.error is None, sim.result.error
        if model == "implicit" and selfc:
            draped = spec
# cloth large enough for IC(0) in two domains (incomplete_cholesky.MIN_SPLIT), as a small sheet
from solver.linalg import incomplete_cholesky
split, incomplete_cholesky.MIN_SPLIT = incomplete_cholesky.MIN_SPLIT, 0
sim = Simulation(draped)
while not sim.done:
    sim.step()
assert sim.result.error is None and sim.solver.precond.order is not None
incomplete_cholesky.MIN_SPLIT = split
# a knit as Add > Knit Swatch makes it and its bake runs it, above a table
import dataclasses
from solver import load_yarn_preset
from solver.yarn import knit_swatch, relax_setup, swatch_setup
yarn = load_yarn_preset("cotton_dk")
sw = knit_swatch("seed", 4, 3, 9.0 * yarn.radius, 7.0 * yarn.radius, yarn.radius)
setup, _ = relax_setup(swatch_setup(sw, yarn), duration=5.0e-4, settle=5.0e-4)
setup = dataclasses.replace(setup, pin_indices=sw.top_course,
                            pin_weights=np.r_[0.5, np.ones(len(sw.top_course) - 1)])
table = Collider("plane", point=np.array([0.0, 0.0, setup.positions[:, 2].min()
                                          - 2.0 * yarn.radius]),
                 normal=np.array([0.0, 0.0, 1.0]), thickness=0.0, friction=0.3)
knit = Simulation(SimulationSpec(setup, SolverSettings(model="yarn"), frames=1, fps=320.0,
                                 colliders=(table,)))
knit.step()
new = {name: [str(sig) for sig in d.signatures if sig not in made.get(name, set())]
       for name, d in dispatchers()}
print("RESULT " + json.dumps({"warmed": sum(map(len, made.values())),
                              "new": {name: sigs for name, sigs in new.items() if sigs}}))
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


@functools.lru_cache(maxsize=None)
def _warm_shared_cache() -> None:
    """The warm-up's kernels compiled once, here, into this environment's cache (no marker is
    written), so that the tests' subprocesses load them instead of each compiling them again."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        warmup.warm_up()


def _seeded_cache(tmp_path) -> Path:
    """A cache folder of the test's own holding what this environment's cache holds, so that
    kernels load instead of compiling (the checks below do not depend on what is cached)."""
    cache = tmp_path / "cache"
    _warm_shared_cache()
    shared = os.environ.get("NUMBA_CACHE_DIR")
    if shared and Path(shared).is_dir():
        shutil.copytree(shared, cache, ignore=shutil.ignore_patterns(warmup.MARKER_NAME,
                                                                     warmup.LOCK_NAME))
    return cache


def test_warmup_makes_every_kernel_signature_that_bakes_use(tmp_path):
    """Counted by signatures, not cache misses, so it holds whatever the cache already has."""
    bakes = _python(["-c", BAKES], _seeded_cache(tmp_path))
    assert bakes.returncode == 0, bakes.stderr[-3000:]
    line = next(l for l in bakes.stdout.splitlines() if l.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    assert result["warmed"] > 20
    assert result["new"] == {}


def test_warmup_command_records_a_warm_cache(tmp_path):
    cache = _seeded_cache(tmp_path)
    first = _python(["-m", "solver", "warmup", "--expect", warmup.stamp()], cache)
    assert first.returncode == 0, first.stderr[-3000:]
    assert warmup.is_warm(cache)
    marker = json.loads((cache / warmup.MARKER_NAME).read_text())
    assert marker["key"] == warmup.cache_key()

    again = _python(["-m", "solver", "warmup"], cache, timeout=120)
    assert again.returncode == 0 and "already warm" in again.stderr
