"""Compile every kernel a bake uses, ahead of the first bake: ``python -m solver warmup``.

numba compiles the solver's kernels the first time they run (tens of seconds, more on a busy
machine: docs/benchmarks.md, "Install to first frame") and caches them on disk (``NUMBA_CACHE_DIR``). The add-on runs this module in a
separate process when it is enabled, so that the user's first *Bake Cloth* loads the kernels
instead of compiling them. It simulates a few frames of tiny scenes that together take every
path a bake can take: both models and every explicit integrator, with and without
self-collision, sphere, plane, static and moving mesh colliders (touching, far away and started
through), hard and soft pins on moving targets, turbulent wind, several pieces at once, a
material with and without its optional fields.

A lock file in the cache directory keeps two warm-ups from running at once (two Blender
windows starting together); a marker file there records that a warm-up for exactly these
sources and versions finished, so later sessions skip it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from .mesh import PolyMesh, grid_mesh
from .params import INTEGRATOR_NAMES, MaterialParams, SolverSettings
from .spec import ClothSetup, Collider, SimulationSpec, Wind

SOLVER_DIR = Path(__file__).resolve().parent
LOCK_NAME = "cloth_solver_warmup.lock"
MARKER_NAME = "cloth_solver_warmup.json"
FRAMES = 3


def cache_key() -> str:
    """What compiled kernels depend on, as a folder name: ``py3.11-numba0.68.1-numpy1.26``.

    numba keeps one index per function and Python version, but a different numba version
    discards (and then overwrites) the other's entries, and nothing in its cache tells numpy
    versions apart.
    """
    import numpy
    try:
        import numba
        numba_version = numba.__version__
    except ImportError:  # the solver's own import then says what is missing
        numba_version = "none"
    numpy_version = ".".join(numpy.__version__.split(".")[:2])  # patch releases keep the ABI
    py = sys.version_info
    return f"py{py.major}.{py.minor}-numba{numba_version}-numpy{numpy_version}"


def stamp() -> str:
    """A hash of the solver's sources and folder (numba's cache is per source folder), this
    Python and the cache key: a finished warm-up with the same stamp compiled everything a bake
    of these sources needs."""
    h = hashlib.sha256(f"{sys.version}\n{cache_key()}\n{SOLVER_DIR}\n".encode())
    for path in sorted(SOLVER_DIR.rglob("*.py")):
        h.update(path.relative_to(SOLVER_DIR).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def is_warm(cache_dir) -> bool:
    """True if a warm-up of these sources finished into ``cache_dir``."""
    try:
        data = json.loads((Path(cache_dir) / MARKER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return data.get("stamp") == stamp()


# ---- the scenes ----

def _box(center, half) -> PolyMesh:
    c, h = np.asarray(center, dtype=np.float64), float(half)
    corners = np.array([[x, y, z] for z in (-h, h) for y in (-h, h) for x in (-h, h)]) + c
    faces = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    return PolyMesh.from_faces(corners, faces)


def _pieces(material_full: MaterialParams) -> tuple[ClothSetup, ...]:
    """A sheet with hard pins on moving targets and one soft pin, draped just above the
    colliders, and a smaller second piece just above it (self-collision between pieces)."""
    sheet = grid_mesh((0.4, 0.4), (8, 8), (0.0, 0.0, 0.115))
    pins = np.array([0, 7, 27], dtype=np.int64)
    weights = np.array([1.0, 1.0, 0.5])
    targets = np.repeat(sheet.positions[pins][None], FRAMES + 1, axis=0)
    targets[:, :2, 2] += np.linspace(0.0, 0.02, FRAMES + 1)[:, None]
    top = grid_mesh((0.2, 0.2), (5, 5), (0.02, 0.0, 0.125))
    return (ClothSetup(sheet, MaterialParams(), pins, weights, targets),
            ClothSetup(top, material_full))


# a corner of the second piece sewn to the sheet (vertex 64, the first of the second piece in
# the combined numbering): sewing's kernel, and contact tests with a seam's two vertices
SEAMS = np.array([[36, 64]], dtype=np.int64)


def _colliders(analytic: bool = False) -> tuple[Collider, ...]:
    """A static box, a box rising under the cloth and one pushed up through it (the add-on's
    colliders are meshes); ``analytic``: also a sphere and a plane (scene files)."""
    box = _box((0.12, 0.12, 0.05), 0.06)
    rising = np.repeat(box.positions[None], FRAMES + 1, axis=0)
    rising[:, :, 2] += np.linspace(0.0, 0.04, FRAMES + 1)[:, None]
    moving = _box((-0.12, -0.12, 0.05), 0.06)
    pushed = np.repeat(moving.positions[None], FRAMES + 1, axis=0)
    pushed[:, :, 2] += np.linspace(0.0, 0.08, FRAMES + 1)[:, None]
    meshes = (Collider("mesh", mesh=_box((0.12, -0.12, 0.05), 0.06)),
              Collider("mesh", mesh=box, positions=rising, friction=0.0),
              Collider("mesh", mesh=moving, positions=pushed))
    if not analytic:
        return meshes
    return (Collider("sphere", center=np.array([0.0, 0.0, 0.0]), radius=0.11),
            Collider("plane", point=np.array([0.0, 0.0, 0.1]), normal=np.array([0.0, 0.0, 1.0])),
            *meshes)


def _far(colliders) -> tuple[Collider, ...]:
    """The same colliders 10 m lower."""
    down = np.array([0.0, 0.0, -10.0])
    out = []
    for c in colliders:
        if c.kind == "sphere":
            out.append(dataclasses.replace(c, center=c.center + down))
        elif c.kind == "plane":
            out.append(dataclasses.replace(c, point=c.point + down))
        else:
            mesh = PolyMesh(c.mesh.positions + down, c.mesh.face_indices, c.mesh.face_offsets)
            moved = None if c.positions is None else c.positions + down
            out.append(dataclasses.replace(c, mesh=mesh, positions=moved))
    return tuple(out)


def scenes() -> list[tuple[str, SimulationSpec]]:
    """(name, spec) of every warm-up simulation, what most bakes run first: a bake that starts
    while the warm-up runs stops it and compiles the rest itself (cloth_addon/warmup.py), so
    the earlier a kernel compiles here, the likelier it helps."""
    from .formats.presets import load_preset

    full = load_preset("denim")
    wind = Wind(velocity=np.array([1.0, 0.0, 0.0]), turbulence=1.0)
    models = [("implicit", SolverSettings(model="implicit"))]
    models += [(f"mass_spring/{name}", SolverSettings(model="mass_spring", integrator=name))
               for name in INTEGRATOR_NAMES]
    # the typical first bake: a sheet falling onto a mesh, out of reach, then touching it
    sheet = ClothSetup(grid_mesh((0.4, 0.4), (8, 8), (0.0, 0.0, 0.16)))
    out = [("implicit, a sheet onto a mesh collider",
            SimulationSpec(sheet, models[0][1], frames=FRAMES,
                           colliders=(Collider("mesh", mesh=_box((0.0, 0.0, 0.05), 0.06)),)))]
    # a posed garment's first bake: cloth started through a body is moved out before frame 1
    # (collision/untangle.py); through a thin slab its inside patch splits both ways
    slab = _box((0.0, 0.0, 0.0), 0.06)
    slab = PolyMesh(slab.positions * [1.0, 1.0, 0.1] + [0.08, 0.0, 0.16], slab.face_indices,
                    slab.face_offsets)
    out.append(("implicit, a sheet started through a mesh collider",
                SimulationSpec(sheet, models[0][1], frames=1,
                               colliders=(Collider("mesh", mesh=slab),))))
    analytic = []
    for label, base in models:
        for self_collision in (False, True):
            s = dataclasses.replace(base, self_collision=self_collision)
            name = f"{label}{', self-collision' if self_collision else ''}"
            out.append((f"{name}, mesh colliders",
                        SimulationSpec(_pieces(full), s, frames=FRAMES, wind=wind,
                                       colliders=_colliders(), seams=SEAMS)))
            # colliders far below, no contact at all: numba types a column of an empty or
            # one-row array as contiguous, so kernels meet other argument types than with
            # contacts
            out.append((f"{name}, mesh colliders far",
                        SimulationSpec(_pieces(full), s, frames=FRAMES,
                                       colliders=_far(_colliders()))))
            analytic.append((f"{name}, sphere, plane and mesh colliders",
                             SimulationSpec(_pieces(full), s, frames=FRAMES, wind=wind,
                                            colliders=_colliders(analytic=True))))
            analytic.append((f"{name}, sphere, plane and mesh colliders far",
                             SimulationSpec(_pieces(full), s, frames=FRAMES,
                                            colliders=_far(_colliders(analytic=True)))))
        # a single piece alone in still air: the paths without colliders, wind or pieces
        alone = ClothSetup(grid_mesh((0.3, 0.3), (6, 6), (0.0, 0.0, 1.0)), full,
                           np.array([0, 5], dtype=np.int64))
        out.append((f"{label}, alone", SimulationSpec(alone, base, frames=FRAMES)))
    return out + analytic


YARN_STEPS = 20


def warm_yarn() -> None:
    """What Add > Knit Swatch and its bake run, on a 3 × 2 swatch: the stitch layout, both
    phases of the relaxation (shortened: the kernels are the same at any length) and the
    simulation through the one frame loop (simulation.Simulation), hanging from its top course
    with hard and soft pins, without and with a table below. After the cloth scenes: a knit is
    the rarer first bake (docs/solver.md, "numba's cache and the first bake")."""
    from .formats.presets import load_yarn_preset
    from .simulation import Simulation
    from .yarn import knit_swatch, relax_setup, swatch_setup

    params = load_yarn_preset("wool_worsted")
    sw = knit_swatch("rib2x2", 3, 2, 8.0 * params.radius, 6.0 * params.radius, params.radius)
    step = 1.0e-5
    setup, _ = relax_setup(swatch_setup(sw, params), duration=YARN_STEPS * step,
                           settle=YARN_STEPS * step, time_step=step)
    top = sw.top_course
    weights = np.where(np.arange(len(top)) % 2 == 0, 1.0, 0.5)
    setup = dataclasses.replace(setup, pin_indices=top, pin_weights=weights)
    for floor in (None, float(setup.positions[:, 2].min()) - params.radius):
        colliders = () if floor is None else (
            Collider("plane", point=np.array([0.0, 0.0, floor]), normal=np.array([0.0, 0.0, 1.0]),
                     thickness=0.0, friction=0.5),)
        sim = Simulation(SimulationSpec(setup, SolverSettings(model="yarn", time_step=step),
                                        frames=1, fps=1.0 / (YARN_STEPS * step),
                                        colliders=colliders))
        while not sim.done:
            sim.step()


def warm_held_contacts() -> None:
    """The strain limiter holding a step's contacts (the strain rounds after collisions,
    strain_limit.py), which the tiny scenes need not reach: one edge and one contact, with the
    argument types the rounds pass."""
    from .strain_limit import apply_strain_limit

    x = np.array([[0.0, 0.0, 0.0], [0.2, 0.0, 0.0]])
    contact = (np.array([[1, 0, 0, 0]], np.int64), np.array([[1.0, 0.0, 0.0, 0.0]]),
               np.array([[0.0, 0.0, 1.0]]), np.zeros(1), 1e-6, 1e-3)
    no_tethers = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    apply_strain_limit(x, np.zeros_like(x), 0.01, np.array([[0, 1]], np.int64), np.ones(1) * 0.1,
                       np.ones(2), no_tethers, 0.05, 10, contact, 0.02)


def warm_up(log=None) -> float:
    """Run every warm-up scene (compiling or loading each kernel), then the yarn model's;
    returns the seconds taken."""
    from .linalg import incomplete_cholesky
    from .simulation import Simulation

    start = time.perf_counter()
    every = [(name, spec, None) for name, spec in scenes()]
    # cloth of MIN_SPLIT vertices or more factors IC(0) in two domains, with kernels of their
    # own: the first scene once more with that threshold below its few vertices
    first_name, first_spec, _ = every[0]
    every.insert(1, (f"{first_name}, IC(0) in two domains", first_spec, 0))
    for name, spec, min_split in every:
        t = time.perf_counter()
        saved = incomplete_cholesky.MIN_SPLIT
        incomplete_cholesky.MIN_SPLIT = saved if min_split is None else min_split
        try:
            sim = Simulation(spec)
            while not sim.done:
                sim.step()
        finally:
            incomplete_cholesky.MIN_SPLIT = saved
        if log is not None:
            state = "ok" if sim.result.error is None else f"stopped: {sim.result.error}"
            log(f"warmup: {name}: {time.perf_counter() - t:.1f} s, {state}")
    warm_held_contacts()
    t = time.perf_counter()
    warm_yarn()
    if log is not None:
        log(f"warmup: a knit swatch, relaxed and hanging: {time.perf_counter() - t:.1f} s, ok")
    return time.perf_counter() - start


# ---- one warm-up at a time ----

class FileLock:
    """An exclusive lock on a file, held while the process lives (the system drops it when
    the process ends, so a crashed warm-up leaves no stale lock)."""

    def __init__(self, path):
        self.path = Path(path)
        self._file = None

    def acquire(self) -> bool:
        """Take the lock without waiting; False if another process holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = open(self.path, "a+b")
        try:
            if os.name == "nt":
                import msvcrt
                f.seek(0)
                msvcrt.locking(f.fileno(), msvcrt.LK_NBLCK, 1)
            else:
                import fcntl
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            return False
        self._file = f
        return True

    def release(self) -> None:
        if self._file is None:
            return
        if os.name == "nt":
            import msvcrt
            self._file.seek(0)
            msvcrt.locking(self._file.fileno(), msvcrt.LK_UNLCK, 1)
        self._file.close()  # closing drops a flock
        self._file = None


def is_running(cache_dir) -> bool:
    """True while a warm-up process holds the lock in ``cache_dir``."""
    path = Path(cache_dir) / LOCK_NAME
    if not path.exists():
        return False
    probe = FileLock(path)
    if probe.acquire():
        probe.release()
        return False
    return True


def run(cache_dir=None, expect: str | None = None, log=print) -> int:
    """The warm-up process: take the lock, compile, write the marker. Returns the exit status
    (0 also when another warm-up holds the lock or this one is not needed).

    ``expect``: the ``stamp()`` of the process that started this one; another Python, numba
    or numpy would fill a cache that process does not read, so it stops (status 3).
    """
    import numba

    cache_dir = Path(cache_dir or numba.config.CACHE_DIR or ".")
    if expect and expect != stamp():
        log(f"warmup: this Python ({sys.executable}, {sys.version.split()[0]}, {cache_key()}) "
            "or these sources are not those of the process that started it; nothing compiled")
        return 3
    lock = FileLock(cache_dir / LOCK_NAME)
    # A moment's grace: the add-on tests the lock the instant this process starts.
    deadline = time.monotonic() + 2.0
    while not lock.acquire():
        if time.monotonic() > deadline:
            log("warmup: another warm-up is running")
            return 0
        time.sleep(0.1)
    try:
        if is_warm(cache_dir):
            log("warmup: already warm")
            return 0
        seconds = warm_up(log)
        marker = {"stamp": stamp(), "key": cache_key(), "seconds": round(seconds, 1)}
        tmp = cache_dir / f"{MARKER_NAME}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(marker), encoding="utf-8")
        os.replace(tmp, cache_dir / MARKER_NAME)
        log(f"warmup: done in {seconds:.1f} s")
        return 0
    finally:
        lock.release()
