"""The scene's unit scale: Blender stores every length in Blender units (BU) and shows it
multiplied by ``scene.unit_settings.scale_length`` (1 BU = scale_length metres); the solver works
in metres.

Blender applies the scale only when the unit system is Metric or Imperial (with the system set
to None it shows raw numbers, and so 1 BU = 1 m here too), and to every value with a length
dimension: lengths, velocities and accelerations (``scene.gravity`` included). We convert
exactly those, so a value means what Blender shows for it.
"""

from __future__ import annotations

import numpy as np


def metres_per_unit(scene) -> float:
    """How many metres one Blender unit is in ``scene``."""
    units = scene.unit_settings
    if units.system == "NONE":
        return 1.0
    return float(units.scale_length)


def gravity(scene) -> np.ndarray:
    """The scene's gravity [m/s²] (zero when the scene's gravity is switched off)."""
    if not scene.use_gravity:
        return np.zeros(3)
    return np.array(scene.gravity, dtype=np.float64) * metres_per_unit(scene)


def gravity_note(scene) -> str | None:
    """A warning when the unit scale makes the scene's gravity far from Earth's: Blender keeps
    -9.81 BU/s², which at unit scale 0.01 is 0.098 m/s² (Blender shows it so)."""
    scale = metres_per_unit(scene)
    g = float(np.linalg.norm(gravity(scene)))
    if scale == 1.0 or g == 0.0 or 0.5 < g / 9.81 < 2.0:
        return None
    return (f"the scene's gravity is {g:.3g} m/s² at unit scale {scale:g} (Blender keeps gravity "
            f"in scene units); for Earth's gravity set Scene > Gravity to 9.81 m/s² as shown "
            f"there ({9.81 / scale:.4g} units/s²)")
