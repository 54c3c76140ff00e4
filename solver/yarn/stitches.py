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

The geometry is only "good enough" with the right interlooping, as Kaldor's stitch models are;
``relax`` (solver/yarn/relax.py) settles it into a rest state.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

PATTERNS = ("stockinette", "garter", "rib2x2", "seed")
# The named patterns as repeats (parse_repeat): seen from the face, courses from the bottom
PATTERN_REPEATS = {"stockinette": "k", "garter": "k/p", "rib2x2": "k2p2", "seed": "k1p1/p1k1"}
# Most stitches in one course of a repeat
_MAX_REPEAT = 999

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
            edge half-loops belong to the course before them).
        loops: (P,) int, the loop j·stitches + i each point belongs to (an edge half-loop to
            the edge loop it leaves), for the regions of the non-rigid damping.
        ties: (T, 2) int, Kaldor's glue (§4.2.4): each yarn end is tied to the nearest point of
            the neighbouring course, so the knit cannot unravel from its ends ((0, 2) for a
            single course).
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

    @property
    def segments(self) -> np.ndarray:
        """(S, 2) point indices of every yarn segment (consecutive points of one yarn)."""
        return yarn_segments(self.yarn_offsets)

    @property
    def top_course(self) -> np.ndarray:
        """Indices of the last course's points: the swatch's top as if still on the needle,
        what "pin the top" holds. Holding only the heads of its loops, a small stockinette
        swatch swung up around them by most of its height within a frame (its bottom edge
        curling), even without gravity, and a 42 × 32 one's top loops sprang open at
        2.5 m/s (docs/yarn.md, "Speed")."""
        return np.arange(self.course_points[-2], self.course_points[-1])


def yarn_segments(yarn_offsets: np.ndarray) -> np.ndarray:
    """(S, 2) int64 point pairs of consecutive points within each yarn."""
    pairs = [np.stack([np.arange(a, b - 1), np.arange(a + 1, b)], axis=1)
             for a, b in itertools.pairwise(yarn_offsets) if b - a >= 2]
    return np.concatenate(pairs).astype(np.int64) if pairs else np.zeros((0, 2), np.int64)


def knit_swatch(pattern: str, stitches: int, courses: int, stitch_width: float,
                course_height: float, radius: float, points_per_stitch: int = 12) -> Swatch:
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

    rows, loop_rows, course_points = [], [], [0]
    for j in range(courses):
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
            turn[:, 2] = 0.0  # set below, once the next course's first point is known
            course = np.vstack([course, turn])
            loop = np.concatenate([loop, np.full(_TURN_POINTS, loop[-1])])
        rows.append(course)
        loop_rows.append(loop)
        course_points.append(course_points[-1] + len(course))
    # Each half-loop's depth goes linearly from its course's last point to the next's first.
    frac = np.arange(1, _TURN_POINTS + 1) / (_TURN_POINTS + 1)
    for j in range(courses - 1):
        z0, z1 = rows[j][-_TURN_POINTS - 1, 2], rows[j + 1][0, 2]
        rows[j][-_TURN_POINTS:, 2] = z0 + (z1 - z0) * frac
    positions = np.vstack(rows)
    ties = []
    if courses > 1:
        # the tail (first point, course 0) and the end (last point, last course) to the
        # nearest point of the course next to them
        for end, (a, b) in ((0, (course_points[1], course_points[2])),
                            (len(positions) - 1, (course_points[-3], course_points[-2]))):
            near = a + int(np.argmin(np.linalg.norm(positions[a:b] - positions[end], axis=1)))
            ties.append((end, near))
    return Swatch(positions=positions, yarn_offsets=np.array([0, len(positions)], np.int64),
                  radius=float(radius), purl=purl, stitch_width=w, course_height=H,
                  course_points=np.array(course_points, np.int64),
                  loops=np.concatenate(loop_rows).astype(np.int64), ties=np.array(ties, np.int64).reshape(-1, 2))
