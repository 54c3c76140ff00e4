"""The thread governor: the free-core estimate and its thread counts from injected readings,
and bakes that stay bit-identical whatever thread counts they run with."""

import numba
import numpy as np
import pytest

from solver import ClothSetup, Collider, MaterialParams, PolyMesh, SimulationSpec, SolverSettings
from solver import threads
from solver.mesh import grid_mesh
from solver.simulation import simulate
from solver.threads import CpuReading, ThreadGovernor, free_cores, next_thread_count

two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                 reason="numba runs one thread here")


def reading(busy, total, own, cores=2):
    return CpuReading(busy=busy, total=total, own=own, cores=cores)


# ---- the free-core estimate ----

def test_free_cores_counts_only_other_processes():
    before = reading(100.0, 400.0, 10.0)
    # 2 s of core time elapsed (1 s of wall on 2 cores): 1.5 s busy, 0.5 s of it ours
    assert free_cores(before, reading(101.5, 402.0, 10.5)) == pytest.approx(1.0)
    # all busy time ours: both cores are ours to use
    assert free_cores(before, reading(101.9, 402.0, 11.9)) == pytest.approx(2.0)
    # a busy loop on each core while we slept
    assert free_cores(before, reading(102.0, 402.0, 10.0)) == pytest.approx(0.0)


def test_free_cores_clamps_and_refuses_what_it_cannot_judge():
    before = reading(100.0, 400.0, 10.0)
    # own time a little above the system's tick-sampled busy time: nobody else ran
    assert free_cores(before, reading(100.9, 402.0, 11.0)) == pytest.approx(2.0)
    assert free_cores(before, before) is None                              # no time elapsed
    assert free_cores(before, reading(101.0, 403.0, 10.5, cores=3)) is None  # affinity changed


# ---- thread counts ----

@pytest.mark.parametrize("current, free, most, expect", [
    (2, 1.0, 2, 1),    # one core taken by another program
    (2, 1.33, 2, 1),   # a busy loop sharing with our two threads gets 2/3 of a core
    (2, 1.6, 2, 2),    # a little load: keep both
    (1, 1.7, 2, 1),    # hysteresis: not yet clearly free
    (1, 1.8, 2, 2),
    (1, 2.0, 2, 2),
    (8, 0.3, 8, 1),    # never below one
    (1, 7.9, 8, 8),
    (4, 2.2, 8, 2),
    (2, 6.0, 4, 4),    # never above the cap
    (6, 6.0, 4, 4),    # a cap lowered below the current count
])
def test_thread_count(current, free, most, expect):
    assert next_thread_count(current, free, most) == expect


@pytest.mark.parametrize("margins", [(threads.DROP_MARGIN, threads.RAISE_MARGIN),
                                     (threads.SPINNING_DROP_MARGIN, threads.SPINNING_RAISE_MARGIN)])
def test_thread_count_settles_at_once_under_a_steady_load(margins):
    """Under a constant free-core reading the count moves at most once: no oscillation."""
    for most in (1, 2, 3, 4, 8, 16):
        for current in range(1, most + 1):
            for free in np.linspace(0.0, most + 1.0, 97):
                k = next_thread_count(current, free, most, *margins)
                assert 1 <= k <= most
                assert next_thread_count(k, free, most, *margins) == k, (most, current, free)


def test_long_spinning_openmp_keeps_to_one_thread_unless_the_cores_are_clearly_free():
    spinning = (threads.SPINNING_DROP_MARGIN, threads.SPINNING_RAISE_MARGIN)
    assert next_thread_count(2, 1.7, 2) == 2                 # a little load: both threads
    assert next_thread_count(2, 1.7, 2, *spinning) == 1      # but a preemption costs much
    assert next_thread_count(1, 1.85, 2, *spinning) == 1
    assert next_thread_count(1, 1.95, 2, *spinning) == 2


@pytest.mark.parametrize("env, preload, expect", [
    ({}, False, "False"),
    ({}, True, "True"),                        # the host loaded libgomp first
    ({"GOMP_SPINCOUNT": "300"}, True, "False"),  # the user's own setting reached libgomp
])
def test_libgomp_loaded_before_the_solver_is_detected(env, preload, expect):
    import ctypes.util
    import os
    import subprocess
    import sys
    from pathlib import Path

    if not sys.platform.startswith("linux") or ctypes.util.find_library("gomp") is None:
        pytest.skip("needs Linux and libgomp")
    probe = ("import ctypes, ctypes.util\n"
             + ("ctypes.CDLL(ctypes.util.find_library('gomp'))\n" if preload else "")
             + "import solver._jit as j\nprint(j.OPENMP_SPINS_LONG)")
    base = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", probe], cwd=Path(threads.__file__).parent.parent,
                         env={**base, **env}, capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == expect


def test_thread_count_settles_when_our_threads_change_what_others_get():
    """Two cores, a busy loop: with our two threads it gets about 2/3 of a core, with one
    thread a whole core. Either way the count settles at one, and goes back to two when the
    loop stops."""
    others = {2: 2 / 3, 1: 1.0}
    k, seen = 2, []
    for _ in range(6):
        k = next_thread_count(k, 2.0 - others[k], 2)
        seen.append(k)
    assert seen == [1] * 6
    assert next_thread_count(k, 2.0, 2) == 2


# ---- the governor, with injected readings and clock ----

class Machine:
    """A fake machine: readings advance by ``dt`` of wall time with given others' and own use
    [cores] per step."""

    def __init__(self, cores=2):
        self.cores, self.t = cores, 0.0
        self.busy = self.total = self.own = 0.0
        self.others = 0.0

    def advance(self, dt, own=1.0):
        self.t += dt
        self.total += self.cores * dt
        self.busy += (self.others + own) * dt
        self.own += own * dt

    def read(self):
        return CpuReading(self.busy, self.total, self.own, self.cores)


@pytest.fixture
def restore_threads():
    before = numba.get_num_threads()
    old = threads.set_governor(None)
    yield
    threads.set_governor(old)
    numba.set_num_threads(before)


@two_threads
def test_governor_follows_the_free_cores(restore_threads):
    m = Machine()
    g = ThreadGovernor(reader=m.read, most=2, clock=lambda: m.t)
    assert g.before_frame() == 2                      # first reading: no decision yet
    m.others = 1.0
    m.advance(0.1)
    assert g.before_frame() == 2                      # too short an interval to judge
    m.advance(0.2)
    assert g.before_frame() == 1 == numba.get_num_threads()
    m.others = 0.0
    m.advance(0.3)
    assert g.before_frame() == 2 == numba.get_num_threads()
    m.advance(60.0)                                   # a stale reading is replaced, not used
    m.others = 2.0
    assert g.before_frame() == 2
    g.release()
    assert numba.get_num_threads() == 2


@two_threads
def test_a_count_the_user_set_becomes_the_cap(restore_threads):
    m = Machine()
    g = ThreadGovernor(reader=m.read, clock=lambda: m.t)
    numba.set_num_threads(2)
    g.before_frame()
    numba.set_num_threads(1)                          # the user, between two frames
    m.advance(1.0)
    assert g.before_frame() == 1
    m.advance(1.0)
    assert g.before_frame() == 1 and g.most == 1


def test_numba_num_threads_in_the_environment_turns_the_governor_off(monkeypatch,
                                                                        restore_threads):
    monkeypatch.setenv("NUMBA_NUM_THREADS", "2")
    assert not ThreadGovernor.from_environment().enabled
    monkeypatch.delenv("NUMBA_NUM_THREADS")
    assert ThreadGovernor.from_environment().enabled
    m = Machine()
    off = ThreadGovernor(reader=m.read, enabled=False, clock=lambda: m.t)
    numba.set_num_threads(1)
    off.before_frame()
    m.others = 0.0
    m.advance(1.0)
    assert off.before_frame() == 1 == numba.get_num_threads()


def test_a_reading_of_this_machine_is_sane():
    r = threads.read_cpu()
    if r is None:
        pytest.skip("no CPU reading on this platform")
    assert r.cores >= 1 and 0.0 <= r.busy <= r.total and r.own > 0.0


# ---- bit-identical bakes at any thread count ----

def _drape_spec():
    """A 33×33 cloth (1,089 vertices: more than one fixed work chunk, so two threads split
    the work) falling with self-collision onto a cube mesh and a floor."""
    cube = np.array([[x, y, z] for z in (0.0, 0.3) for y in (-0.15, 0.15) for x in (-0.15, 0.15)])
    quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    cloth = MaterialParams(area_density=0.2, stretch_stiffness=200.0, shear_stiffness=5.0,
                           bend_stiffness=1e-7, stretch_damping=0.2, shear_damping=0.005,
                           bend_damping=1e-8, air_drag=0.0, thickness=0.002)
    colliders = (Collider("mesh", mesh=PolyMesh.from_faces(cube, quads), thickness=0.005,
                          friction=0.3),
                 Collider("plane", point=np.zeros(3), normal=np.array([0.0, 0.0, 1.0])))
    return SimulationSpec(ClothSetup(grid_mesh((0.8, 0.8), (33, 33), (0.0, 0.0, 0.36)), cloth),
                          SolverSettings(model="implicit", self_collision=True), frames=10,
                          colliders=colliders)


@two_threads
def test_a_bake_whose_thread_count_changes_is_bit_identical_to_a_one_thread_bake(
        restore_threads):
    spec = _drape_spec()
    threads.set_governor(ThreadGovernor(enabled=False))
    numba.set_num_threads(1)
    one = simulate(spec)
    assert one.error is None and one.frames[-1].collision_pairs > 0

    m = Machine()
    threads.set_governor(ThreadGovernor(reader=m.read, most=2, min_interval_s=0.0,
                                        clock=lambda: m.t))
    counts = []

    def busy_every_other_frame(_):
        counts.append(numba.get_num_threads())
        m.others = 1.5 - m.others                     # 1.5 and 0 cores taken, in turn
        m.advance(1.0)

    m.others = 1.5
    varied = simulate(spec, progress=busy_every_other_frame)
    assert set(counts) == {1, 2}
    np.testing.assert_array_equal(varied.positions, one.positions)
    assert [f.collision_pairs for f in varied.frames] == [f.collision_pairs for f in one.frames]


@two_threads
def test_the_first_frame_is_judged_from_a_reading_taken_at_setup(restore_threads):
    m = Machine()
    g = ThreadGovernor(reader=m.read, most=2, clock=lambda: m.t)
    g.observe()
    m.others = 1.0
    m.advance(0.5)
    assert g.before_frame() == 1


@two_threads
def test_the_governor_is_stricter_where_openmp_spins_long(monkeypatch, restore_threads):
    monkeypatch.setattr(threads._jit, "OPENMP_SPINS_LONG", True)
    m = Machine()
    g = ThreadGovernor(reader=m.read, most=2, clock=lambda: m.t)
    g.before_frame()
    m.others = 0.3                                    # a third of a core taken
    m.advance(1.0)
    assert g.before_frame() == (1 if numba.threading_layer() == "omp" else 2)


@two_threads
def test_the_next_simulation_starts_with_the_count_decided_last(restore_threads):
    """A simulation that ends gives the stepping thread its full count back; the next one
    starts from the count decided last, unless that decision is stale."""
    m = Machine()
    g = ThreadGovernor(reader=m.read, most=2, clock=lambda: m.t)
    g.before_frame()
    m.others = 1.0
    m.advance(0.5)
    assert g.before_frame() == 1
    g.release()
    assert numba.get_num_threads() == 2
    g.observe()                                        # the next simulation is set up
    m.advance(0.05)
    assert g.before_frame() == 1 == numba.get_num_threads()
    g.release()
    m.advance(60.0)
    g.observe()
    m.advance(0.05)
    assert g.before_frame() == 2


# ---- the user's Threads setting: a ceiling for every model ----

@two_threads
def test_the_threads_setting_is_a_ceiling_applied_at_once_and_at_every_frame(restore_threads):
    m = Machine()
    g = ThreadGovernor(reader=m.read, most=2, min_interval_s=0.0, clock=lambda: m.t)
    threads.set_governor(g)
    numba.set_num_threads(2)
    threads.set_ceiling(1)
    assert threads.ceiling() == 1 and numba.get_num_threads() == 1  # before any frame
    m.advance(1.0)                                    # every core free
    assert g.before_frame() == 1
    g.release()
    assert numba.get_num_threads() == 1
    threads.set_ceiling(None)                         # back to automatic: the count it had
    assert numba.get_num_threads() == 2 and g.most == 2
    m.advance(1.0)
    assert g.before_frame() == 2
    with pytest.raises(ValueError, match="threads: expected a count of at least 1"):
        threads.set_ceiling(0)


@two_threads
def test_the_threads_setting_holds_where_numba_num_threads_turned_the_governor_off(
        restore_threads):
    g = ThreadGovernor(enabled=False)
    threads.set_governor(g)
    numba.set_num_threads(2)
    threads.set_ceiling(1)
    assert g.before_frame() == 1 == numba.get_num_threads()
    threads.set_ceiling(None)
    assert numba.get_num_threads() == 2


@two_threads
def test_a_simulation_runs_under_the_threads_setting(restore_threads):
    threads.set_governor(ThreadGovernor())
    numba.set_num_threads(2)
    threads.set_ceiling(1)
    counts = []
    spec = SimulationSpec(ClothSetup(grid_mesh((0.3, 0.3), (5, 5))), frames=3)
    assert simulate(spec, progress=lambda _: counts.append(numba.get_num_threads())).error is None
    assert counts == [1, 1, 1] and numba.get_num_threads() == 1
