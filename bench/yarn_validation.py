"""Kaldor's validation set-up (§4.4) turned into numbers: stockinette, garter and 2×2 rib of the
same stitch count, wool worsted (docs/yarn.md, "Validation").

For each pattern the swatch is generated, relaxed (Kaldor §7.1, 20 ms) and then

- dims: its size after relaxation, from the loop centroids: width along the course (first to
  last loop of a course, times S/(S−1)) and height along the wale (likewise), also measured
  along the fabric (Swatch.fabric_size: a rolled edge does not shorten it); the course spacing
  of the interior (along the fabric, between the loops of neighbouring courses, the edge
  courses and columns left out) and the tilt of the interior loops' planes out of the fabric
  about the course direction (± alternating by course: garter's ridges); the ratios
  rib/stockinette width and garter/stockinette height are Kaldor's "rib compresses along the
  course, garter along the wale";
- relax_series: garter and stockinette relaxed for longer than the rest state's 20 ms (the
  shrink over the same first 10 ms), the same measures: how far garter's compression goes;
- stress: stockinette and garter with the relaxed yarn's bending stress kept (their rest
  curvature scaled by 1 − ``--stress``: 1 is a straight yarn at rest, as the yarn is before it
  is knitted): the curl floating and on a table as below, and the free swatch's size and rms
  speed over ``--stress-time`` (is it still a rest state?), also with wool's friction μ = 0.3;
- curl: laid face up on a table (plane z = 0 under it, μ = 0.5) under gravity for ``--settle``
  seconds, and also floating without gravity for the same time; the curl is measured on the
  loop centroids of the edge loops: on the table, the height of the side columns and of the
  top/bottom courses above the table (a flat swatch: the yarn's own thickness, ~1 r); floating,
  their offset along the face normal from the swatch's middle (its sign says which way an edge
  rolls) and the rolled angle atan(offset / one loop pitch);
- stretch: one edge pinned, the opposite edge pinned and moved (Kaldor's clamp), no gravity,
  static: the clamp steps to each strain level and holds; the force is averaged at the end of
  the hold, with viscous damping instead of the non-rigid filter (the filter removes 60 % of
  every region's non-rigid velocity per 1/11800 s, a drag proportional to the strain rate:
  pulled steadily at 0.1 m/s it was most of the measured force, ~50 mN); the clamp force [N]
  from the yarn's contact, length-constraint and bending forces on the moved points
  (YarnSolver.pin_reaction), along the course and along the wale;
- with the stretch, for the ``--unedged`` patterns (garter): the course stretch of a swatch
  made without its cast-on and bind-off yarns, to ``COURSE`` + 0.2 strain (what the edge
  yarns, glued along the course, hold back);
- throughout: yarn length change and the closest non-neighbouring pair (in diameters).

    NUMBA_NUM_THREADS=2 .venv/bin/python bench/yarn_validation.py --size 10 10 --out X.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solver.params import SolverSettings, YarnParams
from solver.spec import Collider
from solver.yarn import (YarnColliders, YarnSolver, build_yarn_model, knit_swatch, relax_setup,
                         swatch_setup)
from solver.solvers.base import FrameTargets
from solver.yarn.dynamics import Stepping, YarnStepError

W, H = 5.6e-3, 4.2e-3          # worsted gauge: stitch width and course height [m]
PATTERNS = ("stockinette", "garter", "rib2x2")


def centroids(x, loops, n_loops):
    """(n_loops, 3) mean position of each loop's points."""
    c = np.zeros((n_loops, 3))
    np.add.at(c, loops, x)
    return c / np.bincount(loops, minlength=n_loops)[:, None]


def dims(c, S, C):
    """(width along the course, height along the wale) [m] from loop centroids (C, S, 3)."""
    width = np.mean(c[:, -1, 0] - c[:, 0, 0]) * S / (S - 1)
    height = np.mean(c[-1, :, 1] - c[0, :, 1]) * C / (C - 1)
    return float(width), float(height)


def shape(sw, x):
    """The dims of the swatch ``sw`` at x (see the module docstring) as a dict [m, deg]."""
    c = sw.loop_centroids(x)
    C, S = c.shape[:2]
    width, height = dims(c, S, C)
    fabric_w, fabric_h = sw.fabric_size(x)
    tilt = sw.loop_tilt(x)
    odd, even = tilt[1:-1:2, 1:-1].mean(), tilt[2:-1:2, 1:-1].mean()
    return dict(width_m=width, height_m=height, fabric_width_m=fabric_w,
                fabric_height_m=fabric_h, course_spacing_m=sw.course_spacing(x),
                loop_tilt_deg=[float(odd), float(even)])


def relaxed_swatch(pattern, S, C, p, edges=True, duration=0.02):
    """(Swatch, its YarnSetup at rest, Relaxed, seconds the relaxation took); the shrink over
    the first 10 ms (Kaldor's relaxation of 20 ms shrinks over its first half)."""
    sw = knit_swatch(pattern, S, C, W, H, p.radius, edges=edges)
    t0 = time.perf_counter()
    setup, rel = relax_setup(swatch_setup(sw, p), duration=duration, ramp=0.01 / duration)
    return sw, setup, rel, time.perf_counter() - t0


def _solver(setup, gravity, pins=(), floor=None, stepping=Stepping()):
    """A YarnSolver of the relaxed ``setup`` with ``pins`` held, on a table at ``floor``."""
    setup = dataclasses.replace(setup, pin_indices=np.asarray(pins, np.int64))
    colliders = None
    if floor is not None:
        table = Collider("plane", point=np.array([0.0, 0.0, floor]),
                         normal=np.array([0.0, 0.0, 1.0]), thickness=0.0, friction=0.5)
        colliders = YarnColliders([table], setup.yarn.radius, 24.0, 1)
    return YarnSolver(build_yarn_model(setup), SolverSettings(model="yarn"), gravity=gravity,
                      colliders=colliders, stepping=stepping)


def guarantees(sim, length0, p):
    return {"length_change": float(abs(sim.yarn_lengths()[0] / length0 - 1)),
            "closest_diameters": float(sim.stats.min_clearance / (2 * p.radius)),
            "refinements": sim.stats.refinements,
            "stability_refinements": sim.stats.stability_refinements}


def curl(sw, setup, S, C, p, settle, table):
    x = setup.positions
    floor = None
    if table:
        floor = float(x[:, 2].min() - p.radius - 1e-4)
    sim = _solver(setup, (0.0, 0.0, -9.81 if table else 0.0), floor=floor)
    L0 = sim.yarn_lengths()[0]
    sim.advance(settle)
    c = centroids(sim.x, sw.loops, S * C).reshape(C, S, 3)
    out = guarantees(sim, L0, p)
    if table:
        z = c[..., 2] - floor - p.radius          # loop centroid above a yarn lying flat
        out.update(side_height_mm=1e3 * float(np.r_[z[:, 0], z[:, -1]].mean()),
                   topbottom_height_mm=1e3 * float(np.r_[z[0], z[-1]].mean()),
                   middle_height_mm=1e3 * float(z[1:-1, 1:-1].mean()),
                   max_height_mm=1e3 * float(z.max()))
    else:
        # the face normal of the middle (its mean plane), pointing to the face (+z at layout)
        mid = c[C // 4:C - C // 4, S // 4:S - S // 4].reshape(-1, 3)
        centre = mid.mean(axis=0)
        _, _, vt = np.linalg.svd(mid - centre)
        n = vt[2] * np.sign(vt[2, 2])
        off = (c - centre) @ n
        side = float(np.r_[off[C // 4:C - C // 4, 0], off[C // 4:C - C // 4, -1]].mean())
        tb = float(np.r_[off[0, S // 4:S - S // 4], off[-1, S // 4:S - S // 4]].mean())
        out.update(side_offset_mm=1e3 * side, topbottom_offset_mm=1e3 * tb,
                   side_angle_deg=float(np.degrees(np.arctan2(side - float(np.r_[
                       off[C // 4:C - C // 4, 1], off[C // 4:C - C // 4, -2]].mean()), W))),
                   topbottom_angle_deg=float(np.degrees(np.arctan2(tb - float(np.r_[
                       off[1, S // 4:S - S // 4], off[-2, S // 4:S - S // 4]].mean()), H))))
    return out, sim.x


def stressed(sw, setup, S, C, p, share, settle, free_time):
    """The relaxed ``setup`` with ``share`` of its bending stress kept (rest curvature × (1 −
    share)): curl floating and on a table after ``settle`` s, and floating for ``free_time`` s,
    the change of its size along the fabric and its rms speed over the last 0.1 s."""
    setup = dataclasses.replace(setup, rest_curvature=setup.rest_curvature * (1.0 - share))
    out = {}
    for table in (False, True):
        out["table" if table else "floating"] = curl(sw, setup, S, C, p, settle, table)[0]
    sim = _solver(setup, (0.0, 0.0, 0.0))
    size0 = sw.fabric_size(setup.positions)
    sim.advance(free_time - 0.1)
    before = sim.x.copy()
    sim.advance(0.1)
    size = sw.fabric_size(sim.x)
    out.update(free_time_s=free_time, free_width_change=size[0] / size0[0] - 1,
               free_height_change=size[1] / size0[1] - 1,
               free_speed_mm_s=1e3 * float(np.sqrt(((sim.x - before) ** 2).sum(axis=1).mean())
                                           / 0.1))
    return out


def stretch(sw, setup, S, C, p, direction, max_strain, step, ramp, hold, damping):
    """Force–extension by hold-and-measure: the clamp moves to each strain level (every
    ``step``) at a steady speed over ``ramp`` seconds (a moving hard pin), then holds for ``hold`` seconds; the force is the mean over
    the last fifth of the hold (the static force; damping only speeds the settling).

    Strain 0 is the relaxed swatch (Kaldor's rest state, relaxed with 1/1000 of the bending):
    with the simulation's full bending it is already under some tension there, which the
    curve's first point (held at strain 0) shows."""
    x = setup.positions
    axis = 0 if direction == "course" else 1
    # the clamps hold whole loops: the first and last stitch column (with the edge half-loops)
    # along the course, the first and last course along the wale
    col, row = sw.loops % S, sw.loops // S
    fixed = np.nonzero(col == 0 if axis == 0 else row == 0)[0]
    pulled = np.nonzero(col == S - 1 if axis == 0 else row == C - 1)[0]
    sim = _solver(setup, (0.0, 0.0, 0.0), pins=np.r_[fixed, pulled],
                  stepping=Stepping(damping_rate=damping))
    L0 = sim.yarn_lengths()[0]
    span0 = float(x[pulled, axis].mean() - x[fixed, axis].mean())
    hard = sim.model.hard_pins
    is_pulled = np.isin(hard, pulled)
    no_soft = np.zeros((0, 3))
    n_hold = max(5, round(hold / sim.h))
    curve = []
    failed = None
    for level in np.arange(0.0, max_strain + 1e-9, step):
        target = span0 * (1 + level)
        now = float(sim.x[pulled, axis].mean() - sim.x[fixed, axis].mean())
        forces = []
        try:
            # the clamp moves at a finite speed, as the model's moving pins do (linearly over
            # the ramp): a step that is halved halves the clamp's move with it
            start = sim.x[hard].copy()
            end = start.copy()
            end[is_pulled, axis] += target - now
            sim.step_frame(sim.time, ramp, FrameTargets(start, end, no_soft, no_soft))
            for k in range(n_hold):
                sim.step()
                if k >= n_hold - n_hold // 5:
                    forces.append(-float(sim.pin_reaction(pulled)[axis]))
        except YarnStepError as err:   # the model refuses a step: say at which level, and why
            failed = {"strain": round(float(level), 4), "error": str(err)}
            break
        curve.append((round(float(level), 4), float(np.mean(forces)), float(np.std(forces))))
    out = guarantees(sim, L0, p)
    out.update(span_m=span0, curve=curve, failed=failed)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, nargs=2, default=[10, 10], metavar=("S", "C"))
    ap.add_argument("--parts", nargs="+",
                    default=["dims", "curl", "stretch", "relax_series", "stress"])
    ap.add_argument("--patterns", nargs="+", default=list(PATTERNS))
    ap.add_argument("--settle", type=float, default=0.1, help="curl settling time [s]")
    ap.add_argument("--max-strain", type=float, nargs=2, default=[0.4, 0.2],
                    metavar=("COURSE", "WALE"))
    ap.add_argument("--strain-step", type=float, default=0.05)
    ap.add_argument("--ramp", type=float, default=0.004, help="clamp move per level [s]")
    ap.add_argument("--hold", type=float, default=0.025, help="hold per level [s]")
    ap.add_argument("--damping", type=float, default=300.0, help="stretch damping [1/s]")
    ap.add_argument("--relax-series", type=float, nargs="+", default=[0.04, 0.08],
                    help="relaxation times [s] of the relax_series part")
    ap.add_argument("--stress", type=float, default=1.0,
                    help="share of the relaxed bending stress kept in the stress part")
    ap.add_argument("--stress-time", type=float, default=1.0,
                    help="free floating time [s] of the stress part")
    ap.add_argument("--unedged", nargs="*", default=["garter"],
                    help="patterns also stretched along the course without edge yarns")
    ap.add_argument("--out", type=Path, default=None, help="JSON results")
    ap.add_argument("--positions", type=Path, default=None,
                    help="NPZ of the relaxed and table-settled positions (for rendering)")
    args = ap.parse_args()
    S, C = args.size
    p = YarnParams()
    res = {"size": [S, C], "bend_stiffness": p.bend_stiffness, "patterns": {}}
    arrays = {}
    for pattern in args.patterns:
        sw, setup, rel, t_relax = relaxed_swatch(pattern, S, C, p)
        r = res["patterns"][pattern] = {"relax_s": t_relax,
                                        "relax_closest_diameters":
                                            float(rel.stats.min_clearance / (2 * p.radius))}
        arrays[f"{pattern}_relaxed"] = setup.positions
        if "dims" in args.parts:
            r.update(shape(sw, setup.positions))
            print(f"{pattern:12s} relaxed {1e3 * r['width_m']:.1f} x {1e3 * r['height_m']:.1f} mm"
                  f", along the fabric {1e3 * r['fabric_width_m']:.1f} x "
                  f"{1e3 * r['fabric_height_m']:.1f} mm, courses {1e3 * r['course_spacing_m']:.2f}"
                  f" mm apart, loops tilted {r['loop_tilt_deg'][0]:.0f}/"
                  f"{r['loop_tilt_deg'][1]:.0f} deg (closest "
                  f"{r['relax_closest_diameters']:.2f} D, {t_relax:.0f} s)", flush=True)
        if "curl" in args.parts:
            for table in (True, False):
                t0 = time.perf_counter()
                out, xs = curl(sw, setup, S, C, p, args.settle, table)
                out["wall_s"] = time.perf_counter() - t0
                r["table" if table else "floating"] = out
                arrays[f"{pattern}_{'table' if table else 'floating'}"] = xs
                print(f"{pattern:12s} {'table' if table else 'floating':8s} "
                      + " ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
                                 for k, v in out.items()), flush=True)
        if "stretch" in args.parts:
            for direction, max_strain in zip(("course", "wale"), args.max_strain):
                t0 = time.perf_counter()
                out = stretch(sw, setup, S, C, p, direction, max_strain, args.strain_step,
                              args.ramp, args.hold, args.damping)
                out["wall_s"] = time.perf_counter() - t0
                r[f"stretch_{direction}"] = out
                pts = " ".join(f"{s:.2f}:{f * 1e3:.2f}" for s, f, _ in out["curve"])
                print(f"{pattern:12s} stretch {direction:6s} strain:force[mN] {pts}  "
                      f"closest {out['closest_diameters']:.2f} D  dL {out['length_change']:.1e}"
                      f"  {out['wall_s']:.0f} s"
                      + (f"  FAILED at {out['failed']['strain']:.2f}: {out['failed']['error']}"
                         if out["failed"] else ""), flush=True)
        if "stretch" in args.parts and pattern in args.unedged:
            usw, usetup, _, _ = relaxed_swatch(pattern, S, C, p, edges=False)
            t0 = time.perf_counter()
            out = stretch(usw, usetup, S, C, p, "course", args.max_strain[0] + 0.2,
                          args.strain_step, args.ramp, args.hold, args.damping)
            out["wall_s"] = time.perf_counter() - t0
            r["stretch_course_unedged"] = out
            pts = " ".join(f"{s:.2f}:{f * 1e3:.2f}" for s, f, _ in out["curve"])
            print(f"{pattern:12s} stretch course without edges strain:force[mN] {pts}"
                  + (f"  FAILED at {out['failed']['strain']:.2f}" if out["failed"] else ""),
                  flush=True)
        if "relax_series" in args.parts and pattern in ("stockinette", "garter"):
            r["relax_series"] = []
            for duration in args.relax_series:
                lsw, lsetup, _, t = relaxed_swatch(pattern, S, C, p, duration=duration)
                row = dict(duration_s=duration, **shape(lsw, lsetup.positions), relax_s=t)
                r["relax_series"].append(row)
                print(f"{pattern:12s} relaxed {1e3 * duration:.0f} ms: along the fabric "
                      f"{1e3 * row['fabric_width_m']:.1f} x {1e3 * row['fabric_height_m']:.1f} "
                      f"mm, courses {1e3 * row['course_spacing_m']:.2f} mm apart, loops tilted "
                      f"{row['loop_tilt_deg'][0]:.0f}/{row['loop_tilt_deg'][1]:.0f} deg",
                      flush=True)
        if "stress" in args.parts and pattern in ("stockinette", "garter"):
            frictions = (0.0, 0.3) if pattern == "stockinette" else (0.0,)
            for mu in frictions:
                fsw, fsetup = sw, setup
                if mu:
                    fsw, fsetup, _, _ = relaxed_swatch(pattern, S, C,
                                                       dataclasses.replace(p, friction=mu))
                t0 = time.perf_counter()
                out = stressed(fsw, fsetup, S, C, fsetup.yarn, args.stress, args.settle,
                               args.stress_time)
                out.update(share=args.stress, friction=mu, wall_s=time.perf_counter() - t0)
                r["stress" if not mu else "stress_friction"] = out
                print(f"{pattern:12s} stress {args.stress:g} mu {mu:g}: floating sides "
                      f"{out['floating']['side_angle_deg']:.0f} top/bottom "
                      f"{out['floating']['topbottom_angle_deg']:.0f} deg; table sides "
                      f"{out['table']['side_height_mm']:.1f} top/bottom "
                      f"{out['table']['topbottom_height_mm']:.1f} mm; free {args.stress_time:g} "
                      f"s: {100 * out['free_width_change']:+.1f} % x "
                      f"{100 * out['free_height_change']:+.1f} %, "
                      f"{out['free_speed_mm_s']:.1f} mm/s", flush=True)
        arrays[f"{pattern}_offsets"] = sw.yarn_offsets
    if "dims" in args.parts and {"stockinette", "garter", "rib2x2"} <= set(res["patterns"]):
        pr = res["patterns"]
        res["rib_over_stockinette_width"] = pr["rib2x2"]["width_m"] / pr["stockinette"]["width_m"]
        res["garter_over_stockinette_height"] = (pr["garter"]["height_m"]
                                                 / pr["stockinette"]["height_m"])
        res["garter_over_stockinette_fabric_height"] = (pr["garter"]["fabric_height_m"]
                                                        / pr["stockinette"]["fabric_height_m"])
        res["garter_over_stockinette_course_spacing"] = (
            pr["garter"]["course_spacing_m"] / pr["stockinette"]["course_spacing_m"])
        if "relax_series" in args.parts:
            res["relax_series_garter_over_stockinette_course_spacing"] = [
                [g["duration_s"], g["course_spacing_m"] / k["course_spacing_m"]]
                for g, k in zip(pr["garter"]["relax_series"], pr["stockinette"]["relax_series"])]
        print(f"rib/stockinette width {res['rib_over_stockinette_width']:.3f}  "
              f"garter/stockinette height {res['garter_over_stockinette_height']:.3f} "
              f"(along the fabric {res['garter_over_stockinette_fabric_height']:.3f}, "
              f"course spacing {res['garter_over_stockinette_course_spacing']:.3f}; relaxed "
              f"longer {res.get('relax_series_garter_over_stockinette_course_spacing')})")
    if args.out:
        args.out.write_text(json.dumps(res, indent=1))
    if args.positions:
        np.savez_compressed(args.positions, radius=p.radius, **arrays)


if __name__ == "__main__":
    main()
