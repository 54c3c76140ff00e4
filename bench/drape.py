"""Cusick drape test (BS 5058 / ISO 9073-9) of every shipped preset, with the implicit model.

A circular specimen of radius 0.15 m is clamped concentrically between two discs of radius
0.09 m and hangs under gravity. The drape coefficient is

    DC = (A_shadow − A_disc) / (A_specimen − A_disc)

with A_shadow the area of the specimen's vertical projection: 100 % for a specimen that stays
flat, 0 % for one whose free ring hangs straight down.

The harness:

- meshes the free ring (0.09 m < r < 0.15 m, plus two rings of clamped vertices inside it that
  hold the slope at the disc edge) with concentric rings of near-equilateral triangles, each
  ring rotated by a random angle and Delaunay-triangulated, so no direction and no fold count
  is preferred; the clamped inner disc is not meshed (it cannot move, and it lies inside the
  shadow in every case);
- pins every vertex with r ≤ 0.09 m (hard pins: what the clamping discs do);
- lifts the free ring by a small seeded random field of angular modes 2-9 (at most 1 mm) so that
  folds can choose where to form;
- drops it from flat with ``SolverSettings(model="implicit")`` and the preset's material, frame
  by frame (24 fps), until it rests (see ``RestCriterion``), at most ``RestCriterion.max_s``;
- rasterises the union of the projected triangles and the disc on a 1 mm grid (``shadow_area``)
  and counts the folds: the nodes, i.e. the local maxima of the shadow's radial extent versus
  angle with a prominence of at least ``FOLD_PROMINENCE_M`` (``count_folds``).

Run:  PYTHONPATH=. NUMBA_CACHE_DIR=$PWD/.cache/numba-py311 .venv/bin/python bench/drape.py
      [--presets cotton,silk] [--edges 0.005,0.01] [--seeds 0,1,2,3] [--out bench/results]

Each preset and resolution is tested on several specimens (random starts, ``--seeds``), as a
drapemeter result is a mean over specimens: one specimen's fold pattern moves its DC by a few
points (silk at 10 mm: 35.3 to 39.9 % over seeds 0-3), more than the mesh does.

It writes ``bench/results/drape.json`` (the table's figures and the run's settings; the docs
quote ``figures["<preset>_<edge mm>mm"]``), ``bench/results/drape.npz`` (settled positions and triangles per run, for
``scripts/render_drape.py``) and prints a markdown table.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

SPECIMEN_RADIUS = 0.15   # m (30 cm specimen)
DISC_RADIUS = 0.09       # m (18 cm support and clamping discs)
PIXEL = 1.0e-3           # m, shadow raster
FOLD_PROMINENCE_M = 3.0e-3  # a node must stand out 3 mm radially from its neighbouring troughs

# Published drape-coefficient bands (%), with the source key (presets/README.md, "Fabric drape
# measurements"; docs/references.md, "Fabric drape measurements").
BANDS = {
    "silk": (20.0, 40.0, "[MY03]"),
    "cotton": (60.0, 76.0, "[GLS91]"),
    "leather": (47.0, 70.0, "[MEM21]"),
    "denim": (70.0, 90.0, "[CUS68] heavy twill class"),
    "jersey": (20.0, 50.0, "provisional, [BAJ24] [SAN13]"),
    "rubber": (None, None, "no textile band: resolution and bending-length checks"),
    "wool": (40.0, 70.0, "wool suiting (no wool preset)"),
}


# ---------------------------------------------------------------- geometry and measurement

def specimen_mesh(edge: float, seed: int = 0, inner_rings: int = 2):
    """Flat ring mesh of the free part of a Cusick specimen.

    Concentric rings about √3/2·``edge`` apart from r = DISC_RADIUS − inner_rings·dr to
    SPECIMEN_RADIUS (the disc edge and the specimen edge are rings), each with
    round(2πr/edge) points rotated by a random angle, triangulated by Delaunay; triangles
    whose centroid falls in the unmeshed hole are dropped.

    Returns (positions (V, 3), triangles (T, 3) int64, pinned vertex indices).
    """
    from scipy.spatial import Delaunay
    rng = np.random.default_rng(seed)
    # ring spacing √3/2·edge: near-equilateral triangles between rings of spacing ``edge``
    n_rings = int(round((SPECIMEN_RADIUS - DISC_RADIUS) / (edge * np.sqrt(3.0) / 2.0)))
    dr = (SPECIMEN_RADIUS - DISC_RADIUS) / n_rings
    r0 = DISC_RADIUS - inner_rings * dr
    radii = np.concatenate([DISC_RADIUS - dr * np.arange(inner_rings, 0, -1),
                            DISC_RADIUS + dr * np.arange(0, n_rings + 1)])
    pts = []
    for r in radii:
        n = max(6, int(round(2.0 * np.pi * r / edge)))
        a = rng.uniform(0.0, 2.0 * np.pi) + 2.0 * np.pi * np.arange(n) / n
        pts.append(np.column_stack([r * np.cos(a), r * np.sin(a)]))
    xy = np.concatenate(pts)
    tri = Delaunay(xy).simplices.astype(np.int64)
    c = xy[tri].mean(axis=1)
    tri = tri[np.hypot(c[:, 0], c[:, 1]) > r0 + 0.25 * dr]
    # counter-clockwise seen from +z (normals up)
    a, b, cc = xy[tri[:, 0]], xy[tri[:, 1]], xy[tri[:, 2]]
    cross = (b[:, 0] - a[:, 0]) * (cc[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (cc[:, 0] - a[:, 0])
    tri[cross < 0] = tri[cross < 0][:, ::-1]
    pos = np.column_stack([xy, np.zeros(len(xy))])
    pinned = np.nonzero(np.hypot(xy[:, 0], xy[:, 1]) <= DISC_RADIUS + 1e-9)[0]
    return pos, tri, pinned.astype(np.int64)


def perturbation(pos: np.ndarray, seed: int = 0, amplitude: float = 1.0e-3) -> np.ndarray:
    """Seeded lift of the free ring: a random mix of angular modes 2-9, growing linearly from
    0 at the disc edge to at most ``amplitude`` at the rim (z offsets, shape (V,))."""
    rng = np.random.default_rng(1000 + seed)
    r = np.hypot(pos[:, 0], pos[:, 1])
    th = np.arctan2(pos[:, 1], pos[:, 0])
    f = np.zeros(len(pos))
    for m in range(2, 10):
        f += rng.normal() * np.cos(m * th + rng.uniform(0, 2 * np.pi))
    f /= np.max(np.abs(f))
    s = np.clip((r - DISC_RADIUS) / (SPECIMEN_RADIUS - DISC_RADIUS), 0.0, 1.0)
    return amplitude * s * f


def shadow_mask(positions: np.ndarray, triangles: np.ndarray, pixel: float = PIXEL,
                extent: float = SPECIMEN_RADIUS + 0.01, disc: float = DISC_RADIUS):
    """Boolean raster (pixel centres on a square grid of half-width ``extent``) of the union of
    the triangles' vertical projections and the support disc. Returns (mask, x_centres)."""
    n = int(np.ceil(2 * extent / pixel))
    xs = -extent + (np.arange(n) + 0.5) * pixel
    mask = np.zeros((n, n), dtype=bool)   # mask[iy, ix]
    X, Y = np.meshgrid(xs, xs)
    mask |= X * X + Y * Y <= disc * disc
    p = positions[:, :2]
    for t in triangles:
        a, b, c = p[t[0]], p[t[1]], p[t[2]]
        lo = np.floor((np.minimum(np.minimum(a, b), c) + extent) / pixel - 0.5).astype(int)
        hi = np.ceil((np.maximum(np.maximum(a, b), c) + extent) / pixel - 0.5).astype(int)
        lo = np.clip(lo, 0, n - 1)
        hi = np.clip(hi, 0, n - 1)
        if hi[0] < lo[0] or hi[1] < lo[1]:
            continue
        gx = xs[lo[0]:hi[0] + 1][None, :]
        gy = xs[lo[1]:hi[1] + 1][:, None]
        d = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        if abs(d) < 1e-18:
            continue
        w1 = ((gx - a[0]) * (c[1] - a[1]) - (gy - a[1]) * (c[0] - a[0])) / d
        w2 = ((b[0] - a[0]) * (gy - a[1]) - (b[1] - a[1]) * (gx - a[0])) / d
        eps = 1e-9
        inside = (w1 >= -eps) & (w2 >= -eps) & (w1 + w2 <= 1 + eps)
        mask[lo[1]:hi[1] + 1, lo[0]:hi[0] + 1] |= inside
    return mask, xs


def shadow_area(positions, triangles, pixel: float = PIXEL) -> float:
    """Area [m²] of the union of the projected triangles and the support disc."""
    mask, _ = shadow_mask(positions, triangles, pixel)
    return float(mask.sum()) * pixel * pixel


def drape_coefficient(positions, triangles, rest_positions=None, pixel: float = PIXEL) -> float:
    """Cusick drape coefficient in percent.

    A_specimen is the rasterised area of the flat rest mesh (``rest_positions``; default the
    nominal π·0.15²), so that a specimen that stays flat gives 100 % whatever the mesh's
    polygonal rim; A_disc = π·0.09²."""
    a_disc = np.pi * DISC_RADIUS ** 2
    if rest_positions is None:
        a_spec = np.pi * SPECIMEN_RADIUS ** 2
    else:
        a_spec = shadow_area(rest_positions, triangles, pixel)
    return 100.0 * (shadow_area(positions, triangles, pixel) - a_disc) / (a_spec - a_disc)


def radial_profile(positions, triangles, bins: int = 360, pixel: float = PIXEL):
    """Radial extent of the shadow [m] in ``bins`` equal angular sectors (the farthest covered
    pixel centre in each)."""
    mask, xs = shadow_mask(positions, triangles, pixel)
    iy, ix = np.nonzero(mask)
    x, y = xs[ix], xs[iy]
    r = np.hypot(x, y)
    k = ((np.arctan2(y, x) + np.pi) / (2 * np.pi) * bins).astype(int) % bins
    out = np.full(bins, DISC_RADIUS)
    np.maximum.at(out, k, r)
    return out


def count_folds(profile: np.ndarray, prominence: float = FOLD_PROMINENCE_M, smooth: int = 5):
    """Nodes of a drape: local maxima of the (circular) radial profile that stand out by at
    least ``prominence`` [m] from the troughs on both sides. The profile is first smoothed by a
    circular moving average of ``smooth`` sectors (pixel noise). Returns (count, angles [deg])."""
    from scipy.signal import find_peaks
    n = len(profile)
    k = np.ones(smooth) / smooth
    ext = np.concatenate([profile[-smooth:], profile, profile[:smooth]])
    sm = np.convolve(ext, k, mode="same")[smooth:smooth + n]
    # three copies so peaks near the seam are seen once with their true prominence
    tri = np.concatenate([sm, sm, sm])
    peaks, _ = find_peaks(tri, prominence=prominence)
    peaks = peaks[(peaks >= n) & (peaks < 2 * n)] - n
    return int(len(peaks)), (peaks + 0.5) * 360.0 / n - 180.0


# ---------------------------------------------------------------- the simulation

@dataclass
class RestCriterion:
    """When the specimen is at rest: the kinetic energy has stayed below ``ke_fraction`` of the
    free ring's weight × its overhang (m·g·0.06 m) for ``hold_s`` seconds, and the drape
    coefficient has changed by less than ``dc_tol`` percentage points over that time; checked
    only after ``min_s``. A run that does not rest by ``max_s`` is reported as not rested."""

    ke_fraction: float = 1.0e-5
    hold_s: float = 0.5
    dc_tol: float = 0.5
    min_s: float = 1.5
    max_s: float = 6.0


def run_drape(material, edge: float, seed: int = 0, fps: float = 24.0,
              rest: RestCriterion | None = None, verbose: bool = False) -> dict:
    """Drop one specimen and measure it; returns a dict of figures plus positions/triangles.
    ``wall_s`` includes the per-frame DC measurements of the rest check."""
    from solver import ClothSetup, PolyMesh, SimulationSpec, SolverSettings
    from solver.simulation import Simulation
    rest = rest or RestCriterion()
    pos, tris, pinned = specimen_mesh(edge, seed)
    start = pos.copy()
    start[:, 2] += perturbation(pos, seed)
    mesh = PolyMesh.from_faces(pos, tris)   # rest shape: flat
    max_frames = int(round(rest.max_s * fps))
    spec = SimulationSpec(
        cloth=ClothSetup(mesh=mesh, material=material, pin_indices=pinned),
        settings=SolverSettings(model="implicit"), frames=max_frames, fps=fps)
    t0 = time.perf_counter()
    sim = Simulation(spec)
    # start from the perturbed shape (the rest shape stays flat)
    sim.solver.x[:] = start
    free = np.ones(len(pos), bool)
    free[pinned] = False
    m_free = float(np.asarray(sim.model.mass)[free].sum())
    ke_ref = m_free * 9.81 * (SPECIMEN_RADIUS - DISC_RADIUS)
    hold = int(round(rest.hold_s * fps))
    history = []   # (t, ke, dc)
    rested = False
    while not sim.done:
        rep = sim.step()
        if rep is None:
            break
        t = rep.frame / fps
        # DC is measured every frame of the last hold_s before min_s and after it
        dc = (drape_coefficient(sim.solver.x, tris, pos) if t >= rest.min_s - rest.hold_s - 1e-9
              else None)
        history.append((t, rep.kinetic_energy_j, dc))
        if verbose and rep.frame % 12 == 0:
            print(f"  t={t:4.2f}s KE={rep.kinetic_energy_j:.3e} J dc={dc}", flush=True)
        if t >= rest.min_s and len(history) > hold:
            last = history[-hold - 1:]
            ke_ok = all(h[1] < rest.ke_fraction * ke_ref for h in last[1:])
            dcs = [h[2] for h in last if h[2] is not None]
            if ke_ok and len(dcs) == len(last) and max(dcs) - min(dcs) < rest.dc_tol:
                rested = True
                break
    wall = time.perf_counter() - t0
    x = np.array(sim.solver.x)
    dc = drape_coefficient(x, tris, pos)
    n_folds, fold_angles = count_folds(radial_profile(x, tris))
    e = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    e = np.unique(np.sort(e, axis=1), axis=0)
    mean_edge = float(np.linalg.norm(pos[e[:, 0]] - pos[e[:, 1]], axis=1).mean())
    return {
        "edge_m": edge, "mean_edge_m": mean_edge, "vertices": int(len(pos)),
        "triangles": int(len(tris)),
        "pinned": int(len(pinned)), "dc_percent": dc, "folds": n_folds,
        "fold_angles_deg": [round(float(a), 1) for a in fold_angles],
        "rested": rested, "settled_time_s": history[-1][0] if history else 0.0,
        "final_ke_j": history[-1][1] if history else None, "ke_ref_j": ke_ref,
        "lowest_z_m": float(x[:, 2].min()), "wall_s": wall, "error": sim.result.error,
        "positions": x, "triangles_array": tris, "rest_positions": pos,
    }


# ---------------------------------------------------------------- command line

def in_band(name, dc):
    lo, hi, _ = BANDS.get(name, (None, None, ""))
    return None if lo is None else bool(lo <= dc <= hi)


def main(argv=None):
    from solver import list_presets, load_preset
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default=None, help="comma-separated (default: all shipped)")
    ap.add_argument("--edges", default="0.005,0.01", help="edge lengths [m], comma-separated")
    ap.add_argument("--seeds", default="0,1,2,3",
                    help="specimens per preset and resolution, comma-separated random starts "
                         "(the table gives their mean; the first one's shapes are saved)")
    ap.add_argument("--out", default="bench/results")
    ap.add_argument("--name", default="drape", help="result file name, without suffix")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--commit", default=None, help="record this solver commit (for a run from an "
                    "exported tree outside git)")
    args = ap.parse_args(argv)
    names = args.presets.split(",") if args.presets else list(list_presets())
    edges = [float(e) for e in args.edges.split(",")]
    seeds = [int(x) for x in args.seeds.split(",")]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--short", "solver"], capture_output=True,
                               text=True, check=True).stdout.split("\n")
        dirty = [d for d in dirty if d.strip()]
    except Exception:  # noqa: BLE001 - outside a git checkout
        commit, dirty = "unknown", []
    if args.commit:
        commit = args.commit
    runs, arrays = [], {}
    # compile (or load) the numba kernels first, so that no run's wall time includes them
    run_drape(load_preset(names[0]), 0.03, rest=RestCriterion(min_s=0.1, max_s=0.1))
    for name in names:
        mat = load_preset(name)
        for edge in edges:
            for seed in seeds:
                print(f"{name} edge {edge * 1000:.0f} mm seed {seed} ...", flush=True)
                r = run_drape(mat, edge, seed, verbose=args.verbose)
                shapes = [r.pop(k) for k in ("positions", "triangles_array", "rest_positions")]
                if seed == seeds[0]:
                    key = f"{name}_{edge * 1000:.0f}mm"
                    for suffix, a in zip(("_positions", "_triangles", "_rest"), shapes):
                        arrays[key + suffix] = a
                r.update(preset=name, seed=seed, in_band=in_band(name, r["dc_percent"]))
                runs.append(r)
                print(f"  DC {r['dc_percent']:.1f} %, folds {r['folds']}, rested {r['rested']} "
                      f"at {r['settled_time_s']:.2f} s, {r['wall_s']:.1f} s wall", flush=True)
    summary = summarise(runs)
    table = markdown_table(summary, names, edges)
    print(table)
    os.makedirs(args.out, exist_ok=True)
    doc = {"date": _dt.date.today().isoformat(), "commit": commit, "model": "implicit", "fps": 24.0,
           "specimen_radius_m": SPECIMEN_RADIUS, "disc_radius_m": DISC_RADIUS,
           "pixel_m": PIXEL, "fold_prominence_m": FOLD_PROMINENCE_M,
           "rest_criterion": RestCriterion().__dict__, "seeds": seeds,
           "bands": {k: list(v) for k, v in BANDS.items()}, "runs": runs, "summary": summary,
           "figures": {f"{r['preset']}_{r['edge_m'] * 1000:.0f}mm": r for r in summary},
           "table": table,
           "machine": "shared 2-core VM (busy: wall times are indicative)",
           "uncommitted_solver_changes": dirty}
    with open(os.path.join(args.out, f"{args.name}.json"), "w") as fh:
        json.dump(doc, fh, indent=1)
    np.savez_compressed(os.path.join(args.out, f"{args.name}.npz"), **arrays)
    return runs


def summarise(runs) -> list[dict]:
    """One record per preset and resolution over its specimens (seeds): DC mean, standard
    deviation, range, every specimen in band, fold counts, rest times and wall time."""
    groups: dict = {}
    for r in runs:
        groups.setdefault((r["preset"], r["edge_m"]), []).append(r)
    out = []
    for (name, edge), rs in groups.items():
        dc = np.array([r["dc_percent"] for r in rs])
        out.append({
            "preset": name, "edge_m": edge, "seeds": [r["seed"] for r in rs],
            "dc_mean": float(dc.mean()), "dc_sd": float(dc.std(ddof=1)) if len(dc) > 1 else 0.0,
            "dc_min": float(dc.min()), "dc_max": float(dc.max()),
            "mean_in_band": in_band(name, float(dc.mean())),
            "all_in_band": None if rs[0]["in_band"] is None else all(r["in_band"] for r in rs),
            "folds": [r["folds"] for r in rs], "rested": all(r["rested"] for r in rs),
            "settled_time_s": max(r["settled_time_s"] for r in rs),
            "wall_s": sum(r["wall_s"] for r in rs)})
    return out


def markdown_table(summary, names, edges):
    """Mean DC (range over the specimens) per resolution, the change of the mean between two
    resolutions, folds, the latest rest time and the total wall time."""
    by = {(r["preset"], r["edge_m"]): r for r in summary}
    head = ["preset", "band (source)"] + [f"DC {e * 1000:.0f} mm, mean (range)" for e in edges]
    if len(edges) == 2:
        head.append("change of mean (pp)")
    head += ["folds", "rested by (s)", "wall (s)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n in names:
        lo, hi, src = BANDS.get(n, (None, None, ""))
        band = f"{lo:.0f}–{hi:.0f} % {src}" if lo is not None else src
        rs = [by.get((n, e)) for e in edges]
        row = [n, band]
        for r in rs:
            mark = "" if r is None or r["all_in_band"] in (None, True) else " (out)"
            row.append("—" if r is None else
                       f"{r['dc_mean']:.1f} % ({r['dc_min']:.1f}–{r['dc_max']:.1f}){mark}")
        if len(edges) == 2:
            row.append("—" if None in rs else f"{abs(rs[0]['dc_mean'] - rs[1]['dc_mean']):.1f}")
        row.append(" / ".join("—" if r is None else
                              f"{min(r['folds'])}–{max(r['folds'])}" for r in rs))
        row.append(" / ".join("—" if r is None else
                              (f"{r['settled_time_s']:.2f}" + ("" if r["rested"] else " (not)"))
                              for r in rs))
        row.append(" / ".join("—" if r is None else f"{r['wall_s']:.0f}" for r in rs))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
