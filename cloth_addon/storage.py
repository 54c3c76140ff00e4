"""Where the add-on keeps its files: the per-user directory, the numba cache and user presets.

Blender 4.2+ gives each extension a writable folder (``bpy.utils.extension_path_user``) that
survives upgrades; a legacy add-on (Blender 3.4) gets one under the user config folder. The
extension's own folder may be read-only and is replaced on every upgrade, so nothing is written
there.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import bpy

# The package Blender imported us as: "bl_ext.<repo>.cloth_solver" (extension) or "cloth_solver"
# (legacy add-on); cloth_addon is one level below it.
ROOT_PACKAGE = __package__.rpartition(".")[0]


def user_dir() -> Path:
    """The add-on's writable per-user directory (created on demand)."""
    if hasattr(bpy.utils, "extension_path_user") and ROOT_PACKAGE.startswith("bl_ext."):
        return Path(bpy.utils.extension_path_user(ROOT_PACKAGE, create=True))
    path = Path(bpy.utils.user_resource("CONFIG", path=ROOT_PACKAGE.rpartition(".")[2],
                                        create=True))
    path.mkdir(parents=True, exist_ok=True)
    return path


def user_preset_dir() -> Path:
    """Folder of the user's own material presets (TOML, same format as the shipped ones)."""
    path = user_dir() / "presets"
    path.mkdir(parents=True, exist_ok=True)
    return path


def configure_numba_cache() -> str:
    """Point numba's on-disk cache at the user directory, so a second bake starts fast.

    The cache goes into ``<user dir>/numba_cache/<key>``, the key naming what compiled kernels
    depend on (``py3.11-numba0.68.1-numpy1.26``, see ``solver.warmup.cache_key``): Blender
    4.2-5.0 (Python 3.11, numpy 1.x), Blender 5.1+ (Python 3.13, numpy 2.x) and Debian's Blender
    3.4 (its numba 0.56) may share one user directory. Finding the key imports numba and numpy,
    which registration imports a moment later anyway. An explicit
    ``NUMBA_CACHE_DIR`` in the environment is used as it is, without the key: it is numba's own
    setting, which the solver's command line and tests share with the add-on, and numba already
    keeps Python versions apart in it. Returns the directory used.
    """
    if not os.environ.get("NUMBA_CACHE_DIR"):
        from ..solver import warmup
        os.environ["NUMBA_CACHE_DIR"] = str(user_dir() / "numba_cache" / warmup.cache_key())
    path = os.environ["NUMBA_CACHE_DIR"]
    numba = sys.modules.get("numba")
    if numba is not None:  # imported before the variable was set: tell it too
        numba.config.CACHE_DIR = path
    return path
