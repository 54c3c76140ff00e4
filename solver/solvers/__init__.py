"""Cloth solvers by name: what ``SolverSettings.model`` (the scene file's ``[solver] model``,
the add-on's Solver menu) selects. Each solver chooses its own time step in its module."""

from __future__ import annotations

from .base import ClothSolver
from .implicit import ImplicitSolver
from .mass_spring import MassSpringSolver

SOLVERS: dict[str, type[ClothSolver]] = {
    "mass_spring": MassSpringSolver,
    "implicit": ImplicitSolver,
}


def make_solver(model, settings, gravity) -> ClothSolver:
    """Instantiate the solver named by ``settings.model`` for the ClothModel ``model``."""
    try:
        cls = SOLVERS[settings.model]
    except KeyError:
        raise ValueError(f"unknown model {settings.model!r} (available: {', '.join(SOLVERS)})")
    return cls(model, settings, gravity)
