"""The one place numba is imported: a cached ``njit`` with a conservative fastmath policy.

fastmath leaves out ``nnan``/``ninf`` so the NaN checks that detect blow-ups keep working.
Set ``NUMBA_DISABLE_JIT=1`` to run every kernel as plain Python (slow, but debuggable).
"""

from __future__ import annotations

import numba

FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}


def njit(*args, parallel: bool = False, **kwargs):
    """``numba.njit`` with ``cache=True`` and the project's fastmath flags."""
    opts = dict(cache=True, fastmath=FASTMATH, parallel=parallel, error_model="numpy")
    opts.update(kwargs)
    if args and callable(args[0]):
        return numba.njit(**opts)(args[0])
    return numba.njit(*args, **opts)


prange = numba.prange
