"""Quantities a user checks to trust a bake: strain, energy."""

from __future__ import annotations

import numpy as np


def edge_strain(x: np.ndarray, edges: np.ndarray, rest_length: np.ndarray) -> np.ndarray:
    """Strain l/L − 1 of each edge, (E,); x positions [m] (V, 3)."""
    if len(edges) == 0:
        return np.zeros(0)
    length = np.linalg.norm(x[edges[:, 1]] - x[edges[:, 0]], axis=1)
    return length / np.where(rest_length > 0, rest_length, np.inf) - 1.0 * (rest_length > 0)


def kinetic_energy(mass: np.ndarray, v: np.ndarray) -> float:
    """½·Σ m·|v|² [J]."""
    return float(0.5 * np.sum(mass * np.sum(v * v, axis=1)))


def potential_energy(mass: np.ndarray, x: np.ndarray, gravity: np.ndarray) -> float:
    """Gravitational potential −Σ m·g·x [J] (zero at the origin).

    Written without a matrix product: ``x @ g`` went to OpenBLAS, whose threads then spun after
    every frame's report and took the cores from the solver's own threads: up to 15 % of a 4k
    bake's time on two cores (docs/solver.md, "No BLAS in a frame")."""
    g = np.asarray(gravity, dtype=np.float64)
    return float(-np.sum(mass * (x[:, 0] * g[0] + x[:, 1] * g[1] + x[:, 2] * g[2])))
