"""Load the add-on from this checkout into the running Blender, the way users get it.

Blender 4.2+ (including the ``bpy`` wheel): a local extension repository whose only package,
``cloth_solver``, is a copy of the checkout's add-on files, enabled as
``bl_ext.<repo>.cloth_solver``. Older Blender (Debian's 3.4): a legacy add-on ``cloth_solver``
in an add-ons folder on ``sys.path`` (usable as ``BLENDER_USER_SCRIPTS`` by a ``blender -b``
subprocess).

A copy, not a symlink: numba does not find its cached kernels again for sources reached
through a symlinked package (measured: every session recompiled), while a copy that keeps the
files' modification times (``copy2``), in a folder that stays put, loads them.

For the bpy wheel, point ``BLENDER_USER_RESOURCES`` at a scratch folder *before* ``import bpy``
so the user's own Blender settings are not touched.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "cloth_solver"
# What the extension consists of (the build's exclude list keeps the rest out of the zip too).
PACKAGE_PATHS = ("__init__.py", "blender_manifest.toml", "cloth_addon", "solver", "presets")


def _copy(folder: Path) -> None:
    """(Re)place ``folder/cloth_solver`` by a copy of the checkout's add-on files."""
    target = folder / PACKAGE
    if target.is_symlink():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for rel in PACKAGE_PATHS:
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, target / rel, copy_function=shutil.copy2,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, target / rel)


def enable(scratch: Path) -> str:
    """Enable the add-on from this checkout; returns its module name. ``scratch`` is a
    writable folder for the copy (keep it in one place so numba's cache stays valid)."""
    import addon_utils
    import bpy

    if bpy.app.version >= (4, 2, 0):
        repo_dir = Path(scratch) / "dev_extensions"
        repo_dir.mkdir(parents=True, exist_ok=True)
        prefs = bpy.context.preferences.extensions
        repo = next((r for r in prefs.repos if r.use_custom_directory
                     and Path(r.custom_directory) == repo_dir), None)
        if repo is None:
            bpy.ops.preferences.extension_repo_add(
                name="cloth_dev", type="LOCAL", custom_directory=str(repo_dir),
                use_custom_directory=True)
            repo = next(r for r in prefs.repos if Path(r.custom_directory) == repo_dir)
        module = f"bl_ext.{repo.module}.{PACKAGE}"
    else:
        addons_dir = Path(scratch) / "addons"
        if str(addons_dir) not in sys.path:
            sys.path.append(str(addons_dir))
        module = PACKAGE
    if addon_utils.check(module)[1]:
        return module
    _copy(repo_dir if bpy.app.version >= (4, 2, 0) else addons_dir)
    mod = addon_utils.enable(module, default_set=True, handle_error=_raise)
    if mod is None:
        raise RuntimeError(f"could not enable {module}")
    return module


def disable(module: str) -> None:
    import addon_utils
    addon_utils.disable(module, default_set=True, handle_error=_raise)


def _raise(exc):
    raise exc


def scratch_user_resources(folder: Path) -> None:
    """Use ``folder`` as Blender's user resources (call before ``import bpy``)."""
    if "bpy" in sys.modules:
        raise RuntimeError("set the user resources before importing bpy")
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["BLENDER_USER_RESOURCES"] = str(folder)
