"""The Python packages the solver needs, checked before anything imports them, so that a
Blender without them says what to install instead of ``No module named 'numpy'``.

Blender 4.2+ installs numba and scipy with the extension (its wheels) and brings numpy. A
legacy add-on (Blender 3.x) uses the Python Blender runs: Debian's and Ubuntu's ``blender``
package runs the system's Python, whose packages come from apt; a Blender from blender.org
brings its own Python (numpy included) into which pip installs.
"""

from __future__ import annotations

import importlib
import sys

PACKAGES = ("numpy", "scipy", "numba")
APT = "sudo apt install python3-numpy python3-scipy python3-numba"


def install_hint() -> str:
    """How to install PACKAGES into the Python this Blender runs."""
    if sys.prefix.startswith("/usr"):  # a distribution's Blender on the system's Python
        return f"install them with your system's packages: {APT}"
    return (f"install them into Blender's Python: \"{sys.executable}\" -m pip install numpy "
            "scipy numba (or use Blender 4.2 or later, which installs them with the extension)")


def check() -> None:
    """Raise ImportError naming the missing packages and how to install them."""
    missing = []
    for name in PACKAGES:
        try:
            importlib.import_module(name)
        except ImportError as err:  # the first one's error says why; the others follow from it
            missing.append(name if missing else f"{name} ({err})")
    if missing:
        raise ImportError(f"Cloth Solver needs numpy, scipy and numba in the Python that "
                          f"Blender {_version()} runs, which lacks {', '.join(missing)}; "
                          f"{install_hint()}, then enable the add-on again")


def _version() -> str:
    try:
        import bpy
        return bpy.app.version_string
    except ImportError:
        return ""
