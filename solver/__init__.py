"""Cloth solver: mass-spring and implicit (Baraff-Witkin) cloth in SI units, without Blender.

This module is the package's public interface and the add-on's one import path. Only relative
imports are used inside the package so that it works both as the top-level ``solver`` package
and inside the Blender extension.

Importing it loads no numba kernels: the simulation and the solvers are imported on first use
(``solver.Simulation``), so that a caller can point numba's cache (NUMBA_CACHE_DIR) somewhere
first, as the add-on does.
"""

__version__ = "0.1.0"  # the one version of the solver, the add-on and the extension (tests agree)

from .formats.pc2 import PC2Error, PC2Writer, read_pc2, write_pc2
from .formats.presets import (list_presets, list_yarn_presets, load_preset, load_yarn_preset,
                              preset_dir, preset_info, yarn_preset_info)
from .formats.scene import SceneError, load_scene
from .mesh import MeshError, PolyMesh, grid_mesh
from .params import (INTEGRATOR_NAMES, QUALITIES, QUALITY_DOCS, QUALITY_NAMES, Display,
                     FieldSpec, MaterialParams, ParameterError, SolverSettings, YarnParams,
                     field_defaults, field_displays, field_specs)
from .spec import ClothSetup, Collider, SimulationSpec, Wind, YarnSetup

# name -> submodule defining it, imported on first access (they load numba)
_LAZY = {"Simulation": "simulation", "SimulationResult": "simulation", "simulate": "simulation",
         "SOLVERS": "solvers", "CLOTH_MODELS": "solvers", "build_model": "model", "ClothModel": "model",
         "sew_lines": "topology",
         # the user's Threads setting: the most threads any model uses (threads.py)
         "set_thread_ceiling": "threads:set_ceiling",
         # the implicit model's steps per frame unless set (SolverSettings.substeps = None)
         "IMPLICIT_SUBSTEPS": "solvers.implicit:DEFAULT_SUBSTEPS",
         # yarn-level knits (solver/yarn/, docs/yarn.md); "module:name" renames on export
         "YarnColliders": "yarn", "YarnSolver": "yarn", "YarnStepError": "yarn",
         "knit_swatch": "yarn", "relax_setup": "yarn", "relax_swatch": "yarn",
         "swatch_setup": "yarn", "build_yarn_model": "yarn",
         "KNIT_PATTERNS": "yarn.stitches:PATTERNS",
         "KNIT_GAUGE_IN_RADII": "yarn.stitches:GAUGE_IN_RADII"}


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module
        module, _, attr = _LAZY[name].partition(":")
        return getattr(import_module(f".{module}", __name__), attr or name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CLOTH_MODELS", "IMPLICIT_SUBSTEPS", "INTEGRATOR_NAMES", "QUALITIES", "QUALITY_DOCS", "QUALITY_NAMES", "ClothModel", "ClothSetup", "Collider",
    "Display", "FieldSpec",
    "MaterialParams",
    "MeshError", "PC2Error", "PC2Writer", "ParameterError", "PolyMesh", "SOLVERS", "SceneError", "Simulation",
    "SimulationResult", "SimulationSpec", "SolverSettings", "Wind", "YarnParams", "build_model",
    "field_defaults", "field_displays", "field_specs", "grid_mesh", "list_presets", "load_preset", "load_scene",
    "preset_dir", "preset_info", "read_pc2", "set_thread_ceiling", "sew_lines", "simulate", "write_pc2",
    "KNIT_GAUGE_IN_RADII", "KNIT_PATTERNS", "YarnColliders", "YarnSetup", "YarnSolver",
    "YarnStepError", "build_yarn_model", "knit_swatch", "list_yarn_presets", "load_yarn_preset",
    "relax_setup", "relax_swatch", "swatch_setup", "yarn_preset_info",
]
