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

    Must run before ``numba`` is first imported (numba reads ``NUMBA_CACHE_DIR`` at import); an
    explicit ``NUMBA_CACHE_DIR`` in the environment is respected. Returns the directory used.
    """
    if not os.environ.get("NUMBA_CACHE_DIR"):
        os.environ["NUMBA_CACHE_DIR"] = str(user_dir() / "numba_cache")
    path = os.environ["NUMBA_CACHE_DIR"]
    numba = sys.modules.get("numba")
    if numba is not None:  # already imported (another add-on, or a re-enable): tell it too
        numba.config.CACHE_DIR = path
    return path
