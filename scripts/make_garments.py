"""Make the garment and body meshes of examples/garments/ (the garment benchmark, tests, demo).

Everything is modelled with Blender's own mesh tools (``bmesh`` in the bpy wheel), as an artist
or a pattern tool would make it:

* ``tee_panels.obj``: a tee's front and back panels (sleeves cut in one, a kimono tee), laid
  flat in front of and behind the body. Each outline is filled with triangles by Blender's
  scanfill, refined by splitting long edges and beautified (irregular triangles, graded finer
  at the neckline and the underarm); the seams are OBJ lines (``l a b``), which Blender imports
  as loose edges: the add-on's Sewing reads them. Side + underarm and shoulder + overarm seams
  are sewn; hem, neckline and cuffs stay open.
* ``body_torso.obj``, ``body_head.obj``, ``body_arm_l.obj``, ``body_arm_r.obj``: a faceted
  mannequin in an A-pose (arms 45° down), each part a closed convex hull (``bmesh.ops
  .convex_hull`` of rings and spheres), overlapping at the joints as a body's parts do.
  tests/garments.py poses them (a body that turns and lifts its arms) and builds the scenes.
* ``tee.obj``: the tee worn: the panels sewn around the body by this project's solver (seam
  force, self-collision, the body as mesh colliders), then the seams welded into one mesh with
  open hem, neckline and cuffs, as a garment tool exports a sewn garment.
  ``tee_6k.obj``: the same, every triangle split in four by Blender's subdivide (``bmesh.ops
  .subdivide_edges``). Larger ones come from ``subdivided`` on demand.

Run (minutes: the sewing is a simulation)::

    NUMBA_CACHE_DIR=$PWD/.cache/numba-py311 .venv/bin/python scripts/make_garments.py
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "examples" / "garments"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

# the body's joints and pose are the scenes' (tests/garments.py): one source of truth
from garments import ARM_DOWN, BODY_THICKNESS, SHOULDER  # noqa: E402

# Body (m): a mannequin standing at the origin, facing −Y, Z up, in an A-pose.
ARM_LENGTH = 0.55
ARM_RADIUS = 0.045
PANEL_GAP = 0.20                          # |y| of the flat panels before sewing

# Tee pattern (m): x across, z up, laid flat in front of (and behind) the body; the sleeves
# run 45° down as the arms do. Lengths are along the body: the shoulder line lies above the
# body's shoulders by about half the body's depth, which the sewn seam takes over the top.
HEM_Z = 0.92
HALF_WIDTH = 0.26                         # half the chest width of a panel (ease included)
PATTERN_SHOULDER = np.array([0.21, 1.50])  # where the sleeve's axis leaves the body panel
SLEEVE_HALF = 0.12                        # half a sleeve panel's width, across its axis
SLEEVE_LENGTH = 0.22                      # along the sleeve's axis from PATTERN_SHOULDER
NECK_HALF = 0.085
NECK_Z = 1.58
FRONT_NECK_DROP, BACK_NECK_DROP = 0.09, 0.025


def _mirror(points):
    return [(-x, z) for x, z in points]


def tee_outline(front: bool) -> list[tuple[str, np.ndarray]]:
    """One panel's outline as named pieces (each (n, 2) points x, z, in order round the panel,
    counter-clockwise seen from the front), sharing their end points: hem, the right side seam
    (side + underarm), right cuff, right overarm (sleeve top + shoulder), neckline, left
    overarm, left cuff, left side seam."""
    s = PATTERN_SHOULDER
    d = np.array([math.cos(ARM_DOWN), -math.sin(ARM_DOWN)])   # along the right arm
    n = np.array([math.sin(ARM_DOWN), math.cos(ARM_DOWN)])    # across it, upwards
    # where the sleeve's lower edge meets the side seam
    t_pit = (HALF_WIDTH - (s - n * SLEEVE_HALF)[0]) / d[0]
    pit = s - n * SLEEVE_HALF + t_pit * d
    cuff_lo = s - n * SLEEVE_HALF + SLEEVE_LENGTH * d
    cuff_hi = s + n * SLEEVE_HALF + SLEEVE_LENGTH * d
    top = s + n * SLEEVE_HALF                                   # over the shoulder joint
    neck = np.array([NECK_HALF, NECK_Z])
    drop = FRONT_NECK_DROP if front else BACK_NECK_DROP
    a = np.linspace(0.0, math.pi, 9)
    neckline = np.stack([NECK_HALF * np.cos(a), NECK_Z - drop * np.sin(a)], 1)  # right to left
    right_side = np.array([[HALF_WIDTH, HEM_Z], pit, cuff_lo])
    right_over = np.array([cuff_hi, top, neck])
    return [("hem", np.array([[-HALF_WIDTH, HEM_Z], [HALF_WIDTH, HEM_Z]])),
            ("side_r", right_side), ("cuff_r", np.array([cuff_lo, cuff_hi])),
            ("over_r", right_over), ("neck", neckline),
            ("over_l", np.array(_mirror(right_over[::-1]))),
            ("cuff_l", np.array(_mirror([cuff_hi, cuff_lo]))),
            ("side_l", np.array(_mirror(right_side[::-1])))]


def edge_size(p: np.ndarray, edge: float) -> np.ndarray:
    """Target edge length [m] at points p (n, 2): ``edge`` on the body, half of it at the
    neckline and at the underarms (where a pattern tool's mesher grades finer)."""
    neck = np.array([0.0, NECK_Z - 0.04])
    pit = np.array([HALF_WIDTH, 1.28])
    dist = np.minimum(np.linalg.norm(p - neck, axis=1),
                      np.minimum(np.linalg.norm(p - pit, axis=1),
                                 np.linalg.norm(p - pit * [-1, 1], axis=1)))
    return edge * (0.5 + 0.5 * np.clip(dist / 0.15, 0.0, 1.0))


def _resample(poly: np.ndarray, edge: float, rng) -> np.ndarray:
    """Points along the polyline poly (n, 2), its ends kept, spaced by about the target size
    there with ±25 % jitter (an irregular border, as a mesher leaves)."""
    seg = np.linalg.norm(np.diff(poly, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    out, t = [poly[0]], 0.0
    while True:
        here = np.array([np.interp(t, s, poly[:, k]) for k in range(2)])
        t += float(edge_size(here[None], edge)[0]) * rng.uniform(0.75, 1.25)
        if t >= s[-1] - 0.4 * float(edge_size(poly[-1:], edge)[0]):
            break
        out.append([np.interp(t, s, poly[:, k]) for k in range(2)])
    out.append(poly[-1])
    return np.array(out)


def _fill(bmesh, boundary: np.ndarray, edge: float):
    """Triangles filling the closed outline ``boundary`` (n, 2), refined until no interior edge
    is longer than 1.4 × the target size: (points (V, 2), triangles (T, 3)); the boundary
    points come first, in order."""
    bm = bmesh.new()
    verts = [bm.verts.new((float(x), 0.0, float(z))) for x, z in boundary]
    boundary = np.array([(v.co.x, v.co.z) for v in verts])  # as Blender stores them (float32)
    for i in range(len(verts)):
        bm.edges.new((verts[i], verts[(i + 1) % len(verts)]))
    bmesh.ops.triangle_fill(bm, use_beauty=True, use_dissolve=False, edges=list(bm.edges),
                            normal=(0.0, -1.0, 0.0))
    for _ in range(30):
        bm.edges.ensure_lookup_table()
        long = []
        for e in bm.edges:
            if e.is_boundary:
                continue
            mid = (e.verts[0].co + e.verts[1].co) / 2
            if e.calc_length() > 1.4 * float(edge_size(np.array([[mid.x, mid.z]]), edge)[0]):
                long.append(e)
        if not long:
            break
        bmesh.ops.subdivide_edges(bm, edges=long, cuts=1, use_grid_fill=False)
        bmesh.ops.triangulate(bm, faces=[f for f in bm.faces if len(f.verts) > 3])
        inner = [e for e in bm.edges if not e.is_boundary]
        bmesh.ops.beautify_fill(bm, faces=list(bm.faces), edges=inner)
    inside = [v for v in bm.verts if not v.is_boundary]
    for _ in range(3):  # relax the interior a little (the border stays where the pattern is)
        bmesh.ops.smooth_vert(bm, verts=inside, factor=0.5, use_axis_x=True, use_axis_z=True)
        bmesh.ops.beautify_fill(bm, faces=list(bm.faces),
                                edges=[e for e in bm.edges if not e.is_boundary])
    # boundary points first, in outline order (found by position: bmesh's operators replace
    # the vertex objects, and the border never moves); the rest in Blender's order
    where = {(float(x), float(z)): i for i, (x, z) in enumerate(boundary)}
    index, extra = {}, len(boundary)
    for v in bm.verts:
        key = (v.co.x, v.co.z)
        i = where.get(key) if v.is_boundary else None
        if i is None:
            i, extra = extra, extra + 1
        index[v] = i
    if extra - len(boundary) != len(bm.verts) - len(boundary) or len(set(index.values())) \
            != len(bm.verts):
        raise RuntimeError("the panel's border moved while it was filled")
    pts = np.zeros((len(index), 2))
    for v, i in index.items():
        pts[i] = (v.co.x, v.co.z)
    tris = []
    for f in bm.faces:
        ids = [index[v] for v in f.verts]
        # counter-clockwise in (x, z): the normal faces −Y (out of the front panel)
        a, b, c = pts[ids]
        if (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]) < 0:
            ids = [ids[0], ids[2], ids[1]]
        tris.append(ids)
    bm.free()
    return pts, np.array(tris, np.int64)


def tee_panels(edge: float = 0.035, seed: int = 7):
    """The tee's two panels, flat at y = ∓PANEL_GAP: (positions (V, 3), triangles (T, 3),
    seams (S, 2)); the front panel's vertices come first. The seam pieces are sampled once and
    used by both panels, so the pairs meet vertex for vertex."""
    import bmesh

    rng = np.random.default_rng(seed)
    shared = {}
    panels = []
    for front in (True, False):
        pieces, names = [], []
        for name, poly in tee_outline(front):
            if name not in shared or name == "neck":
                shared[name] = _resample(poly, edge, rng)
            pieces.append(shared[name][:-1])  # each piece's end is the next one's start
            names += [name] * (len(pieces[-1]))
        boundary = np.concatenate(pieces)
        pts, tris = _fill(bmesh, boundary, edge)
        panels.append((pts, tris, np.array(names + [""] * (len(pts) - len(names)))))
    (pf, tf, nf), (pb, tb, nb) = panels
    Vf = len(pf)
    pos = np.concatenate([np.stack([pf[:, 0], np.full(Vf, -PANEL_GAP), pf[:, 1]], 1),
                          np.stack([pb[:, 0], np.full(len(pb), PANEL_GAP), pb[:, 1]], 1)])
    # the back panel's normal faces +Y: flip its triangles
    tris = np.concatenate([tf, tb[:, ::-1] + Vf])
    seams = []
    sewn = ("side_r", "over_r", "over_l", "side_l")
    B = int(np.count_nonzero(nf != ""))
    for i in range(B):
        # a piece's first point is also the previous piece's end
        if nf[i] not in sewn and nf[(i - 1) % B] not in sewn:
            continue
        j = np.nonzero(np.all(np.abs(pb - pf[i]) < 1e-12, axis=1))[0]
        if len(j):
            seams.append((i, Vf + int(j[0])))
    return pos, tris, np.array(seams, np.int64)


def _wire_png(path, pos2, tris, seams=(), size=900):
    """A wireframe of 2-D points (V, 2) for looking at a mesh (PIL)."""
    from PIL import Image, ImageDraw
    lo, hi = pos2.min(0), pos2.max(0)
    k = (size - 20) / float(max(hi - lo))
    P = (pos2 - lo) * k + 10
    P[:, 1] = size - P[:, 1]
    img = Image.new("RGB", (size, size), "white")
    d = ImageDraw.Draw(img)
    for t in tris:
        d.polygon([tuple(P[i]) for i in t], outline=(60, 60, 60))
    for a, b in seams:
        d.line([tuple(P[a]), tuple(P[b])], fill=(220, 0, 0), width=3)
    img.save(path)


def _hull(bmesh, points: np.ndarray):
    """The convex hull of points (n, 3) as (positions (V, 3), triangles (T, 3)), normals out."""
    bm = bmesh.new()
    verts = [bm.verts.new(tuple(map(float, p))) for p in points]
    out = bmesh.ops.convex_hull(bm, input=verts, use_existing_faces=False)
    for v in out["geom_interior"] + out["geom_unused"]:
        if isinstance(v, bmesh.types.BMVert) and v.is_valid:
            bm.verts.remove(v)
    bmesh.ops.triangulate(bm, faces=list(bm.faces))
    bmesh.ops.recalc_face_normals(bm, faces=list(bm.faces))
    bm.verts.index_update()
    pos = np.array([tuple(v.co) for v in bm.verts])
    tris = np.array([[v.index for v in f.verts] for f in bm.faces], np.int64)
    bm.free()
    return pos, tris


def _ring(z, ax, ay, n, x0=0.0):
    a = np.linspace(0.0, 2 * math.pi, n, endpoint=False)
    return np.stack([x0 + ax * np.cos(a), ay * np.sin(a), np.full(n, z)], 1)


def _sphere(c, r, segments=12, rings=6):
    pts = [np.array(c) + [0, 0, r], np.array(c) - [0, 0, r]]
    for k in range(1, rings):
        el = math.pi * k / rings - math.pi / 2
        pts += list(_ring(c[2] + r * math.sin(el), r * math.cos(el), r * math.cos(el),
                          segments, c[0]) + [0, c[1], 0])
    return np.array(pts)


def body_parts() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The mannequin's closed convex parts in the A-pose: name -> (positions (V, 3) [m],
    triangles (T, 3)), faceted like a low-poly body (16 sides round the torso)."""
    import bmesh

    torso = np.concatenate([_ring(z, ax, ay, 16) for z, ax, ay in (
        (0.85, 0.15, 0.10), (1.00, 0.135, 0.09), (1.20, 0.15, 0.10), (1.33, 0.16, 0.10),
        (1.42, 0.13, 0.08), (1.47, 0.06, 0.05))])
    head = np.concatenate([_ring(1.44, 0.05, 0.05, 12), _ring(1.60, 0.05, 0.05, 12),
                           _sphere((0.0, 0.0, 1.71), 0.1, 12, 6) * [0.8, 0.95, 1.1]
                           + [0, 0, 1.71 - 1.1 * 1.71]])
    parts = {"torso": _hull(bmesh, torso), "head": _hull(bmesh, head)}
    for side, sign in (("r", 1.0), ("l", -1.0)):
        joint = SHOULDER * [sign, 1, 1]
        hand = joint + ARM_LENGTH * np.array([sign * math.cos(ARM_DOWN), 0.0,
                                              -math.sin(ARM_DOWN)])
        pts = np.concatenate([_sphere(joint, ARM_RADIUS + 0.005),
                              _sphere(hand, ARM_RADIUS - 0.01)])
        parts[f"arm_{side}"] = _hull(bmesh, pts)
    return parts


def _collider_meshes(parts):
    """The body's parts (A-pose) as mesh Colliders."""
    from solver import Collider, PolyMesh
    return tuple(Collider(kind="mesh", mesh=PolyMesh.from_faces(pos, tris),
                          thickness=BODY_THICKNESS, friction=0.3)
                 for pos, tris in parts.values())


def sew(pos, tris, seams, parts, frames=36, gravity_from=14, progress=True):
    """The panels sewn round the body by this project's solver: cotton, seam force 10 N/m,
    self-collision; no gravity for the first ``gravity_from`` frames (the seams close round
    the body as a pattern tool's sewing does), then gravity to let the tee settle. Returns the
    positions at the end (V, 3) and the run's report."""
    from solver import ClothSetup, PolyMesh, SimulationSpec, SolverSettings, load_preset
    from solver.simulation import Simulation

    cloth = ClothSetup(PolyMesh.from_faces(pos, tris), load_preset("cotton"), seams=seams)
    spec = SimulationSpec(cloth, SolverSettings(model="implicit", self_collision=True),
                          frames=frames, gravity=np.zeros(3), colliders=_collider_meshes(parts))
    sim = Simulation(spec)
    while not sim.done:
        if sim.frame == gravity_from:
            sim.solver.gravity = np.array([0.0, 0.0, -9.81])
        rep = sim.step()
        if rep is None:
            raise RuntimeError(sim.result.error)
        if progress:
            print(f"  sewing frame {rep.frame}: {rep.wall_time_s:.1f} s, seam gap "
                  f"{1e3 * rep.seam_gap_m:.1f} mm, strain {100 * rep.max_strain:.1f} %, "
                  f"self-intersections {rep.self_intersections}, crossings "
                  f"{rep.collider_crossings}", flush=True)
    return sim.solver.x.copy(), sim.result.report()


def weld(x, tris, seams):
    """One mesh from sewn panels: each seam pair becomes one vertex at its pair's midpoint,
    unused vertices dropped. Returns (positions (V', 3), triangles (T, 3))."""
    from solver.topology import welds
    root = welds(seams, len(x))
    x = x.copy()
    for a, b in seams:
        x[root[a]] = 0.5 * (x[a] + x[b])
    used, tris = np.unique(root[tris], return_inverse=True)
    return x[used], tris.reshape(-1, 3).astype(np.int64)


def subdivided(pos, tris, levels=1, smooth=0.0):
    """Every triangle split in four ``levels`` times by Blender's subdivide, new points eased
    towards a smooth surface by ``smooth`` (0: the same surface, so no new intersections):
    (positions, triangles)."""
    import bmesh
    bm = bmesh.new()
    verts = [bm.verts.new(tuple(map(float, p))) for p in pos]
    for t in tris:
        bm.faces.new([verts[i] for i in t])
    for _ in range(levels):
        bmesh.ops.subdivide_edges(bm, edges=list(bm.edges), cuts=1, use_grid_fill=True,
                                  smooth=smooth)
        bmesh.ops.triangulate(bm, faces=[f for f in bm.faces if len(f.verts) > 3])
    bm.verts.index_update()
    out = np.array([tuple(v.co) for v in bm.verts])
    faces = np.array([[v.index for v in f.verts] for f in bm.faces], np.int64)
    bm.free()
    return out, faces


def write_obj(path, pos, tris, lines=(), header=""):
    """An OBJ of triangles (1-based), with optional ``l`` lines (seams) and header comments;
    coordinates to 0.1 mm (small files; the meshes are inputs, not results)."""
    rows = [f"# {h}" for h in header.splitlines()]
    rows += [f"v {p[0]:.4f} {p[1]:.4f} {p[2]:.4f}" for p in pos]
    rows += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in tris]
    rows += [f"l {a + 1} {b + 1}" for a, b in lines]
    Path(path).write_text("\n".join(rows) + "\n")


def read_seams(path) -> np.ndarray:
    """The ``l a b`` lines of an OBJ as 0-based vertex pairs (S, 2) (the panels' seams)."""
    pairs = [line.split()[1:3] for line in Path(path).read_text().splitlines()
             if line.startswith("l ")]
    return np.array(pairs, np.int64).reshape(-1, 2) - 1


def edge_range(pos, tris):
    e = np.unique(np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]),
                          1), axis=0)
    length = np.linalg.norm(pos[e[:, 0]] - pos[e[:, 1]], axis=1)
    return float(length.min()), float(np.median(length)), float(length.max())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edge", type=float, default=0.043, help="panels' target edge [m]")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    import bpy  # noqa: F401  (Blender as a module: bmesh comes with it)
    args.out.mkdir(parents=True, exist_ok=True)
    made = "made by scripts/make_garments.py (Blender's bmesh"
    pos, tris, seams = tee_panels(args.edge)
    write_obj(args.out / "tee_panels.obj", pos, tris, seams,
              f"A kimono tee's front and back panels, laid flat at y = -/+{PANEL_GAP} m, {made}).\n"
              "Lines (l a b) are the seams: side + underarm and shoulder + overarm; hem,\n"
              "neckline and cuffs are open. Metres, Z up, the body faces -Y.")
    parts = body_parts()
    for name, (p, t) in parts.items():
        write_obj(args.out / f"body_{name}.obj", p, t, header=(
            f"The mannequin's {name.replace('_', ' ')} in the A-pose: a closed convex hull, "
            f"{made}).\ntests/garments.py (body_pose) turns the body and lifts its arms."))
    print(f"panels: {len(pos)} vertices, {len(seams)} seam pairs; sewing ...", flush=True)
    x, report = sew(pos, tris, seams, parts)
    worn, wtris = weld(x, tris, seams)
    write_obj(args.out / "tee.obj", worn, wtris, header=(
        f"A kimono tee worn on the A-pose mannequin (body_*.obj): tee_panels.obj sewn round\n"
        f"the body by this project's solver (cotton, 36 frames) and its seams welded, {made}\n"
        "for the panels). Open borders: hem, neckline, cuffs."))
    fine, ftris = subdivided(worn, wtris)
    write_obj(args.out / "tee_6k.obj", fine, ftris, header=(
        "tee.obj with every triangle split in four by Blender's subdivide, by\n"
        "scripts/make_garments.py."))
    for name, (p, t) in (("panels", (pos, tris)), ("tee", (worn, wtris)),
                         ("tee_6k", (fine, ftris))):
        lo, mid, hi = (1e3 * v for v in edge_range(p, t))
        print(f"{name}: {len(p)} vertices, {len(t)} triangles, edges {lo:.1f} / {mid:.1f} / "
              f"{hi:.1f} mm (min / median / max)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
