"""The Cusick drape test of bench/drape.py: its measurement with known answers, and the cotton
preset inside its published band at the coarse (10 mm) resolution."""

import numpy as np
import pytest

from bench.drape import (BANDS, DISC_RADIUS, SPECIMEN_RADIUS, count_folds, drape_coefficient,
                         radial_profile, run_drape, specimen_mesh)


def _radial_map(pos, f):
    """Move every vertex outside the disc to the (r, z) that f(r) gives, keeping its angle."""
    out = pos.copy()
    r = np.hypot(pos[:, 0], pos[:, 1])
    outer = r > DISC_RADIUS
    new_r, z = f(r[outer])
    out[outer, 0] *= new_r / r[outer]
    out[outer, 1] *= new_r / r[outer]
    out[outer, 2] = z
    return out


def test_flat_specimen_has_dc_100():
    pos, tris, _ = specimen_mesh(0.01)
    assert drape_coefficient(pos, tris, pos) == pytest.approx(100.0, abs=1e-9)
    # against the nominal specimen area (π·0.15²) the polygonal rim loses well under 1 %
    assert drape_coefficient(pos, tris) == pytest.approx(100.0, abs=1.0)


def test_vertical_skirt_has_dc_0():
    """The free ring hanging straight down projects onto the disc edge: no shadow beyond it."""
    pos, tris, _ = specimen_mesh(0.01)
    hung = _radial_map(pos, lambda r: (np.full_like(r, DISC_RADIUS), -(r - DISC_RADIUS)))
    assert drape_coefficient(hung, tris, pos) == pytest.approx(0.0, abs=0.5)


def test_conical_skirt_has_the_annulus_ratio():
    """A ring whose shadow reaches r = 0.12 m: DC = (0.12² − 0.09²) / (0.15² − 0.09²) = 43.75 %."""
    pos, tris, _ = specimen_mesh(0.005)
    cone = _radial_map(pos, lambda r: (DISC_RADIUS + 0.5 * (r - DISC_RADIUS), -0.8 * (r - DISC_RADIUS)))
    expected = 100.0 * (0.12 ** 2 - DISC_RADIUS ** 2) / (SPECIMEN_RADIUS ** 2 - DISC_RADIUS ** 2)
    assert drape_coefficient(cone, tris, pos) == pytest.approx(expected, abs=1.0)


@pytest.mark.parametrize("lobes", [4, 7])
def test_fold_count_of_a_lobed_shadow(lobes):
    th = np.linspace(-np.pi, np.pi, 360, endpoint=False) + np.pi / 360
    profile = 0.12 + 0.01 * np.cos(lobes * th + 0.3)
    n, _ = count_folds(profile)
    assert n == lobes
    # ripples below the 3 mm prominence are not folds
    assert count_folds(0.12 + 0.001 * np.cos(lobes * th))[0] == 0


def test_radial_profile_of_a_flat_specimen_is_its_radius():
    pos, tris, _ = specimen_mesh(0.01)
    prof = radial_profile(pos, tris)
    assert np.all(np.abs(prof - SPECIMEN_RADIUS) < 0.003)


def test_cotton_drapes_inside_its_band():
    """Cotton at the 10 mm resolution settles inside the plain-weave cotton band with folds."""
    from solver import load_preset
    r = run_drape(load_preset("cotton"), 0.01)
    lo, hi, _ = BANDS["cotton"]
    assert r["error"] is None and r["rested"]
    assert lo <= r["dc_percent"] <= hi
    assert r["folds"] >= 3
