"""Standard set-ups with known answers and the helpers the tests share; the benchmarks use
them too. (Shared helpers live here, not in a conftest.py: tests/blender has its own conftest
on sys.path, so ``from conftest import`` would be ambiguous.)"""

from __future__ import annotations

import numpy as np

from pathlib import Path

from solver import (ClothSetup, MaterialParams, PolyMesh, SimulationResult, SimulationSpec,
                    SolverSettings, grid_mesh, simulate)

# A light, soft fabric: the explicit model's automatic step stays affordable in tests.
SOFT = MaterialParams(area_density=0.2, stretch_stiffness=50.0, shear_stiffness=1.0,
                      bend_stiffness=1e-7, stretch_damping=0.05, shear_damping=0.001,
                      bend_damping=0.0, air_drag=0.0)


def simulate_cloth(mesh: PolyMesh, pins=(), model: str = "implicit", frames: int = 6,
                   material: MaterialParams = SOFT, colliders=(), **settings) -> SimulationResult:
    """Simulate one cloth with the given pins, colliders and solver settings."""
    spec = SimulationSpec(ClothSetup(mesh, material, np.asarray(pins, dtype=np.int64)),
                          SolverSettings(model=model, **settings), frames=frames,
                          colliders=tuple(colliders))
    return simulate(spec)


def write_scene(folder: Path, text: str, name: str = "scene.toml") -> Path:
    """A scene file with the given TOML text in folder."""
    path = Path(folder) / name
    path.write_text(text)
    return path


def vertical_strip(width: float, length: float, nx: int, ny: int) -> tuple[PolyMesh, np.ndarray]:
    """A strip in the XZ plane hanging down from z = 0 to z = −length.

    Returns:
        (mesh, indices of the top row of vertices).
    """
    g = grid_mesh((width, length), (nx, ny), (0.0, 0.0, 0.0))
    p = g.positions
    pos = np.stack([p[:, 0], np.zeros(len(p)), p[:, 1] - 0.5 * length], 1)
    top = (ny - 1) * nx + np.arange(nx)
    return PolyMesh(pos, g.face_indices, g.face_offsets), top


def hanging_strip(material: MaterialParams, settings: SolverSettings, length: float = 1.0,
                  width: float = 0.1, nx: int = 3, ny: int = 21, frames: int = 48,
                  fps: float = 24.0) -> SimulationSpec:
    """A strip held along its top edge, stretching under its own weight.

    Its static extension is ρ·g·L²/(2·k) (see ``hanging_strip_extension``).
    """
    mesh, top = vertical_strip(width, length, nx, ny)
    return SimulationSpec(ClothSetup(mesh, material, top), settings, frames=frames, fps=fps)


def hanging_strip_extension(material: MaterialParams, length: float, g: float = 9.81) -> float:
    """Static elongation [m] of a strip hanging under its own weight along the weft (v) axis."""
    return material.area_density * g * length ** 2 / (2.0 * material.weft_stiffness)


def cantilever_strip(material: MaterialParams, settings: SolverSettings, length: float = 0.2,
                     width: float = 0.04, nx: int = 21, ny: int = 3, frames: int = 24,
                     fps: float = 24.0) -> tuple[SimulationSpec, float]:
    """A horizontal strip along +x clamped at x = 0 (its first two columns pinned).

    Returns:
        (spec, free length [m]): from the pinned second column to the tip, length − h with
        h = length/(nx − 1). The clamp hinges count only their free wing
        (geometry.clamped_hinge_area), so the strip is clamped where its pins end.
    """
    g = grid_mesh((length, width), (nx, ny), (0.5 * length, 0.0, 0.0))
    i = np.arange(nx * ny) % nx
    pins = np.nonzero(i <= 1)[0]
    h = length / (nx - 1)
    return (SimulationSpec(ClothSetup(g, material, pins), settings, frames=frames, fps=fps),
            length - h)


def hanging_cloth(resolution: int, material: MaterialParams, settings: SolverSettings,
                  size: float = 1.0, frames: int = 48, height: float = 1.0) -> SimulationSpec:
    """A square cloth lying flat at z = height, held at its two corners with j = n − 1.

    It falls and swings about the line between the two pins: the benchmark scene.
    """
    n = resolution
    g = grid_mesh((size, size), (n, n), (0.0, 0.0, height))
    pins = np.array([(n - 1) * n, n * n - 1])
    return SimulationSpec(ClothSetup(g, material, pins), settings, frames=frames)


def heavy_elastica_tip_drop(length: float, material: MaterialParams, g: float = 9.81) -> float:
    """Vertical tip drop [m] of a clamped heavy elastica (inextensible, large deflection).

    Solves B·θ'' = −ρ·g·(L − s)·cos θ with θ(0) = 0 (clamped) and θ'(L) = 0 (free end), θ the
    angle below horizontal, then integrates sin θ along the arc. Independent of any mesh.
    """
    from scipy.integrate import solve_bvp

    q = material.area_density * g / material.bend_stiffness
    s = np.linspace(0.0, length, 401)

    def rhs(s_, y):
        return np.vstack([y[1], -q * (length - s_) * np.cos(y[0]), np.sin(y[0])])

    def bc(ya, yb):
        return np.array([ya[0], yb[1], ya[2]])

    guess = np.zeros((3, s.size))
    sol = solve_bvp(rhs, bc, s, guess, tol=1e-8, max_nodes=100000)
    if not sol.success:
        raise RuntimeError(f"elastica solve failed: {sol.message}")
    return float(sol.sol(length)[2])
