"""How many threads the parallel kernels use: as many as the cores other programs leave free.

A frame runs thousands of short parallel regions, and each ends at a barrier where every thread
waits for the slowest. When another program keeps a core busy, one of our threads shares that
core, is preempted for a whole time slice, and every barrier waits for it: the bake slows far
more than the other program's share of the machine. So at frame boundaries the governor
measures how much CPU other processes used since the last decision and sets numba's thread
count to the cores left (at least 1, at most numba's count or the user's).

Results do not depend on the thread count: every parallel kernel splits its work into fixed
chunks or writes each element from one iteration (see linalg/cg.py, linalg/sparse.py, collision/bvh.py), so a
bake whose count changes mid-run is bit-identical to a one-thread bake (tested).

Readings: Linux from /proc/stat (only the cores this process may run on), Windows from
GetSystemTimes. Elsewhere (macOS) there is no cheap reading here and the count is left alone.
A ``NUMBA_NUM_THREADS`` in the environment is the user's choice and is never raised; a count
the user sets with ``numba.set_num_threads`` becomes the largest the governor uses; and the
user's Threads setting (the add-on's Bake > Performance, the command line's ``--threads``,
``set_ceiling``) is a ceiling for every model's kernels, applied at once and kept at every
frame boundary (None: automatic, as many as the cores other programs leave free). Where the
OpenMP workers spin long (``_jit.OPENMP_SPINS_LONG``: Debian's Blender 3.4) the governor uses
more than one thread only while the other cores are clearly idle.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Callable

from . import _jit
from ._jit import numba

# A count is kept while the free cores stay within (count - DROP, count + RAISE): dropping a
# thread early matters more (a preempted thread stalls every barrier) than adding one late
# (docs/solver.md, "Thread governor").
DROP_MARGIN = 0.5
RAISE_MARGIN = 0.75
# Where OpenMP workers spin libgomp's default 300,000 times (_jit.OPENMP_SPINS_LONG), any
# preemption of a thread stalls its team for long: one thread unless the cores are clearly free.
SPINNING_DROP_MARGIN = 0.25
SPINNING_RAISE_MARGIN = 0.9
MIN_INTERVAL_S = 0.2   # shorter intervals hold too few 10 ms ticks of /proc/stat to judge by
STALE_S = 10.0         # a reading this old says little about now (a bake started later)


@dataclass(frozen=True)
class CpuReading:
    """Cumulative CPU time at one moment [s].

    Attributes:
        busy: CPU time spent by anything (all processes, the kernel, a hypervisor's steal) on
            the cores counted, since boot.
        total: busy plus idle time on those cores since boot.
        own: CPU time of this process (all its threads).
        cores: how many cores ``busy`` and ``total`` cover.
    """

    busy: float
    total: float
    own: float
    cores: int


def free_cores(before: CpuReading, after: CpuReading) -> float | None:
    """Cores that other processes left free between two readings, in [0, cores].

    Others' use is the busy time minus this process's own, as a fraction of the elapsed core
    time. None if no time elapsed or the covered cores changed (affinity changed)."""
    if after.cores != before.cores:
        return None
    elapsed = after.total - before.total
    if elapsed <= 0.0:
        return None
    others = (after.busy - before.busy) - (after.own - before.own)
    share = min(max(others / elapsed, 0.0), 1.0)
    return after.cores * (1.0 - share)


def next_thread_count(current: int, free: float, most: int, drop: float = DROP_MARGIN,
                      raise_: float = RAISE_MARGIN) -> int:
    """The thread count for the next frames, given the current one and the free cores.

    Keeps ``current`` while ``free`` lies within (current - drop, current + raise_);
    otherwise moves to the count whose band holds ``free`` (the bands overlap when
    drop + raise_ > 1, so a steady reading never moves the count twice). Always in
    [1, most]."""
    current = min(max(current, 1), most)
    free = min(max(free, 1.0), float(most))
    if free <= current - drop:
        return max(1, math.ceil(free + drop) - 1)    # the largest count whose band holds free
    if free >= current + raise_:
        return min(most, math.floor(free - raise_) + 1)  # the smallest one
    return current


def _proc_stat_reading() -> CpuReading | None:
    """Linux: busy/total ticks of the cores in this process's affinity mask."""
    try:
        allowed = os.sched_getaffinity(0)
        with open("/proc/stat", "rb") as fh:
            lines = fh.read().split(b"\n")
    except OSError:
        return None
    hz = float(os.sysconf("SC_CLK_TCK"))
    busy = total = 0
    cores = 0
    for line in lines:
        if not line.startswith(b"cpu") or line.startswith(b"cpu "):
            continue
        f = line.split()
        if int(f[0][3:]) not in allowed:
            continue
        # user nice system idle iowait irq softirq steal (guest time is inside user and nice)
        t = [int(x) for x in f[1:9]]
        busy += t[0] + t[1] + t[2] + t[5] + t[6] + t[7]
        total += sum(t)
        cores += 1
    if cores == 0:
        return None
    return CpuReading(busy / hz, total / hz, time.process_time(), cores)


def _windows_reading() -> CpuReading | None:
    """Windows: GetSystemTimes (all cores; kernel time includes idle time), 100 ns units."""
    import ctypes
    from ctypes import wintypes

    idle, kernel, user = wintypes.FILETIME(), wintypes.FILETIME(), wintypes.FILETIME()
    try:
        ok = ctypes.windll.kernel32.GetSystemTimes(ctypes.byref(idle), ctypes.byref(kernel),
                                                   ctypes.byref(user))
    except (AttributeError, OSError):
        return None
    if not ok:
        return None

    def seconds(ft):
        return ((ft.dwHighDateTime << 32) | ft.dwLowDateTime) * 1e-7

    total = seconds(kernel) + seconds(user)
    return CpuReading(total - seconds(idle), total, time.process_time(), os.cpu_count() or 1)


def read_cpu() -> CpuReading | None:
    """The machine's CPU time now, or None where this platform has no reading here."""
    if sys.platform.startswith("linux"):
        return _proc_stat_reading()
    if sys.platform == "win32":
        return _windows_reading()
    return None


class ThreadGovernor:
    """Sets numba's thread count at frame boundaries from the cores other processes leave free.

    Args:
        reader: returns a CpuReading (or None: leave the count alone); injectable for tests.
        most: the largest count; None: numba's count when first asked (numba's
            NUMBA_NUM_THREADS, or what the user set with ``numba.set_num_threads``).
        enabled: False: never change the count.
        min_interval_s: decide only over at least this much wall time.
        stale_s: a previous reading older than this is replaced without deciding.
    """

    def __init__(self, reader: Callable[[], CpuReading | None] = read_cpu,
                 most: int | None = None, enabled: bool = True,
                 min_interval_s: float = MIN_INTERVAL_S, stale_s: float = STALE_S,
                 clock: Callable[[], float] = time.monotonic):
        self.reader = reader
        self.most = most
        self.enabled = enabled
        self.min_interval_s = min_interval_s
        self.stale_s = stale_s
        self.clock = clock
        self._last: CpuReading | None = None
        self._last_t = 0.0
        self._set: int | None = None   # the count this governor last gave numba
        self.count: int | None = None  # the count it decided on (kept after release)
        self.ceiling: int | None = None  # the user's Threads setting (None: automatic)
        self.margins: tuple[float, float] | None = None  # (drop, raise), chosen at first use
        self.decisions = 0

    @classmethod
    def from_environment(cls) -> "ThreadGovernor":
        """The default governor: off when the user fixed the count with NUMBA_NUM_THREADS."""
        return cls(enabled="NUMBA_NUM_THREADS" not in os.environ)

    def _cap(self) -> int:
        """The largest count now: numba's or the user's, under the ceiling."""
        now = numba.get_num_threads()
        if self.most is None or (self._set is not None and now != self._set):
            self.most = now  # numba's count at first use, or one the user set since
        cap = max(1, min(self.most, numba.config.NUMBA_NUM_THREADS))
        return cap if self.ceiling is None else min(cap, self.ceiling)

    def set_ceiling(self, count: int | None) -> None:
        """The most threads any kernel uses from now on (the user's Threads setting), or None
        for automatic; applied at once, also where the governor is off."""
        if count is not None and (int(count) != count or count < 1):
            raise ValueError(f"threads: expected a count of at least 1 or None, got {count!r}")
        self._cap()  # learn numba's own count before changing it
        self.ceiling = None if count is None else int(count)
        top = self._cap()
        now = numba.get_num_threads()
        # lower a count above the ceiling; raise one this governor lowered before
        if now > top or (now < top and self._set == now):
            self._apply(top)

    def observe(self) -> None:
        """Take a first reading now (a simulation is being set up), so that the first frame
        can already be judged by the interval since."""
        if self.enabled and (self._last is None
                             or self.clock() - self._last_t > self.stale_s):
            self._last, self._last_t = self.reader(), self.clock()
            self.count = None

    def before_frame(self) -> int:
        """Called before each frame is stepped; returns the thread count it runs with."""
        if not self.enabled:
            return numba.get_num_threads()
        most = self._cap()
        if self.margins is None:  # the threading layer is known once numba has started it
            spinning = _jit.OPENMP_SPINS_LONG and numba.threading_layer() == "omp"
            self.margins = ((SPINNING_DROP_MARGIN, SPINNING_RAISE_MARGIN) if spinning
                            else (DROP_MARGIN, RAISE_MARGIN))
        now = self.clock()
        if self._last is None or now - self._last_t > self.stale_s:
            self._last, self._last_t = self.reader(), now
            self.count = None  # an old decision says little about now
        current = min(self.count if self.count is not None else most, most)
        if now - self._last_t >= self.min_interval_s:
            reading = self.reader()
            free = None if reading is None else free_cores(self._last, reading)
            if free is not None:
                current = next_thread_count(current, free, most, *self.margins)
                self.decisions += 1
            self._last, self._last_t = reading, now
        self.count = current
        self._apply(current)
        return current

    def release(self) -> None:
        """Give the thread that stepped back its full count (a simulation ended); the decided
        count is kept for the next simulation's first frames."""
        if self.enabled and self._set is not None and self.most is not None:
            self._apply(self._cap())

    def _apply(self, count: int) -> None:
        if numba.get_num_threads() != count:
            numba.set_num_threads(count)
        self._set = count


_governor: ThreadGovernor | None = None


def governor() -> ThreadGovernor:
    """The process's governor (one: the thread count is per process and thread, not per
    simulation, and several simulations of one bake step in turn)."""
    global _governor
    if _governor is None:
        _governor = ThreadGovernor.from_environment()
    return _governor


def set_ceiling(count: int | None) -> None:
    """The most threads any model's kernels use from now on, in this process's thread that
    steps simulations (the user's Threads setting); None: automatic."""
    governor().set_ceiling(count)


def ceiling() -> int | None:
    """The user's Threads setting in force (None: automatic)."""
    return governor().ceiling


def set_governor(g: ThreadGovernor | None) -> ThreadGovernor | None:
    """Replace the process's governor (None: the default on next use); returns the old one."""
    global _governor
    old, _governor = _governor, g
    return old
