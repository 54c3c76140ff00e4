"""Air: drag through the cloth's normal and gusts that travel with the wind, for both models.

The figures each scenario gives (old isotropic drag against the present model) are in
docs/solver.md, "Air"; ``python tests/test_air.py`` prints them.
"""

import dataclasses
import time

import numpy as np
import pytest
from scenarios import SOFT

from solver import (ClothSetup, PolyMesh, SimulationSpec, SolverSettings, Wind, grid_mesh,
                    load_preset, simulate)
from solver.forces.external import wind_field

G = 9.81
MODELS = ("implicit", "mass_spring")
SHEET = dataclasses.replace(SOFT, air_drag=1.0)  # v_t = ρ_A·g/air_drag = 1.962 m/s, τ = 0.2 s


def _sheet(vertical: bool) -> PolyMesh:
    """A 0.2 m square sheet, 5 × 5 vertices, lying flat (XY) or standing edge-on (XZ)."""
    g = grid_mesh((0.2, 0.2), (5, 5), (0.0, 0.0, 0.0))
    if not vertical:
        return g
    p = g.positions
    return PolyMesh(np.stack([p[:, 0], np.zeros(len(p)), p[:, 1]], 1), g.face_indices,
                    g.face_offsets)


def falling_sheet(model: str, vertical: bool, frames: int) -> np.ndarray:
    """Mean height [m] per frame (24 fps) of the sheet falling from rest in still air."""
    spec = SimulationSpec(ClothSetup(_sheet(vertical), SHEET), SolverSettings(model=model),
                          frames=frames)
    r = simulate(spec)
    assert r.error is None
    return r.positions[:, :, 2].mean(axis=1)


FLAG_SIZE = (1.2, 0.9)   # m: fly (along the wind) × hoist
FLAG_RES = (13, 10)      # vertices: 0.1 m cells
FLAG_WIND = Wind(velocity=np.array([5.0, 0.0, 0.0]), turbulence=1.5, turbulence_scale=0.5,
                 turbulence_frequency=1.0, seed=3)


def flag(model: str, seconds: float = 4.0) -> tuple[np.ndarray, int]:
    """A cotton flag held along its hoist edge (x = 0, vertical), flying along +x in a 5 m/s
    wind with 1.5 m/s gusts. Returns (positions per frame (24 fps), its free top corner)."""
    nx, nz = FLAG_RES
    g = grid_mesh(FLAG_SIZE, FLAG_RES, (0.0, 0.0, 0.0))
    p = g.positions
    pos = np.stack([p[:, 0] + 0.5 * FLAG_SIZE[0], np.zeros(len(p)), p[:, 1] + 2.0], 1)
    hoist = np.arange(nz) * nx
    spec = SimulationSpec(ClothSetup(PolyMesh(pos, g.face_indices, g.face_offsets),
                                     load_preset("cotton"), hoist),
                          SolverSettings(model=model), frames=round(24 * seconds),
                          wind=FLAG_WIND)
    r = simulate(spec)
    assert r.error is None
    return r.positions, nz * nx - 1


def flag_figures(positions: np.ndarray, corner: int, start: int = 48) -> tuple[float, float]:
    """(r.m.s. distance of the surface from its best-fit plane, standard deviation of the free
    corner's position) [m] over frames ``start``… (seconds 2–4 at 24 fps)."""
    dev = []
    for x in positions[start:]:
        c = x - x.mean(axis=0)
        s = np.linalg.svd(c, compute_uv=False)
        dev.append(s[-1] ** 2 / len(x))  # mean squared distance from the best-fit plane
    corner_path = positions[start:, corner]
    return float(np.sqrt(np.mean(dev))), float(np.sqrt(corner_path.var(axis=0).sum()))


@pytest.mark.parametrize("model", MODELS)
def test_a_sheet_falling_flat_reaches_rho_g_over_air_drag(model):
    z = falling_sheet(model, vertical=False, frames=48)
    v = (z[-2] - z[-1]) * 24.0  # 10 time constants in
    np.testing.assert_allclose(v, SHEET.area_density * G / SHEET.air_drag, rtol=0.02)


@pytest.mark.parametrize("model", MODELS)
def test_a_sheet_falling_edge_on_falls_much_further(model):
    """Pressure drag acts on the normal component of the relative air velocity: edge-on only
    the small skin friction brakes the sheet."""
    flat = falling_sheet(model, vertical=False, frames=24)
    edge = falling_sheet(model, vertical=True, frames=24)
    d_flat, d_edge = flat[0] - flat[-1], edge[0] - edge[-1]
    assert d_flat == pytest.approx(1.572, rel=0.02)  # v_t·(t − τ(1 − e^(−t/τ)))
    assert d_edge > 1.5 * d_flat
    assert d_edge < 0.5 * G  # still braked a little


@pytest.mark.parametrize("model", MODELS)
def test_a_flag_keeps_rippling_in_gusty_wind(model):
    x, corner = flag(model)
    rms_plane, corner_std = flag_figures(x, corner)
    assert rms_plane > 0.02
    assert corner_std > 0.03
    assert np.abs(x[-1, :, 1]).max() < 1.2  # it flies, not blown away or blown up


def test_gusts_are_seeded_have_the_asked_rms_and_travel_with_the_wind():
    w = Wind(velocity=np.array([5.0, 0.0, 0.0]), turbulence=1.5, turbulence_scale=0.5,
             turbulence_frequency=0.0, seed=4)
    rng = np.random.default_rng(0)
    x = rng.uniform(-20.0, 20.0, size=(20000, 3))
    a = wind_field(w, x, 0.3)
    np.testing.assert_array_equal(a, wind_field(w, x, 0.3))  # deterministic
    assert not np.allclose(a, wind_field(dataclasses.replace(w, seed=5), x, 0.3))
    gust = a - w.velocity
    assert np.sqrt((gust ** 2).sum(axis=1).mean()) == pytest.approx(1.5, rel=0.05)
    # frozen pattern (no evolution): what is at x at time t is at x + U·dt at t + dt
    np.testing.assert_allclose(wind_field(w, x + w.velocity * 0.7, 1.0), a, atol=1e-9)
    # it varies across a cloth: points half a gust apart are barely correlated
    near = wind_field(w, x + np.array([0.0, 0.0, 0.02]), 0.3) - w.velocity
    far = wind_field(w, x + np.array([0.0, 0.0, 0.5]), 0.3) - w.velocity
    def corr(b):
        return (gust * b).sum() / np.sqrt((gust ** 2).sum() * (b ** 2).sum())

    assert corr(near) > 0.95
    assert abs(corr(far)) < 0.5
    # incompressible: every mode's direction is normal to its wavevector (zero divergence)
    e = 1e-5
    div = sum((wind_field(w, x + e * np.eye(3)[k], 0.3)[:, k]
               - wind_field(w, x - e * np.eye(3)[k], 0.3)[:, k]) / (2 * e) for k in range(3))
    assert np.abs(div).max() < 1e-5
    # and it evolves slowly where the pattern stands still
    w2 = dataclasses.replace(w, velocity=np.zeros(3), turbulence_frequency=1.0)
    assert not np.allclose(wind_field(w2, x, 0.0), wind_field(w2, x, 0.5))
    steady = dataclasses.replace(w, turbulence=0.0)
    np.testing.assert_array_equal(wind_field(steady, x, 3.0), np.broadcast_to(w.velocity, x.shape))


if __name__ == "__main__":  # the figures recorded in docs/solver.md, "Air"
    for m in MODELS:
        t0 = time.perf_counter()
        z = falling_sheet(m, False, 48)
        v_t = (z[-2] - z[-1]) * 24.0
        flat, edge = falling_sheet(m, False, 24), falling_sheet(m, True, 24)
        ratio = (edge[0] - edge[-1]) / (flat[0] - flat[-1])
        x, corner = flag(m)
        rms, std = flag_figures(x, corner)
        print(f"{m}: terminal {v_t:.4f} m/s (ρg/c = {SHEET.area_density * G / SHEET.air_drag:.4f}),"
              f" 1 s drop flat {flat[0] - flat[-1]:.3f} m, edge-on {edge[0] - edge[-1]:.3f} m"
              f" (×{ratio:.2f}), flag plane rms {100 * rms:.2f} cm, corner std {100 * std:.2f} cm"
              f" [{time.perf_counter() - t0:.1f} s]", flush=True)
