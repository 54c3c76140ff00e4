"""Stitch generator: yarn centrelines of a flat knitted swatch (pure numpy).

A swatch of ``stitches`` loops per course and ``courses`` courses is laid down as ONE continuous
yarn, as Kaldor's generator does ([Kaldor2011] §7.1): course 0 runs in +x, turns up at the
right edge in a half-loop, course 1 runs back in −x, and so on. ``yarn_offsets`` is therefore
``[0, P]``; the dynamics accept any number of yarns (``yarn_offsets`` of length Y + 1).

Each stitch is one period of a parametric loop, t ∈ [−π, π) (head at t = 0, sinker at ±π),
course j, stitch i (x across the course, y up the wale, z out of the fabric's face):

    x = w·(i + ½ + (t + a(t)·sin 2t) / 2π)     a = a_head + (a_neck − a_head)·(1 − cos t)/2
    y = j·H + h·cos t                          h = H / 1.4: a loop reaches into the one below
    z = d·D(cos t)·(σ_self·(1 − U(cos t)) + σ_above·U(cos t))
        D(c) = cos(2π·max(0, |c| − ½)): +1 from the neck to the head's sides, −1 at head and sinker
        U(c) = smoothstep of c + ½ over [0, 1]: 0 below the neck, 1 above the head's sides

a > ½ bends the legs back, and a larger a in the lower half narrows the loop there into a
neck, so the legs of the loop above pass inside this loop's (wider) head. σ = +1 for a knit stitch and −1 for a purl stitch. The feet and lower legs of a loop follow its
own σ (a knit loop is pulled through the loop below from back to front: feet behind, legs in
front), the upper legs and head follow σ of the stitch above it (the head lies behind the
legs of a knit loop above and in front of those of a purl loop above), so garter, rib and seed
interloop as stockinette does. Between a knit and a purl stitch of the same course, σ_self is
blended over the sinker so the yarn passes through the fabric's mid-plane there.

The edges are finished as a knitter finishes them, so that neither can run: a cast-on yarn
along the bottom, whose half-loops are the heads the first course's loops are pulled through
(as the loops of a cast-on are), and a bind-off yarn along the top, drawn through the last
course's heads as the next course's necks would be (as a bind-off's chain is); each runs along
the course through every stitch of its edge, and its two ends are glued to the edge course
(Kaldor's glue, §4.2.4) so that it cannot slide out. Both are yarns of their own
(``yarn_offsets``), after the knit's.

The geometry is only "good enough" with the right interlooping, as Kaldor's stitch models are;
``relax`` (solver/yarn/relax.py) settles it into a rest state.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

import numpy as np

PATTERNS = ("stockinette", "garter", "rib2x2", "seed")
# The named patterns as repeats (parse_repeat): seen from the face, courses from the bottom
PATTERN_REPEATS = {"stockinette": "k", "garter": "k/p", "rib2x2": "k2p2", "seed": "k1p1/p1k1"}
# Most stitches in one course of a repeat
_MAX_REPEAT = 999
# The usual gauge of a yarn, stitch width and course height in yarn radii: worsted (18 stitches
# and 24 courses per 10 cm) in Kaldor's 1.25 mm yarn.
GAUGE_IN_RADII = (5.6e-3 / 1.25e-3, 4.2e-3 / 1.25e-3)

# Loop shape (fractions, chosen so the generated layout keeps non-neighbouring yarn segments
# apart; tests/test_yarn_stitches.py checks the clearance).
_HEAD_WIDTH = 1.2        # a at the head: how far the upper legs swing out (x = t + a sin 2t)
_NECK = 1.6              # a at the sinker: a narrow neck below, inside the head of the loop below
_LOOP_REACH = 1.4        # H / h
_TURN_BULGE = 0.45       # how far the edge half-loop bulges out of the swatch, in stitch widths
_TURN_POINTS = 5         # points inside each edge half-loop
_DEPTH = 1.3             # loop depth (z amplitude) in yarn radii


def parse_repeat(text: str) -> list[np.ndarray]:
    """A stitch pattern's repeat, written as knit and purl counts the way a knitter reads a
    chart: ``"k2p2"`` is knit 2, purl 2 across every course (2×2 rib), ``/`` starts the next
    course up (``"k/p"`` is garter, ``"k1p1/p1k1"`` seed), a count of 1 may be left out, case,
    spaces and commas do not matter. Every course is read as seen from the swatch's face (a
    chart, not the wrong-side rows of written instructions).

    Returns:
        one bool array per course of the repeat, True = purl, repeated across the course from
        its first stitch; the courses repeat up the swatch from its first course.

    Raises:
        ValueError naming what is wrong.
    """
    if not isinstance(text, str):
        raise ValueError(f"a repeat is text such as 'k2p2', not {text!r}")
    rows = []
    for n, row in enumerate(text.lower().replace(" ", "").replace(",", "").split("/")):
        where = f"course {n + 1} of the repeat {text!r}"
        if not row:
            raise ValueError(f"{where} is empty")
        stitches, i = [], 0
        while i < len(row):
            kind = row[i]
            if kind not in "kp":
                raise ValueError(f"{where}: {kind!r} is neither k (knit) nor p (purl)")
            j = i + 1
            while j < len(row) and row[j].isdigit():
                j += 1
            count = int(row[i + 1:j]) if j > i + 1 else 1
            if count < 1:
                raise ValueError(f"{where}: a count of {count}")
            stitches.extend([kind == "p"] * count)
            if len(stitches) > _MAX_REPEAT:
                raise ValueError(f"{where} has more than {_MAX_REPEAT} stitches")
            i = j
        rows.append(np.array(stitches, bool))
    return rows


def purl_mask(pattern: str, stitches: int, courses: int) -> np.ndarray:
    """Which stitches are purl, (courses, stitches) bool, seen from the swatch's face (+z).

    ``pattern`` is one of PATTERNS (stockinette: none; garter: every other course; rib2x2:
    columns k2 p2; seed: a checkerboard, k1 p1 shifted by one each course) or a repeat such as
    ``"k3p1"`` or ``"k1p1/p1k1"`` (parse_repeat).
    """
    text = PATTERN_REPEATS.get(pattern, pattern)
    try:
        rows = parse_repeat(text)
    except ValueError as err:
        raise ValueError(f"unknown pattern {pattern!r}: give one of {', '.join(PATTERNS)} or "
                         f"a repeat of knit and purl stitches such as 'k2p2' or 'k1p1/p1k1' "
                         f"({err})") from None
    mask = np.empty((courses, stitches), bool)
    for j in range(courses):
        row = rows[j % len(rows)]
        mask[j] = row[np.arange(stitches) % len(row)]
    return mask


@dataclass(frozen=True)
class Swatch:
    """Yarn centrelines of a knitted swatch.

    Attributes:
        positions: yarn points [m] (P, 3); the face of the fabric looks along +z, courses run
            along x and wales along y.
        yarn_offsets: (Y + 1,) int; yarn k is positions[yarn_offsets[k]:yarn_offsets[k + 1]].
        radius: yarn radius [m].
        purl: (courses, stitches) bool, the pattern (True = purl seen from +z).
        stitch_width: w [m], loop spacing along the course.
        course_height: H [m], course spacing along the wale.
        course_points: (courses + 1,) int, where each course's points start in positions (the
            edge half-loops belong to the course before them); the cast-on and bind-off yarns
            follow the last course's points.
        loops: (P,) int, the loop j·stitches + i each point belongs to (an edge half-loop to
            the edge loop it leaves), for the regions of the non-rigid damping.
        ties: (T, 2) int, Kaldor's glue (§4.2.4): each yarn end is tied to the nearest point of
            the neighbouring course (the knit's) or of its edge course (the cast-on's and
            bind-off's), so the knit cannot unravel from its ends.
        cast_on, bind_off: the points (N,) of the cast-on and bind-off yarns (empty if the
            swatch has none).
    """

    positions: np.ndarray
    yarn_offsets: np.ndarray
    radius: float
    purl: np.ndarray
    stitch_width: float
    course_height: float
    course_points: np.ndarray
    loops: np.ndarray
    ties: np.ndarray
    cast_on: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    bind_off: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def segments(self) -> np.ndarray:
        """(S, 2) point indices of every yarn segment (consecutive points of one yarn)."""
        return yarn_segments(self.yarn_offsets)

    @property
    def top_course(self) -> np.ndarray:
        """Indices of the last course's points and of the bind-off's: the swatch's top edge,
        what "pin the top" holds (a needle through it). Holding only the heads of its loops,
        a small stockinette swatch swung up around them by most of its height within a frame
        (its bottom edge curling), even without gravity (docs/yarn.md)."""
        return np.concatenate([np.arange(self.course_points[-2], self.course_points[-1]),
                               self.bind_off]).astype(np.int64)


    def loop_centroids(self, x: np.ndarray) -> np.ndarray:
        """(courses, stitches, 3) mean position [m] of each loop's points at x (P, 3)."""
        courses, stitches = self.purl.shape
        c = np.zeros((courses * stitches, 3))
        np.add.at(c, self.loops, x)
        c /= np.bincount(self.loops, minlength=courses * stitches)[:, None]
        return c.reshape(courses, stitches, 3)

    def fabric_size(self, x: np.ndarray) -> tuple[float, float]:
        """(width, height) [m] at x measured along the fabric, so that a curled or folded
        swatch keeps its size: the lengths of the polylines through the loop centroids along
        each course and each stitch column, scaled by n/(n − 1) for the outer half-loops,
        averaged."""
        c = self.loop_centroids(x)
        C, S = c.shape[:2]
        width = np.linalg.norm(np.diff(c, axis=1), axis=2).sum(axis=1).mean() * S / (S - 1)
        height = np.linalg.norm(np.diff(c, axis=0), axis=2).sum(axis=0).mean() * C / (C - 1)
        return float(width), float(height)

    def course_spacing(self, x: np.ndarray) -> float:
        """Mean distance [m] at x (P, 3) between the centroids of neighbouring loops of one
        stitch column, over the interior (the edge courses and columns left out, where the
        cast-on, bind-off and turns hold the loops): along the fabric, as fabric_size."""
        c = self.loop_centroids(x)[1:-1, 1:-1]
        return float(np.linalg.norm(np.diff(c, axis=0), axis=2).mean())

    def loop_tilt(self, x: np.ndarray) -> np.ndarray:
        """(courses, stitches) how far each loop's plane (its points' best plane at x (P, 3))
        is turned out of the fabric about the course direction [deg]: the angle from the face
        (+z) to the loop's normal in the wale–face plane. Garter's loops tilt alternately by
        course into its ridges; a flat stockinette's lie near 0."""
        courses, stitches = self.purl.shape
        knit = np.arange(len(x)) < self.yarn_offsets[1]
        tilt = np.empty(courses * stitches)
        for loop in range(courses * stitches):
            pts = x[knit & (self.loops == loop)]
            n = np.linalg.svd(pts - pts.mean(axis=0))[2][2]
            n = n if n[2] > 0 else -n
            tilt[loop] = np.degrees(np.arctan2(n[1], n[2]))
        return tilt.reshape(courses, stitches)


def yarn_segments(yarn_offsets: np.ndarray) -> np.ndarray:
    """(S, 2) int64 point pairs of consecutive points within each yarn."""
    pairs = [np.stack([np.arange(a, b - 1), np.arange(a + 1, b)], axis=1)
             for a, b in itertools.pairwise(yarn_offsets) if b - a >= 2]
    return np.concatenate(pairs).astype(np.int64) if pairs else np.zeros((0, 2), np.int64)


# The bind-off through the last course's heads as a needle through live stitches: at this
# height in the head (of h above the course), in front of each head's left side and behind its
# right side (by the depth at u = ∓_BIND_OFF_SIDE stitch widths from the stitch's middle),
# across to the front again between the heads
_BIND_OFF_HEIGHT = 0.55
_BIND_OFF_SIDE = 5.0 / 12.0
_BIND_OFF_FRONT = 2.0     # in front of the head's side, in loop depths
# The cast-on's half-loops, as the heads of a course below the first would lie, by the distance
# from a stitch's middle u (in stitch widths): the height from the head's top (−H + h) down to
# _CAST_ON_DIP yarn radii below the first course's sinkers (the fraction of that span), and the
# depth (behind the first course's legs at the top, in front of its feet lower down)
_CAST_ON_U = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) / 12.0
_CAST_ON_DROP = np.array([0.0, 0.026, 0.093, 0.204, 0.41, 0.78, 1.0])
_CAST_ON_DEPTH = np.array([1.0, 0.96, 0.8, 0.35, -0.35, -0.9, -1.0])
_CAST_ON_DIP = 0.7


def _needle(x: np.ndarray, w: float, sigma: np.ndarray) -> np.ndarray:
    """The bind-off's depth along the course (in loop depths, for signs ``sigma`` (S,) of the
    last course's stitches): at every head's left side _BIND_OFF_FRONT in front of it (σ·),
    at its right side behind it (−σ), straight in between; across the gap to the next head
    through the fabric's mid-plane halfway (so a knit head may be followed by a purl one)."""
    S = len(sigma)
    stitch = np.clip(np.floor(x / w).astype(np.int64), 0, S - 1)
    u = x / w - stitch - 0.5                          # −½ … ½ across a stitch
    left, right = -_BIND_OFF_SIDE, _BIND_OFF_SIDE
    inside = (u - left) / (right - left)              # 0 … 1 from left side to right side
    outer = np.clip((np.abs(u) - right) / (0.5 - right), 0.0, 1.0)   # side 0 … boundary 1
    outer = 1.0 - outer * outer * (3.0 - 2.0 * outer)
    z = np.where(np.abs(u) <= right, _BIND_OFF_FRONT + (-1.0 - _BIND_OFF_FRONT) * inside,
                 np.where(u > 0, -1.0, _BIND_OFF_FRONT) * outer)
    return sigma[stitch] * z


def _edge_yarn(sigma: np.ndarray, w: float, y: np.ndarray, z: np.ndarray, x: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """An edge yarn along a course of stitches with signs ``sigma`` (S,) (+1 knit, −1 purl):
    the points (x, y, σ·z), σ blended over the stitch boundaries as the loops' sinkers are, so
    that the yarn passes through the fabric's mid-plane between a knit and a purl stitch; and
    each point's stitch."""
    s, stitch = _blended_sign(sigma, w, x)
    return np.stack([x, y, s * z], axis=1), stitch


def _blended_sign(sigma: np.ndarray, w: float, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """σ along a course at x, blended over the stitch boundaries as the loops' sinkers are
    (0 where a knit and a purl stitch meet), and each x's stitch."""
    S = len(sigma)
    stitch = np.clip(np.floor(x / w).astype(np.int64), 0, S - 1)
    # σ of the nearer neighbour across the boundary, blended in over the stitch's outer half
    frac = x / w - stitch - 0.5                      # −½ … ½ across the stitch
    other = np.clip(stitch + np.where(frac >= 0, 1, -1), 0, S - 1)
    blend = 0.5 * np.clip(2.0 * np.abs(frac), 0.0, 1.0) ** 4
    return sigma[stitch] + (sigma[other] - sigma[stitch]) * blend, stitch


def _loop_profile(n: int) -> tuple[np.ndarray, ...]:
    """One loop's shape at its n (N,) parameters t ∈ [−π, π) (sinker first): t, cos t, the
    sign blend toward the neighbour (0 at the head, ½ at the sinker), which neighbour the
    sinker meets (±1), the depth's dive, the head's share of the depth (0 below the neck, 1
    above the sides) and the legs' swing a (x = t + a·sin 2t); all dimensionless (N,)."""
    t = -np.pi + 2.0 * np.pi * np.arange(n) / n           # one loop, sinker first
    c = np.cos(t)
    blend = 0.5 * (np.abs(t) / np.pi) ** 4                # 0 at the head, ½ at the sinker
    side = np.where(t >= 0, 1, -1)                        # which neighbour the sinker meets
    # depth profile: in front of the fabric's mid-plane from the neck (cos t = −½) up to the
    # head's sides (cos t = ½), diving behind it over the head's top and over the sinker
    dive = np.cos(2 * np.pi * np.maximum(0.0, np.abs(c) - 0.5))
    u = np.clip(c + 0.5, 0.0, 1.0)
    upper = u * u * (3 - 2 * u)                           # 0 below the neck, 1 above the sides
    swing = _HEAD_WIDTH + (_NECK - _HEAD_WIDTH) * (1 - c) / 2
    return t, c, blend, side, dive, upper, swing


def _course(j: int, sigma: np.ndarray, w: float, H: float, h: float, depth: float,
            profile: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Course j's yarn: its points (stitches·n + 1 (+ _TURN_POINTS unless last), 3) [m],
    loops in stitch order (reversed on odd courses, which run right to left), the closing
    sinker at the far edge and the half-loop up to the next course (its depth 0, set by
    ``_join_turns``); and each point's loop index. sigma (C, S) ±1 knit/purl; w, H, h [m]
    stitch width, course height, loop reach; depth [m] the loop's z amplitude."""
    courses, stitches = sigma.shape
    t, c, blend, side, dive, upper, swing = profile
    n = len(t)
    above = sigma[j + 1] if j + 1 < courses else sigma[j]
    pts = np.empty((stitches, n, 3))
    for i in range(stitches):
        nb = np.clip(i + side, 0, stitches - 1)
        s_self = sigma[j, i] + (sigma[j, nb] - sigma[j, i]) * blend
        s_above = above[i] + (above[nb] - above[i]) * blend
        pts[i, :, 0] = w * (i + 0.5 + (t + swing * np.sin(2 * t)) / (2 * np.pi))
        pts[i, :, 1] = j * H + h * c
        pts[i, :, 2] = depth * dive * (s_self * (1 - upper) + s_above * upper)
    course = pts.reshape(-1, 3)
    # the course's closing sinker point at its far edge
    end = course[0].copy()
    end[0] = stitches * w
    course = np.vstack([course, end[None]])
    loop = np.concatenate([np.repeat(np.arange(stitches), n), [stitches - 1]]) + j * stitches
    if j % 2 == 1:
        course = course[::-1].copy()
        loop = loop[::-1]
    if j + 1 < courses:
        # half-loop up to the next course, bulging out of the swatch on the side it ends
        edge_x = course[-1, 0]
        out = 1.0 if edge_x > 0.5 * stitches * w else -1.0
        phi = np.pi * np.arange(1, _TURN_POINTS + 1) / (_TURN_POINTS + 1)
        turn = np.empty((_TURN_POINTS, 3))
        turn[:, 0] = edge_x + out * _TURN_BULGE * w * np.sin(phi)
        turn[:, 1] = course[-1, 1] + H * (1 - np.cos(phi)) / 2
        turn[:, 2] = 0.0  # set by _join_turns, once the next course's first point is known
        course = np.vstack([course, turn])
        loop = np.concatenate([loop, np.full(_TURN_POINTS, loop[-1])])
    return course, loop


def _join_turns(rows: list[np.ndarray]) -> None:
    """Set each course's half-loop depth [m] (in place, rows: each course's (N_j, 3) points)
    linearly from its course's last point to the next course's first."""
    frac = np.arange(1, _TURN_POINTS + 1) / (_TURN_POINTS + 1)
    for j in range(len(rows) - 1):
        z0, z1 = rows[j][-_TURN_POINTS - 1, 2], rows[j + 1][0, 2]
        rows[j][-_TURN_POINTS:, 2] = z0 + (z1 - z0) * frac


def _nearest_tie(positions: np.ndarray, end: int, a: int, b: int) -> tuple[int, int]:
    """The tie (end, nearest) of point ``end`` to the nearest point of positions[a:b] (P, 3)."""
    return end, a + int(np.argmin(np.linalg.norm(positions[a:b] - positions[end], axis=1)))


def _edge_yarns(sigma: np.ndarray, w: float, H: float, h: float, depth: float, radius: float,
                n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The cast-on and bind-off yarns of a swatch with signs sigma (C, S) (module docstring):
    their points (M, 3) [m] each and each point's stitch (M,) within its course (first course
    for the cast-on, last for the bind-off); w, H, h, depth, radius [m] as in ``_course``,
    n points per stitch."""
    courses, stitches = sigma.shape
    m = stitches * n + 1
    xs = w * np.arange(m) / n
    u = np.abs(np.mod(xs / w, 1.0) - 0.5)
    # the cast-on's half-loops: the heads of a course below the first, their tops behind
    # its loops' legs above their necks, their sides in front of its feet below them,
    # dipping below its sinkers between the stitches
    top, bottom = -H + h, -h - _CAST_ON_DIP * radius
    low, stitch = _edge_yarn(
        sigma[0], w, top + (bottom - top) * np.interp(u, _CAST_ON_U, _CAST_ON_DROP),
        -depth * np.interp(u, _CAST_ON_U, _CAST_ON_DEPTH), xs)
    # the bind-off: through the last course's heads as a needle through live stitches
    high = np.stack([xs, np.full(m, (courses - 1) * H + _BIND_OFF_HEIGHT * h),
                     depth * _needle(xs, w, sigma[-1])], axis=1)
    stitch_top = np.clip(np.floor(xs / w).astype(np.int64), 0, stitches - 1)
    # both end a sixth of a stitch inside the swatch's sides, clear of the courses' ends
    keep = slice(n // 6, m - n // 6)
    return low[keep], stitch[keep], high[keep], stitch_top[keep]


def knit_swatch(pattern: str, stitches: int, courses: int, stitch_width: float,
                course_height: float, radius: float, points_per_stitch: int = 12,
                edges: bool = True) -> Swatch:
    """Lay out a flat swatch of ``stitches`` × ``courses`` loops in ``pattern``.

    Args:
        pattern: one of PATTERNS or a repeat such as "k3p1" (purl_mask, parse_repeat).
        stitches: loops per course (≥ 1).
        courses: number of courses (rows, ≥ 1).
        stitch_width: w, loop spacing along the course [m] (gauge).
        course_height: H, course spacing along the wale [m] (gauge).
        radius: yarn radius r [m]; the loop's depth (z amplitude) is 1.3·r, so crossing yarns
            start about a diameter apart.
        points_per_stitch: polyline points per loop (≥ 8).
        edges: finish the bottom with a cast-on yarn and the top with a bind-off yarn
            (module docstring); False leaves both edges raw (loops free at the bottom, the
            top held only by pins).

    Returns:
        the Swatch; the swatch spans x ∈ [0, stitches·w] (plus the edge half-loops), its
        lowest sinkers lie at y = −H / 1.4 and z ∈ [−1.3 r, 1.3 r].
    """
    if stitches < 1 or courses < 1:
        raise ValueError("stitches and courses must be at least 1")
    if points_per_stitch < 8:
        raise ValueError("points_per_stitch must be at least 8")
    if min(stitch_width, course_height, radius) <= 0:
        raise ValueError("stitch_width, course_height and radius must be positive")
    purl = purl_mask(pattern, stitches, courses)
    sigma = np.where(purl, -1.0, 1.0)
    w, H = float(stitch_width), float(course_height)
    h = H / _LOOP_REACH
    depth = _DEPTH * radius
    n = points_per_stitch
    profile = _loop_profile(n)
    rows, loop_rows, course_points = [], [], [0]
    for j in range(courses):
        course, loop = _course(j, sigma, w, H, h, depth, profile)
        rows.append(course)
        loop_rows.append(loop)
        course_points.append(course_points[-1] + len(course))
    _join_turns(rows)
    positions = np.vstack(rows)
    ties = []
    if courses > 1:
        # the tail (first point, course 0) and the end (last point, last course) to the
        # nearest point of the course next to them
        ties.append(_nearest_tie(positions, 0, course_points[1], course_points[2]))
        ties.append(_nearest_tie(positions, len(positions) - 1, course_points[-3],
                                 course_points[-2]))
    loops = np.concatenate(loop_rows).astype(np.int64)
    offsets = [0, len(positions)]
    cast_on = bind_off = np.zeros(0, np.int64)
    if edges:
        low, stitch, high, stitch_top = _edge_yarns(sigma, w, H, h, depth, radius, n)
        m = len(low)
        cast_on = np.arange(len(positions), len(positions) + m)
        bind_off = np.arange(len(positions) + m, len(positions) + 2 * m)
        positions = np.vstack([positions, low, high])
        loops = np.concatenate([loops, stitch, (courses - 1) * stitches + stitch_top])
        offsets += [bind_off[0], len(positions)]
        for yarn, (a, b) in ((cast_on, course_points[:2]), (bind_off, course_points[-2:])):
            ties.append(_nearest_tie(positions, yarn[0], a, b))
            ties.append(_nearest_tie(positions, yarn[-1], a, b))
    return Swatch(positions=positions, yarn_offsets=np.array(offsets, np.int64),
                  radius=float(radius), purl=purl, stitch_width=w, course_height=H,
                  course_points=np.array(course_points, np.int64), loops=loops,
                  ties=np.array(ties, np.int64).reshape(-1, 2), cast_on=cast_on,
                  bind_off=bind_off)
