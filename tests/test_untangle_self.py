"""Cloth that starts passed through itself (solver/collision/self_untangle.py): a strip whose
end is folded back over it and through its middle, and two sheets of one cloth crossing each
other, reach zero intersecting triangle pairs before frame 1 and stay there (the strip for the
implicit and the mass-spring model); a cloth that starts clean reports no tangled pairs."""

import numpy as np
import pytest
from scipy.interpolate import griddata

from solver import (ClothSetup, Collider, PolyMesh, SimulationSpec, SolverSettings, grid_mesh,
                    load_preset)
from solver.simulation import Simulation

# the strip's centre line in the xz plane [m]: flat, up a 2 cm fold, back over itself, and
# down through the flat part (it crosses z = 0 at x = 7.5 cm and ends 2 cm below)
PATH = np.array([[0.0, 0.0], [0.2, 0.0], [0.2, 0.02], [0.1, 0.02], [0.05, -0.02]])


def _folded_strip(spacing: float) -> PolyMesh:
    """A 10 cm wide strip laid along PATH with edges of about ``spacing`` [m] (lengths kept:
    each column of the grid is a point of the path)."""
    seg = np.linalg.norm(np.diff(PATH, axis=0), axis=1)
    arc = np.concatenate([[0.0], np.cumsum(seg)])
    nu = int(np.ceil(arc[-1] / spacing)) + 1
    g = grid_mesh((arc[-1], 0.1), (nu, round(0.1 / spacing) + 1), (0.0, 0.0, 0.0))
    s = g.positions[:, 0] - g.positions[:, 0].min()
    pos = g.positions.copy()
    pos[:, 0] = np.interp(s, arc, PATH[:, 0])
    pos[:, 2] = np.interp(s, arc, PATH[:, 1])
    return PolyMesh(pos, g.face_indices, g.face_offsets)


def _run(mesh, model, frames):
    spec = SimulationSpec(ClothSetup(mesh, load_preset("cotton")),
                          SolverSettings(model=model, self_collision=True), frames=frames)
    sim = Simulation(spec)
    start = sim.solver.collisions.report(sim.solver.x, sim.solver.collisions.colliders
                                         .frame(1).start).self_intersections
    return start, sim.run()


# the mass-spring model's short steps (about 1000 a frame at 1 cm edges, each with the
# self-collision pipeline) cost 15-35 s a frame at 1 cm: it gets a coarser strip
@pytest.mark.parametrize(("model", "spacing", "frames"), [("implicit", 0.01, 8),
                                                          ("mass_spring", 0.02, 4)])
def test_a_strip_folded_through_itself_is_untangled_and_stays_so(model, spacing, frames):
    """Without the untangling the 1 cm strip keeps all its 48 pairs every frame (the impact
    zones freeze the crossing: the implicit strip does not even fall)."""
    mesh = _folded_strip(spacing)
    start, r = _run(mesh, model, frames)
    assert r.error is None
    assert start > 0.2 / spacing  # the tip's crossing row: 48 pairs at 1 cm
    per_frame = [f.self_intersections for f in r.frames]
    assert r.frames[0].tangled_pairs == start
    # untangled in the rounds before frame 1 (2-4 of UNTANGLE_ROUNDS), and never tangled again
    assert per_frame == [0] * frames, per_frame
    assert [f.tangled_pairs for f in r.frames[1:]] == [0] * (frames - 1)
    # the tip's corner (x = 5 cm, y = 5 cm) came back above the flat part's vertex under it
    x0 = mesh.positions
    flat = np.flatnonzero((x0[:, 2] == 0.0) & (x0[:, 1] == x0[-1, 1]))
    below = flat[np.argmin(np.abs(x0[flat, 0] - x0[-1, 0]))]
    tip, under = r.positions[1:, -1, 2], r.positions[1:, below, 2]
    assert np.all(tip > under), (tip, under)
    assert max(f.max_strain for f in r.frames) < 0.1


def test_a_cloth_that_starts_clean_is_not_moved():
    g = grid_mesh((0.2, 0.2), (9, 9), (0.0, 0.0, 0.0))
    start, r = _run(g, "implicit", 3)
    assert start == 0
    assert all(f.tangled_pairs == 0 for f in r.frames)


def test_two_pieces_crossing_each_other_end_in_layers():
    """Two 20 cm sheets of one cloth, one tilted 25° through the other 4 cm off its centre
    (48 pairs along a contour from edge to edge of both): the 6 cm of the tilted sheet above
    the flat one, the smallest region the contour cuts off, goes back under it before frame 1,
    and the two fall onto a floor as layers without crossing again."""
    flat = grid_mesh((0.2, 0.2), (11, 11), (0.0, 0.0, 0.0))
    g = grid_mesh((0.2, 0.2), (11, 11), (0.0, 0.0, 0.0))
    p = g.positions.copy()
    u, a = p[:, 0] - 0.04, np.radians(25.0)
    p[:, 0], p[:, 2] = u * np.cos(a) + 0.003, u * np.sin(a) + 0.0013  # off the grid's nodes
    floor = Collider("plane", point=np.array([0.0, 0.0, -0.2]), normal=np.array([0.0, 0.0, 1.0]))
    cotton = load_preset("cotton")
    spec = SimulationSpec((ClothSetup(flat, cotton),
                           ClothSetup(PolyMesh(p, g.face_indices, g.face_offsets), cotton)),
                          SolverSettings(model="implicit", self_collision=True), frames=10,
                          colliders=(floor,))
    r = Simulation(spec).run()
    assert r.error is None
    assert r.frames[0].tangled_pairs > 40
    assert [f.self_intersections for f in r.frames] == [0] * 10
    assert [f.tangled_pairs for f in r.frames[1:]] == [0] * 9
    # after frame 1, every point of the tilted sheet within the flat one's footprint lies
    # under the flat sheet at the same x, y (both sag as they fall: compare locally)
    top, tilted = r.positions[1, :121], r.positions[1, 121:]
    under = (np.abs(tilted[:, 0]) < 0.09) & (np.abs(tilted[:, 1]) < 0.09)
    above = griddata(top[:, :2], top[:, 2], tilted[under, :2], method="linear")
    assert under.sum() > 75 and np.isfinite(above).all()  # of the 81 that start there
    assert (tilted[under, 2] < above).all()
