"""The one place numba is imported: a cached ``njit`` with a conservative fastmath policy.

fastmath leaves out ``nnan``/``ninf`` so the NaN checks that detect blow-ups keep working, and
``reassoc`` so that a result does not depend on how a kernel was compiled: with it, code compiled
fresh in a process and the same code loaded from numba's cache summed in different orders, and a
4k-vertex drape over a mesh sphere diverged from frame 9 between a cold and a warm run (numba
issue 10617 reports that cached and fresh parallel code are optimised differently).
Set ``NUMBA_DISABLE_JIT=1`` to run every kernel as plain Python (slow, but debuggable).
"""

from __future__ import annotations

import numba

FASTMATH = {"nsz", "arcp", "contract", "afn"}


def njit(*args, parallel: bool = False, **kwargs):
    """``numba.njit`` with ``cache=True`` and the project's fastmath flags."""
    opts = dict(cache=True, fastmath=FASTMATH, parallel=parallel, error_model="numpy")
    opts.update(kwargs)
    if args and callable(args[0]):
        return numba.njit(**opts)(args[0])
    return numba.njit(*args, **opts)


prange = numba.prange
