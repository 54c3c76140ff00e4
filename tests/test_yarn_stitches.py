"""The stitch generator (solver/yarn/stitches.py): counts, dimensions, patterns, clearance."""

import numpy as np
import pytest

from solver.yarn.contact import clearance
from solver.yarn.rods import Segments
from solver.yarn.stitches import PATTERN_REPEATS, PATTERNS, knit_swatch, parse_repeat, purl_mask

R = 1.25e-3          # Kaldor's wool worsted radius [m]
W, H = 5.6e-3, 4.2e-3  # worsted gauge: 18 stitches and 24 courses per 10 cm
# Smallest distance between non-neighbouring segments in a generated layout, in diameters.
LAYOUT_CLEARANCE = 0.2


@pytest.mark.parametrize("pattern", PATTERNS)
def test_layout_has_the_stitch_counts_and_the_gauge(pattern):
    sw = knit_swatch(pattern, 8, 6, W, H, R, points_per_stitch=12, edges=False)
    x = sw.positions
    assert sw.purl.shape == (6, 8)
    assert list(sw.yarn_offsets) == [0, len(x)]          # one continuous yarn
    assert len(sw.course_points) == 7
    # each course: 8 loops × 12 points + its closing sinker (+ 5 half-loop points but the last)
    sizes = np.diff(sw.course_points)
    assert list(sizes) == [8 * 12 + 1 + 5] * 5 + [8 * 12 + 1]
    # heads: one local maximum of y per loop and course, spaced one stitch width apart
    for j in range(6):
        c = x[sw.course_points[j]:sw.course_points[j] + 8 * 12 + 1]
        y = c[:, 1]
        peaks = np.nonzero((y[1:-1] > y[:-2]) & (y[1:-1] >= y[2:]))[0] + 1
        assert len(peaks) == 8
        assert np.allclose(np.sort(np.diff(np.sort(c[peaks, 0]))), W)
        assert np.allclose(y[peaks], j * H + H / 1.4)
    # the swatch is stitches × w wide (within the course) and courses × H tall, head to sinker
    inside = (x[:, 0] >= 0) & (x[:, 0] <= 8 * W)
    assert x[inside, 0].min() == pytest.approx(0.0, abs=1e-12)
    assert x[inside, 0].max() == pytest.approx(8 * W)
    assert x[:, 1].max() - x[:, 1].min() == pytest.approx(5 * H + 2 * H / 1.4)
    assert np.abs(x[:, 2]).max() <= 1.3 * R + 1e-12


def test_patterns_are_the_named_ones():
    assert not purl_mask("stockinette", 8, 4).any()
    g = purl_mask("garter", 8, 4)
    assert (g[1::2]).all() and not g[0::2].any()
    rib = purl_mask("rib2x2", 8, 4)
    # rib is built from alternating knit and purl column pairs: k2 p2 in every course
    assert (rib == np.array([False, False, True, True] * 2)).all()
    seed = purl_mask("seed", 4, 3)
    assert (seed[:, 1:] != seed[:, :-1]).all() and (seed[1:] != seed[:-1]).all()
    with pytest.raises(ValueError):
        purl_mask("cable", 4, 4)


def test_repeats_are_read_as_knit_and_purl_counts_course_by_course():
    for name, repeat in PATTERN_REPEATS.items():      # the named patterns are repeats too
        assert np.array_equal(purl_mask(name, 9, 5), purl_mask(repeat, 9, 5))
    k3p1 = purl_mask("k3p1", 10, 3)
    assert np.array_equal(k3p1[0], [False, False, False, True] * 2 + [False, False])
    assert (k3p1 == k3p1[0]).all()
    # "/" starts the next course up; counts of 1 may be left out; case, spaces, commas ignored
    assert np.array_equal(purl_mask("K1, P1 / p k", 4, 4), purl_mask("seed", 4, 4))
    two = purl_mask("k2p1/p3", 6, 4)
    assert np.array_equal(two[0], [False, False, True] * 2) and two[1].all()
    assert np.array_equal(two[2], two[0]) and two[3].all()
    assert [r.tolist() for r in parse_repeat("k2p12")] == [[False] * 2 + [True] * 12]


@pytest.mark.parametrize("text, problem", [
    ("k2x2", "'x' is neither k"), ("k0p2", "a count of 0"), ("", "course 1 .* is empty"),
    ("k2/", "course 2 .* is empty"), ("2k", "'2' is neither"), ("k1000", "more than 999"),
    ("cable", "'c' is neither")])
def test_bad_repeats_are_refused_naming_the_problem(text, problem):
    with pytest.raises(ValueError, match=problem):
        purl_mask(text, 4, 4)
    with pytest.raises(ValueError, match="give one of stockinette, garter, rib2x2, seed or a "
                                         "repeat"):
        knit_swatch(text, 4, 4, W, H, R)


def test_purl_columns_of_the_rib_are_the_knit_columns_mirrored_in_depth():
    sw = knit_swatch("rib2x2", 8, 4, W, H, R)
    # the legs (points at mid-height of their loop) of a knit column stand in front (z > 0),
    # those of a purl column behind
    x = sw.positions
    c = x[sw.course_points[1]:sw.course_points[1] + 8 * 12]
    mid = np.abs(c[:, 1] - 1 * H) < 0.3 * H / 1.4
    col = np.floor(c[:, 0] / W).astype(int)
    knit_cols = (col % 4 < 2) & (col >= 0) & (col < 8)
    purl_cols = (col % 4 >= 2) & (col >= 0) & (col < 8)
    # points near the column borders are blended; look at the columns' cores
    core = np.abs(c[:, 0] / W - col - 0.5) < 0.3
    assert (c[mid & knit_cols & core, 2] > 0).all()
    assert (c[mid & purl_cols & core, 2] < 0).all()
    assert (mid & knit_cols & core).sum() > 4 and (mid & purl_cols & core).sum() > 4


@pytest.mark.parametrize("pattern", PATTERNS + ("k3p1", "k1p3/k1p3/p1k3", "k/k/p/p"))
@pytest.mark.parametrize("gauge", [(W, H), (5.0e-3, 4.0e-3)])
def test_no_two_non_neighbouring_segments_are_closer_than_a_fifth_of_a_diameter(pattern, gauge):
    sw = knit_swatch(pattern, 8, 6, gauge[0], gauge[1], R)
    s = Segments.of(sw.yarn_offsets, sw.positions)
    gap = clearance(sw.positions, s.seg, s.rest, s.yarn, s.arc, R)
    assert gap >= LAYOUT_CLEARANCE * 2 * R


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        knit_swatch("stockinette", 0, 3, W, H, R)
    with pytest.raises(ValueError):
        knit_swatch("stockinette", 3, 3, W, -H, R)
    with pytest.raises(ValueError):
        knit_swatch("stockinette", 3, 3, W, H, R, points_per_stitch=4)


def test_the_yarn_ends_are_glued_to_the_next_course_and_loops_are_numbered():
    sw = knit_swatch("garter", 5, 4, W, H, R, edges=False)
    assert sw.ties.shape == (2, 2)
    (a, b), (c, d) = sw.ties
    assert a == 0 and sw.course_points[1] <= b < sw.course_points[2]
    assert c == len(sw.positions) - 1 and sw.course_points[2] <= d < sw.course_points[3]
    assert np.linalg.norm(sw.positions[a] - sw.positions[b]) < W
    assert sw.loops.shape == (len(sw.positions),)
    assert sorted(set(sw.loops)) == list(range(20))
    # a loop's points lie around its own column and course
    for loop in (0, 7, 19):
        j, i = divmod(loop, 5)
        pts = sw.positions[sw.loops == loop]
        assert np.median(pts[:, 0]) == pytest.approx((i + 0.5) * W, abs=0.5 * W)
        assert np.median(pts[:, 1]) == pytest.approx(j * H, abs=0.6 * H)
    assert knit_swatch("seed", 4, 1, W, H, R, edges=False).ties.shape == (0, 2)


def _crossings(x, other, lo, hi):
    """Where the polyline x (N, 3) passes over (+1) or under (−1) the polyline ``other`` seen
    from the face (+z), for crossings of their x–y projections with y in (lo, hi)."""
    out = []
    for a in range(len(x) - 1):
        for b in range(len(other) - 1):
            p, r = x[a, :2], x[a + 1, :2] - x[a, :2]
            q, s = other[b, :2], other[b + 1, :2] - other[b, :2]
            den = r[0] * s[1] - r[1] * s[0]
            if abs(den) < 1e-18:
                continue
            t = ((q - p)[0] * s[1] - (q - p)[1] * s[0]) / den
            u = ((q - p)[0] * r[1] - (q - p)[1] * r[0]) / den
            if 0 <= t < 1 and 0 <= u < 1 and lo < p[1] + t * r[1] < hi:
                za = x[a, 2] + t * (x[a + 1, 2] - x[a, 2])
                zb = other[b, 2] + u * (other[b + 1, 2] - other[b, 2])
                out.append(1 if za > zb else -1)
    return out


@pytest.mark.parametrize("pattern", ["stockinette", "rib2x2", "seed"])
def test_cast_on_and_bind_off_are_yarns_of_their_own_interlooped_with_every_edge_stitch(pattern):
    """The cast-on passes behind each first-course loop's legs and in front of its feet (as
    the head of a loop below would, seen from the face for a knit stitch, mirrored for purl),
    the bind-off in front of each last-course head's one side and behind its other (as a
    needle through live stitches): each edge stitch is linked with its edge yarn, which is
    glued at both ends to its course."""
    S, C = 6, 4
    sw = knit_swatch(pattern, S, C, W, H, R)
    x = sw.positions
    assert len(sw.yarn_offsets) == 4                      # the knit, cast-on, bind-off
    assert list(sw.cast_on) == list(range(sw.yarn_offsets[1], sw.yarn_offsets[2]))
    assert list(sw.bind_off) == list(range(sw.yarn_offsets[2], sw.yarn_offsets[3]))
    assert set(sw.top_course) >= set(sw.bind_off)
    for edge, course in ((sw.cast_on, 0), (sw.bind_off, C - 1)):
        ends = {int(a) for a, _ in sw.ties if a in edge}
        assert ends == {int(edge[0]), int(edge[-1])}      # both ends glued
        glued = [int(b) for a, b in sw.ties if a in edge]
        assert all(sw.course_points[course] <= b < sw.course_points[course + 1] for b in glued)
        for i in range(1, S - 1):   # (the edge yarns end inside the outer stitches)
            first = int(np.nonzero(sw.loops == course * S + i)[0][0])
            loop = x[first:first + 13]                     # sinker to sinker
            sign = -1 if sw.purl[course, i] else 1
            if course == 0:   # above the neck: behind the legs; below it: in front of the feet
                over = _crossings(x[edge], loop, -H / 1.4 * 0.6, 0.0)
                under = _crossings(x[edge], loop, -2 * H, -H / 1.4 * 0.8)
                assert over == [-sign, -sign] and under == [sign, sign], (i, over, under)
            else:             # the head: in front of one side, behind the other
                sides = _crossings(x[edge], loop, course * H, course * H + H / 1.4)
                assert sorted(sides) == [-1, 1], (i, sides)
    # a swatch with raw edges has neither
    raw = knit_swatch(pattern, S, C, W, H, R, edges=False)
    assert len(raw.cast_on) == len(raw.bind_off) == 0 and len(raw.yarn_offsets) == 2
