"""The one place numba is imported: a cached ``njit`` with a conservative fastmath policy.

fastmath leaves out ``nnan``/``ninf`` so the NaN checks that detect blow-ups keep working, and
``reassoc`` so that a result does not depend on how a kernel was compiled: with it, code compiled
fresh in a process and the same code loaded from numba's cache summed in different orders, and a
4k-vertex drape over a mesh sphere diverged from frame 9 between a cold and a warm run (numba
issue 10617 reports that cached and fresh parallel code are optimised differently).
Set ``NUMBA_DISABLE_JIT=1`` to run every kernel as plain Python (slow, but debuggable).
"""

from __future__ import annotations

import os

import numba

# Which thread pool runs the parallel kernels, unless the user chose one (NUMBA_THREADING_LAYER
# or NUMBA_THREADING_LAYER_PRIORITY). A frame runs thousands of short parallel regions (a PCG
# iteration has about ten). On a 2-core machine numba's default, TBB, made two threads slower
# than one: 296-349 ms per frame of the 65x65 hanging cloth against 158-168 ms; OpenMP's pool
# took 112-140 ms (measured). TBB and numba's own pool stay as fallbacks where there is no
# OpenMP runtime.
if "NUMBA_THREADING_LAYER_PRIORITY" not in os.environ:
    numba.config.THREADING_LAYER_PRIORITY = ["omp", "tbb", "workqueue"]

FASTMATH = {"nsz", "arcp", "contract", "afn"}


def njit(*args, parallel: bool = False, **kwargs):
    """``numba.njit`` with ``cache=True`` and the project's fastmath flags."""
    opts = dict(cache=True, fastmath=FASTMATH, parallel=parallel, error_model="numpy")
    opts.update(kwargs)
    if args and callable(args[0]):
        return numba.njit(**opts)(args[0])
    return numba.njit(*args, **opts)


prange = numba.prange
