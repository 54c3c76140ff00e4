"""Load the add-on from this checkout into the running Blender, the way users get it.

Blender 4.2+ (including the ``bpy`` wheel): a local extension repository whose only package,
``cloth_solver``, is a link to the checkout, enabled as ``bl_ext.<repo>.cloth_solver``.
Older Blender (Debian's 3.4): a legacy add-on ``cloth_solver`` in an add-ons folder on
``sys.path``. Only the add-on's own files are linked, never copied.

For the bpy wheel, point ``BLENDER_USER_RESOURCES`` at a scratch folder *before* ``import bpy``
so the user's own Blender settings are not touched.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "cloth_solver"


def _link(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / PACKAGE
    if link.is_symlink() and link.resolve() == ROOT:
        return
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(ROOT, target_is_directory=True)


def enable(scratch: Path) -> str:
    """Enable the add-on from this checkout; returns its module name. ``scratch`` is a
    writable folder for the repository link."""
    import addon_utils
    import bpy

    if bpy.app.version >= (4, 2, 0):
        repo_dir = Path(scratch) / "dev_extensions"
        _link(repo_dir)
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
        _link(addons_dir)
        if str(addons_dir) not in sys.path:
            sys.path.append(str(addons_dir))
        module = PACKAGE
    if addon_utils.check(module)[1]:
        return module
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
