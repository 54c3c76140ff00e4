"""Solvers by name: what ``SolverSettings.model`` (the scene file's ``[solver] model``, the
add-on's Solver menu) selects. The cloth models step a ClothModel; "yarn" steps the yarns of a
knit (solver/yarn/, a YarnSetup). Each solver chooses its own time step in its module.

``SOLVERS`` and ``CLOTH_MODELS`` are made on first use: the yarn solver's module imports this
package's ``base`` (its errors and StepInfo), so it cannot be imported while this one is."""

from __future__ import annotations

from .base import ClothSolver
from .implicit import ImplicitSolver
from .mass_spring import MassSpringSolver

_REGISTRY: dict[str, type] | None = None


def _registry() -> dict[str, type]:
    global _REGISTRY
    if _REGISTRY is None:
        from ..yarn.dynamics import YarnSolver

        _REGISTRY = {"mass_spring": MassSpringSolver, "implicit": ImplicitSolver,
                     "yarn": YarnSolver}
    return _REGISTRY


def __getattr__(name):
    if name == "SOLVERS":
        return _registry()
    if name == "CLOTH_MODELS":   # the models that simulate cloth: the add-on's Solver menu
        return tuple(n for n, cls in _registry().items() if issubclass(cls, ClothSolver))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def solver_class(name: str) -> type:
    """The solver class registered under ``name``; ValueError naming the choices."""
    try:
        return _registry()[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r} (available: {', '.join(_registry())})") \
            from None


def builder(name: str):
    """How the model ``name`` builds its solver from a whole SimulationSpec, for models that
    build their own model and colliders (the yarns: relax.build_solver); None for the cloth
    models, whose model the simulation builds (model.build_model) and hands to their class."""
    solver_class(name)
    if name == "yarn":
        from ..yarn.relax import build_solver

        return build_solver
    return None


def make_solver(model, settings, gravity) -> ClothSolver:
    """Instantiate the solver named by ``settings.model`` for ``model`` (its model type)."""
    return solver_class(settings.model)(model, settings, gravity)
