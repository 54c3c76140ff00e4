"""Yarn-level knits: Kaldor's model ([Kaldor2011]; docs/yarn.md).

Stitch generator (``knit_swatch``), relaxation into a rest state (``relax_setup``), the frozen
yarn model (``build_yarn_model``) and its solver (``YarnSolver``, "yarn" in the solver
registry): inextensible polyline rods with a rest curvature, Kaldor's yarn–yarn contact,
friction, colliders and non-rigid damping, in a step refined so that no yarn passes through
another.

Importing this package loads no numba kernels (the scene reader takes the stitch generator
from it): the names below are imported on first use, as ``solver``'s are.
"""

# name -> submodule defining it, imported on first access (most load numba)
_LAZY = {"YarnColliders": "colliders", "loop_regions": "damping", "Stepping": "dynamics",
         "YarnSolver": "dynamics", "YarnStepError": "dynamics", "YarnModel": "model",
         "YarnSetupError": "model", "build_yarn_model": "model", "Relaxed": "relax",
         "relax_setup": "relax", "relax_swatch": "relax", "swatch_setup": "relax",
         "PATTERNS": "stitches", "Swatch": "stitches", "knit_swatch": "stitches"}


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = sorted(_LAZY)
