"""The one place numba is imported: a cached ``njit`` with a conservative fastmath policy.

fastmath leaves out ``nnan``/``ninf`` so the NaN checks that detect blow-ups keep working, and
``reassoc`` so that a result does not depend on how a kernel was compiled: with it, code compiled
fresh in a process and the same code loaded from numba's cache summed in different orders, and a
drape diverged between a cold and a warm run (numba issue 10617 reports that cached and fresh
parallel code are optimised differently; docs/solver.md, "fastmath policy").
Set ``NUMBA_DISABLE_JIT=1`` to run every kernel as plain Python (slow, but debuggable).
"""

from __future__ import annotations

import functools
import hashlib
import os

import numba

# Which thread pool runs the parallel kernels, unless the user chose one (NUMBA_THREADING_LAYER
# or NUMBA_THREADING_LAYER_PRIORITY). A frame runs thousands of short parallel regions (a PCG
# iteration has about ten). On a 2-core machine numba's default, TBB, made two threads slower
# than one, and OpenMP's pool was the fastest. TBB and numba's own pool stay as fallbacks where
# there is no OpenMP runtime (docs/solver.md, "Thread pool").
if "NUMBA_THREADING_LAYER_PRIORITY" not in os.environ:
    numba.config.THREADING_LAYER_PRIORITY = ["omp", "tbb", "workqueue"]


def _libgomp_loaded() -> bool:
    """True if libgomp is mapped into this process already (Linux; False elsewhere)."""
    try:
        with open("/proc/self/maps", "rb") as fh:
            return b"/libgomp" in fh.read()
    except OSError:
        return False


# How long an OpenMP worker spins at a barrier before it sleeps (libgomp reads GOMP_SPINCOUNT
# when numba first loads it, so this must be set before the first parallel kernel runs; it has
# no effect if something else in the process loaded libgomp first). With libgomp's default
# (300,000 spins), a bake next to other busy processes collapsed, because waiting workers spun
# on the cores that the threads they waited for needed. At 3,000 spins a bake beside busy
# processes gets about its fair share, and alone it runs as fast as with the default.
# OMP_WAIT_POLICY=passive was as robust but slower alone. A user's own GOMP_SPINCOUNT or
# OMP_WAIT_POLICY wins (docs/solver.md, "OpenMP spin count").
#
# OPENMP_SPINS_LONG: the workers spin libgomp's default 300,000 times all the same, because
# libgomp was loaded before this module (Debian's Blender 3.4 loads it at start); then
# solver/threads.py runs more than one thread only on cores that are clearly free.
OPENMP_SPINS_LONG = False
if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
    os.environ["GOMP_SPINCOUNT"] = "3000"
    OPENMP_SPINS_LONG = _libgomp_loaded()

FASTMATH = {"nsz", "arcp", "contract", "afn"}

# Every kernel gives Python's GIL back while it runs (nogil): the add-on simulates some bakes on
# a background thread of Blender's process (cloth_addon/runner.py: scripts, knits), and
# Blender's main thread needs the GIL for every Python draw callback of its UI. Measured in Blender 3.4 with a window: with kernels holding
# the GIL, a bake on the thread blocked the UI for 0.5-1 s at a time and ran 3x slower than
# the same bake without a UI (each of the UI's many callbacks waited out Python's 5 ms switch
# interval behind a kernel). numba's cache index does not record the flag, so it is part of
# the cache stamp (CACHE_SALT): kernels cached without it are compiled again, never loaded.
NOGIL = True
CACHE_SALT = b"nogil\0" if NOGIL else b""

# The solver's own folder: only kernels defined below it get content-stamped caches.
SOLVER_DIR = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=None)
def _content_hash(path: str, mtime: float, size: int) -> bytes:
    # mtime and size are part of the key so that a file edited while the process runs is read
    # again; the stamp itself depends on the content only.
    with open(path, "rb") as f:
        return hashlib.sha256(CACHE_SALT + f.read()).digest()


class _ContentStamp:
    """Mixin for numba's source-file cache locators: the index is stamped with a hash of the
    source file instead of its (mtime, size). Extracting the same extension zip again (a
    reinstall) gives every file a new mtime, with which numba 0.56 (Debian's) throws the whole
    cache away and compiles everything again (tens of seconds to minutes)."""

    solver_dir = SOLVER_DIR

    def get_source_stamp(self):
        st = os.stat(self._py_file)
        return _content_hash(self._py_file, st.st_mtime, st.st_size)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not os.path.abspath(py_file).startswith(cls.solver_dir + os.sep):
            return None  # someone else's kernel: numba's own locators as usual
        return super().from_function(py_func, py_file)


def _install_content_stamps() -> str:
    """Put content-stamped locators for the solver's files in front of numba's own.

    Returns "installed", or "unavailable" where numba's caching internals are not the ones
    known here (0.56 to 0.68); numba's default stamps are then used. The stamp is a SHA-256 of
    the content after CACHE_SALT.
    """
    try:
        from numba.core import caching
    except ImportError:
        return "unavailable"
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    locators = getattr(impl, "_locator_classes", None)
    mixin = getattr(caching, "_SourceFileBackedLocatorMixin", None)
    if not isinstance(locators, list) or mixin is None:
        return "unavailable"
    if any(getattr(c, "solver_dir", None) == SOLVER_DIR for c in locators):
        return "installed"  # this file imported again (an add-on reload)
    # Each copy of the solver in the process (the add-on's and a checkout's) adds its own.
    ours = [type(f"ContentStamped{base.__name__.lstrip('_')}", (_ContentStamp, base),
                 {"solver_dir": SOLVER_DIR})
            for base in locators if issubclass(base, mixin) and not hasattr(base, "solver_dir")
            # only those stamping a plain file (numba 0.68's zip locator stamps its own way)
            and getattr(base, "get_source_stamp", None) is mixin.get_source_stamp]
    locators[:0] = ours
    return "installed"


CACHE_STAMPS = _install_content_stamps()


def njit(*args, parallel: bool = False, **kwargs):
    """``numba.njit`` with ``cache=True`` and the project's fastmath flags."""
    opts = dict(cache=True, fastmath=FASTMATH, parallel=parallel, error_model="numpy",
                nogil=NOGIL)
    opts.update(kwargs)
    if args and callable(args[0]):
        return numba.njit(**opts)(args[0])
    return numba.njit(*args, **opts)


prange = numba.prange


def cache_stats() -> tuple[int, int]:
    """(loaded from numba's cache, compiled) kernel signatures so far in this process, over the
    kernels of this copy of the solver (the add-on's or a checkout's)."""
    import sys
    package = __name__.rpartition(".")[0]
    hits = misses = 0
    for name, module in list(sys.modules.items()):
        if name == package or name.startswith(package + "."):
            for value in vars(module).values():
                if isinstance(value, numba.core.registry.CPUDispatcher) and value.signatures:
                    hits += sum(value.stats.cache_hits.values())
                    misses += sum(value.stats.cache_misses.values())
    return hits, misses
