"""Cloth models by name; the scene file, the add-on and the tests all pick models from here."""

from __future__ import annotations

from .models.base import ClothSolver
from .models.implicit import ImplicitSolver
from .models.mass_spring import MassSpringSolver

MODELS: dict[str, type[ClothSolver]] = {
    "mass_spring": MassSpringSolver,
    "implicit": ImplicitSolver,
}


def make_solver(model, settings, gravity) -> ClothSolver:
    """Instantiate the model named by ``settings.model``."""
    try:
        cls = MODELS[settings.model]
    except KeyError:
        raise ValueError(f"unknown model {settings.model!r} (available: {', '.join(MODELS)})")
    return cls(model, settings, gravity)
