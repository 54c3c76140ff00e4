"""Cloth solver: mass-spring and implicit (Baraff-Witkin) cloth in SI units, without Blender.

Only relative imports are used inside this package so that it works both as the top-level
``solver`` package and inside the Blender extension.
"""

__version__ = "0.1.0"  # the one version of the solver, the add-on and the extension (tests agree)

from .mesh import MeshError, PolyMesh, grid_mesh
from .params import MaterialParams, ParameterError, SolverSettings
from .spec import ClothSetup, Collider, SimulationSpec, Wind

__all__ = [
    "ClothSetup", "Collider", "MaterialParams", "MeshError", "ParameterError", "PolyMesh",
    "SimulationSpec", "SolverSettings", "Wind", "grid_mesh",
]
