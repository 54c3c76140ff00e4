"""The garment assets of examples/garments/ (scripts/make_garments.py) and the scenes built on
them (tests/garments.py) are what they claim to be."""

from __future__ import annotations

import numpy as np
import pytest

import garments
from solver.collision.pipeline import CollisionHandler
from solver.model import build_model
from solver.topology import unique_edges


def _border_loops(tris: np.ndarray) -> int:
    sides = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    edges, inverse = unique_edges(sides)
    border = edges[np.bincount(inverse.ravel(), minlength=len(edges)) == 1]
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    verts = np.unique(border)
    index = np.searchsorted(verts, border)
    graph = coo_matrix((np.ones(len(index)), (index[:, 0], index[:, 1])),
                       shape=(len(verts), len(verts)))
    return connected_components(graph, directed=False)[0]


def _report(spec):
    model = build_model(spec.cloth)
    handler = CollisionHandler(model, spec.colliders, True, spec.fps, spec.frames)
    return handler.report(model.rest_positions, handler.colliders.state(0))


def test_the_panels_seams_join_the_same_outline_points_of_front_and_back():
    mesh, seams = garments.panels()
    x = mesh.positions
    assert len(seams) > 30
    np.testing.assert_allclose(x[seams[:, 0]][:, [0, 2]], x[seams[:, 1]][:, [0, 2]], atol=1e-9)
    assert np.all(x[seams[:, 0], 1] < 0) and np.all(x[seams[:, 1], 1] > 0)


def test_the_body_parts_are_closed_and_face_outwards():
    for name, mesh in garments.body_parts().items():
        tris = np.array(mesh.faces())
        sides = np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), 1)
        _, uses = np.unique(sides, axis=0, return_counts=True)
        assert np.all(uses == 2), name
        p = mesh.positions
        volume = np.einsum("ij,ij->i", p[tris[:, 0]],
                           np.cross(p[tris[:, 1]], p[tris[:, 2]])).sum() / 6
        assert volume > 0, name


@pytest.mark.parametrize("name", ["tee", "tee_6k"])
def test_the_tee_is_one_sheet_open_at_hem_neckline_and_cuffs(name):
    tris = np.array(garments.garment(name).faces())
    assert _border_loops(tris) == 4


def test_the_worn_tee_starts_clean_on_its_body_and_the_posed_one_through_it():
    worn = _report(garments.scene("worn", frames=2))
    assert worn.self_intersections == 0 and worn.collider_crossings == 0
    assert worn.deepest_penetration_m == 0.0
    posed = _report(garments.scene("posed", frames=2))
    assert posed.collider_crossings > 0 and posed.deepest_penetration_m > 0.005
    # the posed scene's clean start: worn's start, posed's last pose
    raised = garments.scene("raised", frames=2)
    assert _report(raised).collider_crossings == 0 and _report(raised).deepest_penetration_m == 0
    last = [c.positions[-1] for c in raised.colliders]
    for c, p in zip(garments.scene("posed", frames=2).colliders, last):
        np.testing.assert_allclose(c.positions[-1], p, atol=1e-12)


def test_the_body_turns_and_lifts_its_arms_level():
    turns, lifts = garments.body_motion(24)
    assert turns[0] == 0 and lifts[0] == 0
    R, t = garments.body_pose("arm_r", 0.0, garments.ARM_DOWN)
    hand = R @ (garments.SHOULDER + [np.cos(garments.ARM_DOWN), 0, -np.sin(garments.ARM_DOWN)]) + t
    np.testing.assert_allclose(hand[2], garments.SHOULDER[2], atol=1e-12)  # level
    assert np.isclose(turns[-1], garments.TURN) and np.isclose(lifts[-1], garments.LIFT)
