"""Blender side of the extension: properties, operators and panels (everything that imports bpy).

Register order: the solver's packages checked (dependencies.py: a missing one is named with how to
install it), numba's cache directory (it must be set before the solver imports numba), then
properties -> operators -> panels; unregister in reverse.
"""

import traceback

from . import dependencies, storage


def _modules():
    # Imported here, after the numba cache is configured: they import the solver (and numba).
    from . import knit, operators, panels, play, properties
    return properties, operators, play, knit, panels


def register():
    # Blender 3.4 segfaults on exit (status 139) after a `blender -b --python script.py` whose
    # run first imported multiprocessing (the first parallel kernel launch does); imported at
    # registration, before any script runs, it does not.
    import multiprocessing  # noqa: F401
    dependencies.check()
    storage.configure_numba_cache()
    for module in _modules():
        module.register()
    # Compile the solver's kernels in a background process (warmup.py): never waits, and a
    # failure to start it never stops registration (the first bake then compiles them).
    from . import warmup
    try:
        warmup.start()
    except Exception:
        traceback.print_exc()


def unregister():
    from . import warmup
    warmup.unregister()
    for module in reversed(_modules()):
        module.unregister()
