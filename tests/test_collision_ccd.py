"""Continuous collision detection and closest points against hand-computed answers.

Every case states its time of impact; the degenerate ones (parallel edges, motion inside the
triangle's plane, a collapsed triangle, a grazing touch) are the cases [Vo2006] §6.1 warns about
(docs/references.md). A randomised test compares against an independent brute-force sweep.
"""

import numpy as np
import pytest

from solver.collision.ccd import EDGE_EDGE, VERTEX_FACE, first_contact, first_contact_time
from solver.collision.closest import point_triangle, segment_segment

TOL = 1e-6
A, B, C = (0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)


def T(*p):
    return tuple(float(v) for v in p)


def vf(p0, a0, b0, c0, p1, a1, b1, c1, tol=TOL):
    return first_contact(VERTEX_FACE, T(*p0), T(*a0), T(*b0), T(*c0), T(*p1), T(*a1), T(*b1),
                         T(*c1), tol)


def ee(p0, q0, r0, s0, p1, q1, r1, s1, tol=TOL):
    return first_contact(EDGE_EDGE, T(*p0), T(*q0), T(*r0), T(*s0), T(*p1), T(*q1), T(*r1),
                         T(*s1), tol)


# ---- closest points ----

@pytest.mark.parametrize("p, d2, w", [
    ((0.2, 0.2, 1.0), 1.0, (0.6, 0.2, 0.2)),     # above the face
    ((-1.0, -1.0, 0.0), 2.0, (1.0, 0.0, 0.0)),   # vertex region a
    ((0.5, -2.0, 0.0), 4.0, (0.5, 0.5, 0.0)),    # edge region ab
    ((1.0, 1.0, 0.0), 0.5, (0.0, 0.5, 0.5)),     # edge region bc
])
def test_point_triangle_regions(p, d2, w):
    got = point_triangle(T(*p), A, B, C)
    assert got[0] == pytest.approx(d2)
    assert got[1:] == pytest.approx(w)


def test_point_triangle_degenerate_triangle_uses_its_edges():
    d2, wa, wb, wc = point_triangle(T(0.5, 1.0, 0.0), A, B, T(2.0, 0.0, 0.0))  # collinear
    assert d2 == pytest.approx(1.0)
    assert wa * 0 + wb * 1 + wc * 2 == pytest.approx(0.5)


def test_segment_segment_crossing_and_parallel():
    d2, s, t = segment_segment(T(-1, 0, 1), T(1, 0, 1), T(0, -1, 0), T(0, 1, 0))
    assert (d2, s, t) == pytest.approx((1.0, 0.5, 0.5))
    d2, s, t = segment_segment(T(0, 0, 1), T(2, 0, 1), T(1, 0, 0), T(3, 0, 0))  # parallel
    assert d2 == pytest.approx(1.0)
    assert 1.0 <= 2 * s <= 2.0  # a point of the overlap x in [1, 2]


# ---- vertex–face ----

def test_vertex_falls_through_static_triangle_at_half_step():
    t, *w, nx, ny, nz = vf((0.2, 0.2, 1), A, B, C, (0.2, 0.2, -1), A, B, C)
    assert t == pytest.approx(0.5, abs=1e-9)
    assert w == pytest.approx([1.0, -0.6, -0.2, -0.2])
    assert (nx, ny, nz) == pytest.approx((0, 0, 1))  # the side the vertex came from


def test_triangle_moving_into_static_vertex():
    # the triangle rises from z = -1 to z = 1; the vertex sits at z = 0.5: t = 0.75
    lo = [(0, 0, -1), (1, 0, -1), (0, 1, -1)]
    hi = [(0, 0, 1), (1, 0, 1), (0, 1, 1)]
    t, *_, nz = vf((0.2, 0.2, 0.5), *lo, (0.2, 0.2, 0.5), *hi)
    assert t == pytest.approx(0.75, abs=1e-9)
    assert nz == pytest.approx(1.0)


def test_rotating_triangle_and_moving_vertex_meet_at_the_cubic_root():
    # c rises (0,1,-1) -> (0,1,1) (the plane turns about the x-axis) while p drops
    # (0.2,0.5,1) -> (0.2,0.5,-1): coplanar when 1 - 2t = 0.5·(2t - 1), i.e. t = 0.5
    t = vf((0.2, 0.5, 1), A, B, (0, 1, -1), (0.2, 0.5, -1), A, B, (0, 1, 1))[0]
    assert t == pytest.approx(0.5, abs=1e-9)


def test_grazing_touch_at_a_double_root():
    # f(t) = 1/8 + 2t² - 3t + 1 touches zero only at t = 3/4 (no sign change)
    t = vf((0.1, 1, 0.125), A, B, (0, 1, -1), (0.1, 0, 0.125), A, B, (0, 1, 1))[0]
    assert t == pytest.approx(0.75, abs=1e-3)


def test_near_misses_do_not_collide():
    assert vf((2, 2, 1), A, B, C, (2, 2, -1), A, B, C)[0] < 0           # beside the triangle
    assert vf((0.2, 0.2, 1), A, B, C, (0.2, 0.2, 0.1), A, B, C)[0] < 0  # stops short
    assert vf((0.2, 0.2, 1), A, B, C, (0.9, 0.9, 1), A, B, C)[0] < 0    # parallel above


def test_vertex_sliding_inside_the_plane_is_caught_at_the_edge():
    # coplanar the whole step: the cubic vanishes identically; the vertex reaches the edge x = 0
    # (within TOL) at t = 0.5
    t, *w, nx, ny, nz = vf((-1, 0.2, 0), A, B, C, (1, 0.2, 0), A, B, C)
    assert t == pytest.approx(0.5 - TOL / 2, abs=1e-6)
    assert (nx, ny, nz) == pytest.approx((-1, 0, 0))  # separates it in-plane, back where it was


def test_collapsed_triangle_is_a_segment():
    # a zero-area triangle along the x-axis; a vertex crossing that segment at t = 0.25
    t = vf((0.5, 0, 0.5), A, B, (2, 0, 0), (0.5, 0, -1.5), A, B, (2, 0, 0))[0]
    assert t == pytest.approx(0.25, abs=1e-5)


def test_touching_at_the_start_reports_time_zero():
    assert vf((0.2, 0.2, 0), A, B, C, (0.2, 0.2, 1), A, B, C)[0] == 0.0


# ---- edge–edge ----

def test_crossing_edges():
    t, w0, w1, w2, w3, nx, ny, nz = ee((-1, 0, 1), (1, 0, 1), (0, -1, 0), (0, 1, 0),
                                       (-1, 0, -1), (1, 0, -1), (0, -1, 0), (0, 1, 0))
    assert t == pytest.approx(0.5, abs=1e-9)
    assert (w0, w1, w2, w3) == pytest.approx((0.5, 0.5, -0.5, -0.5))
    assert (nx, ny, nz) == pytest.approx((0, 0, 1))


def test_skew_edges_that_pass_each_other_do_not_collide():
    # the moving edge passes beyond the end of the static one
    assert ee((2, -1, 1), (2, 1, 1), (-1, 0, 0), (1, 0, 0),
              (2, -1, -1), (2, 1, -1), (-1, 0, 0), (1, 0, 0))[0] < 0


def test_parallel_edges_meet_when_their_distance_reaches_the_tolerance():
    # the edges stay parallel (cross product zero throughout): the degenerate path
    t, *_, nz = ee((0, 0, 1), (1, 0, 1), (0, 0, 0), (1, 0, 0),
                   (0, 0, -1), (1, 0, -1), (0, 0, 0), (1, 0, 0))
    assert t == pytest.approx(0.5 - TOL / 2, abs=1e-6)
    assert nz == pytest.approx(1.0)


def test_coplanar_edges_crossing_in_their_plane():
    # both edges in z = 0; the moving one sweeps across x = 0 at t = 0.5
    t = ee((-1, -0.5, 0), (-1, 0.5, 0), (0, -1, 0), (0, 1, 0),
           (1, -0.5, 0), (1, 0.5, 0), (0, -1, 0), (0, 1, 0))[0]
    assert t == pytest.approx(0.5 - TOL / 2, abs=1e-6)


def test_parallel_edges_side_by_side_never_touch():
    assert ee((0, 1, 0), (1, 1, 0), (0, 0, 0), (1, 0, 0),
              (0, 1, 0), (1, 1, 0), (0, 0, 0), (1, 0, 0))[0] < 0


# ---- against an independent brute-force sweep ----

def _brute_vertex_face(x0, x1, steps=20000):
    """First sign change of the signed plane distance at which the vertex lies inside the
    triangle, found by dense sampling and linear interpolation (independent of ccd.py)."""
    ts = np.linspace(0.0, 1.0, steps + 1)
    x = x0[None] + ts[:, None, None] * (x1 - x0)[None]
    p, a, b, c = x[:, 0], x[:, 1], x[:, 2], x[:, 3]
    n = np.cross(b - a, c - a)
    f = np.einsum("ij,ij->i", n, p - a)
    for k in np.nonzero(np.sign(f[:-1]) * np.sign(f[1:]) <= 0)[0]:
        t = ts[k] + (ts[k + 1] - ts[k]) * f[k] / (f[k] - f[k + 1]) if f[k] != f[k + 1] else ts[k]
        xt = x0 + t * (x1 - x0)
        pp, aa, bb, cc = xt
        m = np.array([bb - aa, cc - aa]).T
        uv, *_ = np.linalg.lstsq(m, pp - aa, rcond=None)
        if uv.min() >= -1e-9 and uv.sum() <= 1 + 1e-9:
            return t
    return -1.0


def test_random_vertex_face_against_brute_force():
    rng = np.random.default_rng(1)
    agree = hits = 0
    for _ in range(300):
        x0 = rng.normal(size=(4, 3))
        x1 = x0 + rng.normal(scale=1.5, size=(4, 3))
        expect = _brute_vertex_face(x0, x1)
        got = first_contact_time(VERTEX_FACE, *map(tuple, x0), *map(tuple, x1), 1e-9)
        hits += expect >= 0
        if expect < 0:
            agree += got < 0
        else:
            agree += abs(got - expect) < 1e-3
    assert hits >= 10  # the sample exercises collisions, not only misses
    assert agree == 300


def test_the_narrow_phase_distance_bound_never_exceeds_the_distance():
    """The bounding-sphere bound that lets the narrow phase skip far feature pairs is a lower
    bound of the exact distance, and a tight one for a vertex far from a small face."""
    from solver.collision.narrow_phase import _distance_lower_bound

    rng = np.random.default_rng(11)
    for _ in range(2000):
        p = [T(*v) for v in rng.normal(scale=rng.choice([0.01, 1.0]), size=(4, 3))]
        d_vf = np.sqrt(point_triangle(*p)[0])
        d_ee = np.sqrt(segment_segment(*p)[0])
        assert _distance_lower_bound(VERTEX_FACE, *p) <= d_vf + 1e-12
        assert _distance_lower_bound(EDGE_EDGE, *p) <= d_ee + 1e-12
    far = _distance_lower_bound(VERTEX_FACE, T(0, 0, 10), A, T(0.01, 0, 0), T(0, 0.01, 0))
    assert 9.98 < far <= 10.0


# ---- the narrow phase over a whole mesh ----

def _crumpled_sheet(rng, n=6, size=0.1, jitter=0.004, motion=0.03):
    """A small n x n sheet jittered out of its plane, and a random end of a step."""
    from solver.mesh import grid_mesh
    from solver.topology import canonical_triangles

    mesh = grid_mesh((size, size), (n, n), (0.0, 0.0, 0.0))
    x0 = mesh.positions + rng.normal(scale=jitter, size=mesh.positions.shape)
    x1 = x0 + rng.normal(scale=motion, size=x0.shape)
    return canonical_triangles(mesh), x0, x1


def _feature_key(ids):
    """A feature pair's four point indices with its two halves in sorted order: the narrow phase
    lists an edge pair in the order of the triangles that own the edges."""
    a, b, c, d = map(int, ids)
    return tuple(sorted([(a, b), (c, d)]))


def _all_pairs(triangle_count):
    """Every unordered pair of distinct triangles, (P, 2)."""
    a, b = np.triu_indices(triangle_count, k=1)
    return np.stack([a, b], axis=1).astype(np.int64)


def _tester(tris, count, gap):
    from solver.collision.features import mesh_features
    from solver.collision.narrow_phase import PairTester

    f = mesh_features(tris, count)
    tester = PairTester(f.tris, f.own_vertices, f.own_edges, f.edges,
                        np.full(count, -1, np.int64), gap, 0.3, np.zeros(0), np.zeros(0))
    return f, tester


def test_the_narrow_phase_finds_every_feature_pair_that_touches():
    """Over every pair of a crumpled sheet's triangles, the continuous pass reports exactly the
    vertex–face and edge–edge pairs (sharing no vertex) that a plain loop over all feature
    pairs finds touching and ending too close: its box and distance filters drop none."""
    from solver.collision.narrow_phase import CONTINUOUS, ccd_tolerance

    rng = np.random.default_rng(5)
    gap = 0.003
    tol = float(ccd_tolerance(gap))
    found_any = 0
    for _ in range(3):
        tris, x0, x1 = _crumpled_sheet(rng)
        f, tester = _tester(tris, len(x0), gap)
        idx, _ = tester.run(CONTINUOUS, _all_pairs(len(f.tris)), x0, x1, np.ones(len(x0)))
        got = {_feature_key(i) for i in idx}
        assert len(got) == len(idx)  # each feature pair once
        expect = set()
        candidates = [(VERTEX_FACE, (v, *t)) for v in range(len(x0)) for t in f.tris
                      if v not in t]
        candidates += [(EDGE_EDGE, (*e, *g)) for k, e in enumerate(f.edges)
                       for g in f.edges[k + 1:] if not set(e) & set(g)]
        for kind, ids in candidates:
            p0 = [tuple(x0[i]) for i in ids]
            p1 = [tuple(x1[i]) for i in ids]
            t, *w, nx, ny, nz = first_contact(kind, *p0, *p1, tol)
            if t >= 0.0 and np.array([nx, ny, nz]) @ (np.asarray(w) @ x1[list(ids)]) < 2 * tol:
                expect.add(_feature_key(ids))
        assert got == expect
        found_any += len(got)
    assert found_any > 10  # the sample exercises collisions


def _flagged_sheet(seed, share):
    """A crumpled 8 x 8 sheet's tester, all its triangle pairs, its path x0 -> x1, unit inverse
    masses and flags on a random share of its points."""
    rng = np.random.default_rng(seed)
    tris, x0, x1 = _crumpled_sheet(rng, n=8)
    f, tester = _tester(tris, len(x0), 0.003)
    flags = (rng.random(len(x0)) < share).astype(np.uint8)
    return tester, _all_pairs(len(f.tris)), x0, x1, np.ones(len(x0)), flags


def test_the_proximity_pass_reports_the_continuous_collisions_of_the_same_path():
    """run_with_collisions (one pass) returns what the proximity and the continuous passes
    return separately, with and without flagged points."""
    from solver.collision.narrow_phase import CONTINUOUS, REPULSION

    tester, pairs, x0, x1, im, flags = _flagged_sheet(seed=8, share=0.2)
    for moved in (None, flags):
        contacts, collisions = tester.run_with_collisions(pairs, x0, x1, im, moved)
        for got, mode in ((contacts, REPULSION), (collisions, CONTINUOUS)):
            idx, rec = tester.run(mode, pairs, x0, x1, im, moved)
            assert len(idx) > 0
            np.testing.assert_array_equal(got[0], idx)
            np.testing.assert_allclose(got[1], rec, rtol=0, atol=1e-15)


def test_a_flagged_pass_finds_what_the_full_pass_finds_at_the_flagged_points():
    """With points flagged, the proximity and continuous passes report exactly the records of
    the full pass whose feature pair has a flagged point: the flagged pass computes only its
    kept pairs' boxes, and those must be the boxes the full pass uses."""
    from solver.collision.narrow_phase import CONTINUOUS, REPULSION

    tester, pairs, x0, x1, im, flags = _flagged_sheet(seed=9, share=0.1)
    for mode in (REPULSION, CONTINUOUS):
        idx, rec = tester.run(mode, pairs, x0, x1, im, flags)  # first: no boxes left over
        full_idx, full_rec = tester.run(mode, pairs, x0, x1, im)
        keep = flags[full_idx].any(axis=1)
        assert 0 < len(idx) == keep.sum() < len(full_idx)
        got = {_feature_key(i): r for i, r in zip(idx, rec)}
        expect = {_feature_key(i): r for i, r in zip(full_idx[keep], full_rec[keep])}
        assert got.keys() == expect.keys()
        for key, r in got.items():
            np.testing.assert_array_equal(r, expect[key])


def test_the_contact_prediction_pass_pairs_cloth_vertices_with_collider_faces_only():
    """NEARBY (the implicit solve's contact prediction) reports every cloth vertex against every
    collider face whose path boxes come within the contact distance, and nothing else: no
    collider vertex against a cloth face, no edge pair (the prediction would drop them)."""
    from solver.collision.features import mesh_features
    from solver.collision.narrow_phase import NEARBY, PairTester

    rng = np.random.default_rng(11)
    gap = 0.004
    cloth, x0, x1 = _crumpled_sheet(rng, n=5, jitter=0.002, motion=0.01)
    body, y0, _ = _crumpled_sheet(rng, n=5, jitter=0.002, motion=0.0)
    V, T = len(x0), len(cloth)
    y0 = y0 + [0.004, 0.003, -0.003]
    tris = np.concatenate([cloth, body + V])
    P0, P1 = np.concatenate([x0, y0]), np.concatenate([x1, y0])
    f = mesh_features(tris, len(P0))
    group = np.repeat([-1, 0], [V, len(y0)])
    tester = PairTester(f.tris, f.own_vertices, f.own_edges, f.edges, group, 0.001, 0.3,
                        np.array([gap]), np.array([0.3]))
    a, b = np.meshgrid(np.arange(T), np.arange(T, len(tris)), indexing="ij")
    pairs = np.stack([a.ravel(), b.ravel()], axis=1).astype(np.int64)
    idx, rec = tester.run(NEARBY, pairs, P0, P1, np.concatenate([np.ones(V), np.zeros(len(y0))]))
    lo, hi = np.minimum(P0, P1), np.maximum(P0, P1)
    expect = {(v, *map(int, t)) for v in range(V) for t in body + V
              if np.all(lo[v] <= hi[t].max(axis=0) + gap) and np.all(lo[t].min(axis=0)
                                                                     <= hi[v] + gap)}
    assert {tuple(map(int, i)) for i in idx} == expect
    assert len(expect) > 20
    assert len(idx) == len(expect)


def test_closest_record_per_vertex_and_collider_matches_a_stable_sort():
    """The contact prediction keeps, per cloth vertex and collider, the face closest at the
    start: the one-pass kernel picks what a stable sort by (vertex, collider, distance) keeping
    each pair's first record picks, ties included."""
    from solver.collision.narrow_phase import closest_per_vertex

    rng = np.random.default_rng(3)
    vertex = rng.integers(0, 40, 500)
    group = rng.integers(0, 3, 500)
    d0 = rng.integers(0, 6, 500) * 1e-3  # many ties
    order = np.lexsort((d0, group, vertex))
    first = np.ones(len(order), bool)
    first[1:] = (vertex[order[1:]] != vertex[order[:-1]]) | (group[order[1:]]
                                                              != group[order[:-1]])
    np.testing.assert_array_equal(closest_per_vertex(vertex, group, d0, 40, 3), order[first])
    assert len(closest_per_vertex(vertex[:0], group[:0], d0[:0], 40, 3)) == 0


@pytest.mark.parametrize("seed", [21, 22])
def test_the_candidate_pairs_lose_no_contact_or_collision_of_all_triangle_pairs(seed):
    """The bounding-box tree's candidate triangle pairs (boxes grown by SLACK, reused while the
    path's end moves less than that) give the same proximity contacts and continuous collisions
    as testing every pair of triangles, record for record, on a crumpled, moving sheet; and so
    does a second call whose end moved by less than SLACK (it reuses the pairs)."""
    from collections import Counter

    from solver import ClothSetup, MaterialParams, PolyMesh
    from solver.collision.narrow_phase import CONTINUOUS, REPULSION
    from solver.collision.pipeline import SLACK, CollisionHandler
    from solver.model import build_model

    rng = np.random.default_rng(seed)
    tris, x0, x1 = _crumpled_sheet(rng, n=9, size=0.06, jitter=0.003, motion=0.006)
    mesh = PolyMesh(x0, tris.reshape(-1), np.arange(0, 3 * len(tris) + 1, 3))
    model = build_model(ClothSetup(mesh, MaterialParams(thickness=0.004)))
    handler = CollisionHandler(model, (), True, 24.0, 1)
    h = 1.0 / 24.0
    im = np.ones(len(x0))
    pairs = _all_pairs(len(model.triangles))

    def keyed(found):
        return {_feature_key(i): (tuple(i), r) for i, r in zip(*found)}

    total = 0
    cached = []
    for end in (x1, x1 + rng.uniform(-0.4 * SLACK, 0.4 * SLACK, x1.shape)):
        U = (end - x0) / h
        got = handler._detect(REPULSION, x0, U, im, h, with_collisions=True)
        want = handler.tester.run_with_collisions(pairs, x0, end, im)
        for g, w in zip(got, want):
            # a vertex–face and an edge–edge pair on the same four points share a key
            count = Counter(map(_feature_key, g[0]))
            assert count == Counter(map(_feature_key, w[0]))
            mine, theirs = keyed(g), keyed(w)
            for key, (ids, r) in mine.items():
                if count[key] == 1:
                    if ids != theirs[key][0]:  # an edge pair listed the other way round
                        r = np.concatenate([-r[[2, 3, 0, 1]], -r[4:7], r[7:]])
                    # (the same record up to rounding, computed from the other side)
                    np.testing.assert_allclose(r, theirs[key][1], rtol=0, atol=1e-12)
            total += len(g[0])
        got = handler._detect(CONTINUOUS, x0, U, im, h)
        assert Counter(map(_feature_key, got[0])) == Counter(
            map(_feature_key, handler.tester.run(CONTINUOUS, pairs, x0, end, im)[0]))
        cached.append(handler._pair_cache[3])  # (the cloth's own pairs: no collider)
    assert cached[0] is cached[1]  # the second end reused the first one's pairs
    assert len(cached[0]) < len(pairs) / 2 and total > 50  # a real cull, and real contacts


def test_the_contact_prediction_finds_per_vertex_what_the_triangle_pairs_find():
    """The implicit solve's contact prediction queries the collider tree once per cloth vertex
    (CollisionHandler._nearby_collider_faces) instead of pairing cloth and collider triangles;
    it gives the NEARBY records of the triangle-pair pass bit for bit, each vertex's in the same
    order (the order decides ties between a vertex's closest faces), on a crumpled sheet over
    two spheres of different contact distances that move during the step, with pinned
    vertices; again for a second path from the same start (the repeated prediction of a step,
    which keeps the collider tree's boxes) and for colliders that moved on."""
    from solver import ClothSetup, Collider, MaterialParams, PolyMesh
    from solver.collision.narrow_phase import NEARBY
    from solver.collision.pipeline import CollisionHandler
    from solver.model import build_model
    from bodies import uv_sphere

    rng = np.random.default_rng(5)
    tris, x0, _ = _crumpled_sheet(rng, n=17, size=0.5, jitter=0.004)
    x0 = x0 + [0.0, 0.0, 0.2]
    mesh = PolyMesh(x0, tris.reshape(-1), np.arange(0, 3 * len(tris) + 1, 3))
    model = build_model(ClothSetup(mesh, MaterialParams(thickness=0.004)))
    spheres = (Collider("mesh", mesh=uv_sphere(0.2, (-0.1, 0.0, 0.0)), thickness=0.01),
               Collider("mesh", mesh=uv_sphere(0.12, (0.15, 0.05, 0.07)), thickness=0.002))
    handler = CollisionHandler(model, spheres, False, 24.0, 1)
    V, h = len(x0), 1.0 / 24.0
    X0 = handler.colliders.state(0).mesh_positions
    im = np.concatenate([np.ones(V), np.zeros(len(X0))])
    im[:V:7] = 0.0  # pinned

    def by_vertex(found):
        idx, rec = found
        order = np.argsort(idx[:, 0], kind="stable")
        return idx[order], rec[order]

    total = 0
    for shift, cloth_motion in (((0.0, 0.0, 0.03), 0.4), ((0.0, 0.0, 0.03), 0.6),
                                ((0.02, -0.01, 0.05), 0.5)):
        P0 = np.concatenate([x0, X0])
        U = np.concatenate([rng.normal(scale=cloth_motion, size=x0.shape) - [0.0, 0.0, 1.5],
                            np.tile(np.array(shift) / h, (len(X0), 1))])
        handler._pair_cache = None
        want = by_vertex(handler._detect(NEARBY, P0, U, im, h, with_self=False))
        got = by_vertex(handler._nearby_collider_faces(P0, P0 + h * U, im))
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1].tobytes() == want[1].tobytes()
        # more than one face per vertex, against both spheres
        assert len(np.unique(got[0][:, 0])) < len(got[0])
        assert len(np.unique(handler.group[got[0][:, 1]])) == 2
        total += len(got[0])
        X0 = X0 + shift
    assert total > 500
