"""Blender's own Python as a child process (the warm-up, warmup.py; the bake's worker,
worker.py), importing the add-on's modules under the names Blender gives them, without bpy.

numba's cached kernels record their module's name and import it when loaded: kernels cached
under another name ("solver...") fail to load in Blender. So the child imports the solver as
"bl_ext.<repo>.cloth_solver.solver..." (or "cloth_solver.solver..."), and the packages above it
and the add-on's own package are stand-ins (their __init__ imports bpy).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# argv: the folder that holds solver/ and cloth_addon/, the add-on's package, the entry
# ("module:function" below the package, called with expect=STAMP), and the stamp.
SCRIPT = """
import importlib, os, sys, types
root, package, entry, stamp = sys.argv[1:5]
sys.stdout.reconfigure(line_buffering=True)  # a log file shows each line as it comes
parts = package.split(".")
for i in range(1, len(parts) + 1):
    name = ".".join(parts[:i])
    module = types.ModuleType(name)
    module.__path__ = [root] if i == len(parts) else []
    sys.modules[name] = module
addon = types.ModuleType(package + ".cloth_addon")
addon.__path__ = [os.path.join(root, "cloth_addon")]
sys.modules[addon.__name__] = addon
module, function = entry.split(":")
sys.exit(getattr(importlib.import_module(package + "." + module), function)(expect=stamp))
"""
ROOT = Path(__file__).resolve().parent.parent  # the folder that holds solver/ and cloth_addon/
PACKAGE = __package__.rpartition(".")[0]  # the add-on's package ("bl_ext.….cloth_solver")


def start(python: str, entry: str, stamp: str, env: dict | None = None,
          **popen) -> subprocess.Popen:
    """``python`` running ``entry`` ("cloth_addon.worker:serve") with Blender's sys.path
    (Blender's numpy, the extension's numba and scipy), in a session of its own (Ctrl+C in
    Blender's terminal does not end it; no console window on Windows). ``env``: more
    variables; ``popen``: subprocess.Popen's other arguments."""
    path = [p for p in sys.path if p]
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(path)}
    if os.name == "nt":
        popen["creationflags"] = subprocess.CREATE_NO_WINDOW
    else:
        popen["start_new_session"] = True
    return subprocess.Popen([python, "-s", "-c", SCRIPT, str(ROOT), PACKAGE, entry, stamp],
                            env=full_env, **popen)
