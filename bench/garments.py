"""The garment benchmark: a tee as a modelling tool leaves it, through our solver and through
Blender's built-in Cloth, in one process.

Scenes (tests/garments.py; cotton, self-collision on; the 5.6k-vertex ``tee_6k`` unless
``--garment``):

* ``hung``: held at its shoulders by a hanger (pins);
* ``pile``: dropped 5 cm onto the floor, where it falls into a pile;
* ``worn``: on a faceted mannequin that turns by 60° and lifts its arms by 50° (an animated
  mesh collider of four rigid parts);
* ``posed``: the same, with the arms posed 8° higher than the tee was made on, so they start
  through the sleeves. Ours runs it together with its clean start (``ours_clean_start``:
  tests/garments.py's ``raised``, the tee as made and the arms rising by 58° to the same last
  pose), a frame of each in turn so both see the same load; ``against_clean_start`` compares
  them frame by frame (the issue's "no frame slower than twice a clean start's").

Runs per scene, each capped at ``--budget`` seconds (ours), ``--blender-budget`` (Blender's
defaults) or ``--matched-budget`` (its matched setting); a run that does not finish reports the
frames it did. The defaults (24 frames; 300, 100 and 40 s) keep the whole run near 25 minutes
on the shared 2-core machine:

* ``ours``: the implicit model with its defaults (the bake's settings);
* ``blender_default``: Blender's Cloth modifier with its defaults (Cotton, quality 5) and
  self-collision on; the body parts and the floor carry Collision modifiers with theirs, the body
  keyframed part by part to the same rigid poses every frame, the hung tee's pins a pin group;
* ``blender_matched``: the same at the quality and stiffness that bench/headline.py's search
  matched to our strain (``--matched-from``): its hanging grid's for the hung tee, its
  self-colliding drape's for the others (the setting that came closest to 5 % there; a search
  on the garment itself would take hours).

Measured for every run by the same code, outside the timed part: seconds per frame (ours: the
simulation's step, untangling of the posed start included; Blender's: ``frame_set``), steps
per frame (ours: the implicit steps the frame took; Blender's: its quality), crossing pairs
in every frame by one independent check (collision/pipeline.py's ``report``: intersecting cloth
triangle pairs sharing no vertex, plus cloth/body triangle pairs; apart, the deepest vertex
inside the body or below the floor), and the worst edge strain over frames against the tee as modelled (the
mesh's own edges). Ours also reports how often each fail-safe after the step fired.

Targets (docs/benchmarks.md, "Garments"): the pile's median steps per frame ≤ 4, its median
frame ≤ 4 × the hung tee's, zero crossing pairs in every frame, worst strain ≤ 1.1 × cotton's 5 %.

    .venv/bin/python bench/garments.py --json bench/results/garments.json
    .venv/bin/python bench/garments.py --garment tee --frames 12 --budget 60 --only pile
    .venv/bin/python bench/garments.py --only posed --merge --json bench/results/garments.json

``--merge`` re-runs only the scenes named by ``--only`` and keeps the other scenes of the
existing ``--json`` file (it refuses a file measured with another garment, frame count or
budget). Every scene row carries its own ``run`` (date, commit, load before and after that
scene), so a merged file says which scene ran when and at which load; the file's top-level
``load_before``/``load_after`` stay those of the last full run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import garments  # noqa: E402
from record import provenance, save_json  # noqa: E402
from solver.collision.pipeline import CollisionHandler  # noqa: E402
from solver.model import build_model  # noqa: E402
from solver.simulation import Simulation  # noqa: E402

SCENES = ("hung", "pile", "worn", "posed")
STRAIN_LIMIT = 0.05                # cotton's (presets/cotton)
TARGET_STEPS = 4
TARGET_PILE_OVER_HUNG = 4.0
TARGET_STRAIN = 1.1 * STRAIN_LIMIT
FLOOR_SIZE = 4.0                   # [m] Blender's floor quad


# ------------------------------------------------------------------ independent measurements

def mesh_edges(faces) -> np.ndarray:
    """The polygon mesh's own edges (E, 2), each once."""
    sides = [np.stack([f, np.roll(f, -1)], axis=1) for f in faces]
    e = np.sort(np.concatenate(sides), axis=1)
    return np.unique(e, axis=0)


class Checks:
    """The same measurements for either solver's positions of one scene."""

    def __init__(self, spec):
        self.spec = spec
        mesh = spec.cloth.mesh
        self.rest = mesh.positions
        self.edges = mesh_edges(mesh.faces())
        self.rest_len = np.linalg.norm(self.rest[self.edges[:, 1]] - self.rest[self.edges[:, 0]],
                                       axis=1)
        self.handler = CollisionHandler(build_model(spec.cloth), spec.colliders, True, spec.fps,
                                        spec.frames)

    def strain(self, x: np.ndarray) -> float:
        """Largest edge strain of positions x (V, 3) against the garment as modelled."""
        e = self.edges
        return float(np.max(np.linalg.norm(x[e[:, 1]] - x[e[:, 0]], axis=1) / self.rest_len) - 1)

    def frame(self, x: np.ndarray, frame: int) -> dict:
        """Strain and crossing checks of positions x at frame ``frame`` (0: the start)."""
        r = self.handler.report(np.ascontiguousarray(x, dtype=np.float64),
                                self.handler.colliders.state(frame))
        return {"strain": self.strain(x), "self_intersections": r.self_intersections,
                "collider_crossings": r.collider_crossings,
                "penetration_mm": 1e3 * r.deepest_penetration_m}


def summary(seconds, steps, checks, frames, extra=None) -> dict:
    """One run's figures from its per-frame seconds, steps and checks (frames 1..k)."""
    k = len(seconds)
    crossing = [c["self_intersections"] + c["collider_crossings"] for c in checks]
    out = {
        "frames": k, "frames_asked": frames, "finished": k == frames,
        "seconds": [round(s, 4) for s in seconds],
        "median_s": float(np.median(seconds)) if k else None,
        "worst_s": float(max(seconds)) if k else None,
        "total_s": float(sum(seconds)),
        "steps": [int(s) for s in steps],
        "median_steps": float(np.median(steps)) if k else None,
        "self_intersections": [c["self_intersections"] for c in checks],
        "collider_crossings": [c["collider_crossings"] for c in checks],
        "crossing_pairs_max": int(max(crossing, default=0)),
        "frames_with_crossings": int(sum(c > 0 for c in crossing)),
        "penetration_mm_max": float(max((c["penetration_mm"] for c in checks), default=0.0)),
        "worst_strain": float(max((c["strain"] for c in checks), default=0.0)),
        "strain": [round(c["strain"], 5) for c in checks],
    }
    out.update(extra or {})
    return out


# ------------------------------------------------------------------ our solver

FAILSAFES = ("proximity_pushes", "continuous_collisions", "impact_zones", "strain_rounds",
             "solve_contacts", "contact_sets")


class OursRun:
    """One scene through our solver, frame by frame, measured as ``run_ours`` reports it."""

    def __init__(self, spec):
        self.spec, self.checks, self.sim, self.rows = spec, Checks(spec), Simulation(spec), []

    def step(self) -> bool:
        """The next frame; False when there is none (finished or blown up)."""
        if self.sim.done or self.sim.step() is None:
            return False
        self.rows.append(self.sim.result.frames[-1])
        return True

    def summary(self) -> dict:
        rows, x = self.rows, self.sim.result.positions
        measured = [self.checks.frame(x[i + 1], i + 1) for i in range(len(rows))]
        extra = {"error": self.sim.result.error,
                 "retries": int(sum(r.retries for r in rows)),
                 "untangled": int(rows[0].untangled) if rows else 0}
        for name in FAILSAFES:  # how often each fail-safe fired, where the report has it
            if rows and hasattr(rows[0], name):
                extra[name] = [int(getattr(r, name)) for r in rows]
        return summary([r.wall_time_s for r in rows], [r.substeps for r in rows], measured,
                       self.spec.frames, extra)


def run_ours(*specs, budget: float) -> list[dict]:
    """Step the scenes to their ends, a frame of each in turn so that their frames share the
    machine's load, or until ``budget`` seconds per scene have passed."""
    runs = [OursRun(spec) for spec in specs]
    start, active = time.perf_counter(), list(runs)
    while active and time.perf_counter() - start < budget * len(runs):
        active = [r for r in active if r.step()]
    return [r.summary() for r in runs]


# ------------------------------------------------------------------ Blender's Cloth

def rigid_poses(positions: np.ndarray) -> list[np.ndarray]:
    """4 × 4 transforms taking a rigid part's first frame onto each of its frames (Kabsch);
    positions (F, V, 3)."""
    p0 = positions[0]
    c0 = p0.mean(axis=0)
    out = []
    for p in positions:
        c = p.mean(axis=0)
        u, _, vt = np.linalg.svd((p0 - c0).T @ (p - c))
        d = np.sign(np.linalg.det(vt.T @ u.T))
        R = vt.T @ np.diag([1.0, 1.0, d]) @ u.T
        M = np.eye(4)
        M[:3, :3], M[:3, 3] = R, c - R @ c0
        out.append(M)
    return out


def _mesh_object(name: str, positions: np.ndarray, faces):
    """A new mesh object of ``faces`` (index sequences of any length), linked to the scene."""
    import bpy
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(np.asarray(positions).tolist(), [], [[int(i) for i in f] for f in faces])
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def blender_scene(spec, quality=None, stiffness=None):
    """Reset Blender and build ``spec`` as an artist would with the built-in Cloth; returns
    the cloth object and the animated bodies' (object, per-frame positions (F, V, 3))."""
    import bpy
    from mathutils import Matrix

    bpy.ops.wm.read_factory_settings(use_empty=True)
    sc = bpy.context.scene
    sc.frame_start, sc.frame_end = 1, spec.frames + 1
    sc.render.fps, sc.render.fps_base = int(spec.fps), 1.0
    sc.use_gravity = True
    sc.gravity = (0.0, 0.0, -9.81)
    sc.frame_set(1)
    mesh = spec.cloth.mesh
    obj = _mesh_object("Tee", mesh.positions, mesh.faces())
    if len(obj.data.vertices) != len(mesh.positions):
        raise RuntimeError("Blender changed the garment's vertex count")
    mod = obj.modifiers.new("Cloth", "CLOTH")
    cs = mod.settings
    if quality is not None:
        cs.quality = int(quality)
    if stiffness is not None:
        cs.tension_stiffness = cs.compression_stiffness = cs.shear_stiffness = float(stiffness)
    pins = spec.cloth.pin_indices
    if len(pins):
        group = obj.vertex_groups.new(name="pin")
        group.add([int(i) for i in pins], 1.0, "REPLACE")
        cs.vertex_group_mass = "pin"
    mod.collision_settings.use_self_collision = True
    mod.point_cache.frame_start, mod.point_cache.frame_end = 1, spec.frames + 1
    animated = []
    for k, c in enumerate(spec.colliders):
        if c.kind == "plane":  # the floor: a quad through the plane's point (normal +Z)
            h = 0.5 * FLOOR_SIZE
            quad = np.array([[-h, -h, 0], [h, -h, 0], [h, h, 0], [-h, h, 0]]) + c.point
            body = _mesh_object(f"Floor{k}", quad, [[0, 1, 2, 3]])
        elif c.kind == "mesh":
            body = _mesh_object(f"Body{k}", c.mesh.positions, c.mesh.faces())
            if c.positions is not None:  # a rigid part: keyframe its pose at every frame
                body.rotation_mode = "QUATERNION"
                for f, M in enumerate(rigid_poses(c.positions)):
                    body.matrix_world = Matrix(M.tolist())
                    body.keyframe_insert("location", frame=f + 1)
                    body.keyframe_insert("rotation_quaternion", frame=f + 1)
                animated.append((body, c.positions))
        else:
            raise ValueError(f"no Blender stand-in for a {c.kind} collider")
        body.modifiers.new("Collision", "COLLISION")
    sc.frame_set(1)
    return obj, animated


def run_blender(spec, budget: float, quality=None, stiffness=None) -> dict:
    """Blender's Cloth on ``spec`` until its end or ``budget`` seconds."""
    import bpy
    from blender_builtin import _world_positions, blender_threads

    checks = Checks(spec)
    obj, animated = blender_scene(spec, quality, stiffness)
    sc = bpy.context.scene
    seconds, measured = [], []
    pose_error = 0.0  # the keyframed bodies against the scene's own poses [m]
    for f in range(2, spec.frames + 2):
        t = time.perf_counter()
        sc.frame_set(f)
        seconds.append(time.perf_counter() - t)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        x = _world_positions(obj, depsgraph)
        measured.append(checks.frame(x, f - 1))
        for body, positions in animated:
            pose_error = max(pose_error, float(np.abs(
                _world_positions(body, depsgraph) - positions[f - 1]).max()))
        if sum(seconds) > budget:
            break
    cs = obj.modifiers["Cloth"].settings
    return summary(seconds, [cs.quality] * len(seconds), measured, spec.frames,
                   {"quality": int(cs.quality), "stiffness": float(cs.tension_stiffness),
                    "body_pose_error_mm": 1e3 * pose_error,
                    "blender_version": bpy.app.version_string, "threads": blender_threads()})


def matched_settings(path: Path) -> dict[str, dict]:
    """Per garment scene, bench/headline.py's matched (quality, stiffness) of the scene most
    like it: the hanging grid for the hung tee, the self-colliding drape for the others."""
    s = json.loads(path.read_text())["scenes"]
    out = {}
    for kind in SCENES:
        src = "hanging" if kind == "hung" else "sphere_self"
        out[kind] = {"quality": int(s[src]["matched_quality"]),
                     "stiffness": float(s[src]["matched_stiffness"]),
                     "reached": bool(s[src]["matched_reached"]), "from": src}
    return out


# ------------------------------------------------------------------ the run

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--garment", default="tee_6k", help="examples/garments/ stem")
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--budget", type=float, default=300.0, help="seconds per run of ours at most")
    ap.add_argument("--blender-budget", type=float, default=100.0,
                    help="seconds per run of Blender's defaults at most")
    ap.add_argument("--matched-budget", type=float, default=40.0,
                    help="seconds per run of Blender's matched setting at most")
    ap.add_argument("--only", nargs="*", choices=SCENES, help="scenes (default: all)")
    ap.add_argument("--runs", nargs="*", default=["ours", "blender_default", "blender_matched"])
    ap.add_argument("--matched-from", type=Path,
                    default=ROOT / "bench" / "results" / "headline_4k.json")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--merge", action="store_true",
                    help="keep the scenes of the existing --json file that --only leaves out")
    ap.add_argument("--derive", action="store_true",
                    help="recompute the quoted figures of the existing --json file from its "
                         "rows, without running anything")
    args = ap.parse_args(argv)
    if args.derive:
        if not (args.json and args.json.exists()):
            raise SystemExit("--derive needs an existing --json file")
        out = json.loads(args.json.read_text())
        derive(out)   # the measurement's own date and commit stay
        args.json.write_text(json.dumps(out, indent=1))
        return 0
    if args.merge and not (args.json and args.json.exists() and args.only):
        raise SystemExit("--merge needs --only and an existing --json file to merge into")

    # compile our kernels first (the small tee, every kind of scene): no run pays for numba
    for kind in SCENES:
        Simulation(garments.scene(kind, "tee", frames=2)).run()
    matched = matched_settings(args.matched_from)
    mesh = garments.garment(args.garment)
    out = {"garment": {"name": args.garment, "vertices": len(mesh.positions),
                       "faces": int(mesh.face_count)},
           "frames": args.frames, "budget_s": args.budget,
           "blender_budget_s": args.blender_budget, "matched_budget_s": args.matched_budget,
           "matched": matched, "matched_from": args.matched_from.name,
           "load_before": os.getloadavg()[0], "scenes": {}}
    if args.merge:
        out = merged_into(json.loads(args.json.read_text()), out, args.only)
    for kind in args.only or SCENES:
        run_info = {**provenance(), "load_before": os.getloadavg()[0]}
        spec = garments.scene(kind, args.garment, frames=args.frames)
        row = {}
        for run in args.runs:
            load = os.getloadavg()[0]
            if run == "ours" and kind == "posed":  # with its clean start, frames interleaved
                r, row["ours_clean_start"] = run_ours(
                    spec, garments.scene("raised", args.garment, frames=args.frames),
                    budget=args.budget)
            elif run == "ours":
                r, = run_ours(spec, budget=args.budget)
            elif run == "blender_default":
                r = run_blender(spec, args.blender_budget)
            elif run == "blender_matched":
                r = run_blender(spec, args.matched_budget, matched[kind]["quality"],
                                matched[kind]["stiffness"])
            else:
                raise SystemExit(f"unknown run {run!r}")
            r["load"] = load
            row[run] = r
            print(f"{kind:6s} {run:16s} {r['frames']:3d}/{r['frames_asked']} frames  median "
                  f"{r['median_s']:.3f} s  worst {r['worst_s']:.3f} s  steps {r['median_steps']}"
                  f"  crossings max {r['crossing_pairs_max']} ({r['frames_with_crossings']} "
                  f"frames)  strain {100 * r['worst_strain']:.2f}%  load {load:.1f}", flush=True)
        row["run"] = {**run_info, "load_after": os.getloadavg()[0]}
        out["scenes"][kind] = row
        derive(out)
        save_json(args.json, out)  # what is done so far survives an interrupted run
    if "targets" in out:
        print("targets:", json.dumps(out["targets"]), flush=True)
    if not args.merge:
        out["load_after"] = os.getloadavg()[0]
    save_json(args.json, out)
    return 0


def merged_into(old: dict, new: dict, kinds) -> dict:
    """``new``'s settings with ``old``'s scenes other than ``kinds`` and its full run's loads;
    a SystemExit if ``old`` was measured with other settings. Scenes kept from a file written
    before rows carried their own ``run`` get the old file's date, commit and loads."""
    for key in ("garment", "frames", "budget_s", "blender_budget_s", "matched_budget_s",
                "matched_from"):
        if old.get(key) != new[key]:
            raise SystemExit(f"--merge: the file has {key}={old.get(key)!r}, this run "
                             f"{new[key]!r}; re-run every scene instead")
    scenes = {}
    for kind, row in old["scenes"].items():
        if kind in kinds:
            continue
        row.setdefault("run", {name: old[name] for name in
                               ("date", "commit", "load_before", "load_after") if name in old})
        scenes[kind] = row
    return {**new, "load_before": old["load_before"], "load_after": old["load_after"],
            "scenes": scenes}


def derive(out: dict) -> None:
    """The figures the docs quote, from the runs' rows (in place): per scene Blender's median
    and mean frame over ours (over the frames both ran), per run of ours each fail-safe's total and the frames it fired in, and
    the issue's targets (pile and hung tee both run)."""
    s = out["scenes"]
    for row in s.values():
        for run in row.values():
            if isinstance(run, dict) and run.get("seconds"):
                run["mean_s"] = float(np.mean(run["seconds"]))
        if "ours" not in row:
            continue
        ours = row["ours"]
        for other in ("blender_default", "blender_matched"):
            if other in row and row[other]["median_s"]:
                # over the frames both ran (a capped run of Blender's covers only the first)
                k = min(row[other]["frames"], ours["frames"])
                row[f"{other}_over_ours"] = (float(np.median(row[other]["seconds"][:k]))
                                             / float(np.median(ours["seconds"][:k])))
                # the mean frame (what a bake of those frames waits for, heavy frames included)
                row[f"{other}_mean_over_ours"] = (float(np.mean(row[other]["seconds"][:k]))
                                                  / float(np.mean(ours["seconds"][:k])))
        ours["failsafes"] = {name: {"total": int(sum(ours[name])),
                                    "frames": int(sum(c > 0 for c in ours[name]))}
                             for name in FAILSAFES if name in ours}
        if "ours_clean_start" in row:  # the posed tee against the same motion started clean
            clean = row["ours_clean_start"]
            k = min(clean["frames"], ours["frames"])
            ratio = np.array(ours["seconds"][:k]) / np.array(clean["seconds"][:k])
            median = float(np.median(clean["seconds"][:k]))
            row["against_clean_start"] = {
                "frames": k,
                "first_over_clean_first": float(ratio[0]) if k else None,
                "worst_frame_ratio": float(ratio.max()) if k else None,
                "worst_frame_ratio_at": int(ratio.argmax()) + 1 if k else None,
                "median_ratio": float(np.median(ratio)) if k else None,
                "worst_over_clean_median": max(ours["seconds"][:k]) / median if k else None,
                "clean_worst_over_clean_median": max(clean["seconds"][:k]) / median
                if k else None,
                "crossings_from_frame_3": int(sum(
                    a + b for a, b in zip(ours["self_intersections"][2:],
                                          ours["collider_crossings"][2:]))),
            }
    if "pile" in s and "hung" in s and "ours" in s["pile"] and "ours" in s["hung"]:
        pile, hung = s["pile"]["ours"], s["hung"]["ours"]
        ours = [row["ours"] for row in s.values() if "ours" in row]
        out["targets"] = {
            "pile_median_steps": pile["median_steps"],
            "pile_over_hung": pile["median_s"] / hung["median_s"],
            "crossing_pairs_max": max(r["crossing_pairs_max"] for r in ours),
            "worst_strain": max(r["worst_strain"] for r in ours),
            "worst_strain_over_limit": max(r["worst_strain"] for r in ours) / STRAIN_LIMIT,
        }
        t = out["targets"]
        t["met"] = bool(t["pile_median_steps"] <= TARGET_STEPS
                        and t["pile_over_hung"] <= TARGET_PILE_OVER_HUNG
                        and t["crossing_pairs_max"] == 0 and t["worst_strain"] <= TARGET_STRAIN)


if __name__ == "__main__":
    raise SystemExit(main())
