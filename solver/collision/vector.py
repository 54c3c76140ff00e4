"""3-vectors as tuples of floats: allocation-free arithmetic for the collision kernels.

Numba keeps tuples in registers, so kernels written with these helpers allocate nothing inside
their parallel loops.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit


@njit(inline="always")
def load(x, i):
    """Row i of an (N, 3) array as a tuple."""
    return (x[i, 0], x[i, 1], x[i, 2])


@njit(inline="always")
def lerp_row(x0, x1, i, t):
    """(1 − t)·x0[i] + t·x1[i] as a tuple (position at fraction t of a linear motion)."""
    return (x0[i, 0] + t * (x1[i, 0] - x0[i, 0]), x0[i, 1] + t * (x1[i, 1] - x0[i, 1]),
            x0[i, 2] + t * (x1[i, 2] - x0[i, 2]))


@njit(inline="always")
def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(inline="always")
def sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(inline="always")
def scale(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@njit(inline="always")
def axpy(s, a, b):
    """s·a + b."""
    return (s * a[0] + b[0], s * a[1] + b[1], s * a[2] + b[2])


@njit(inline="always")
def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(inline="always")
def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(inline="always")
def norm(a):
    return np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


@njit(inline="always")
def normalized(a):
    """a/|a|, or (0, 0, 0) for a zero vector."""
    n = np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
    if n <= 0.0:
        return (0.0, 0.0, 0.0)
    return (a[0] / n, a[1] / n, a[2] / n)
