"""Blender 5.2's live XPBD cloth against ours and the classic Cloth modifier, one bpy process.

Blender 5.2 ships *Cloth Dynamics (Experimental)*, a geometry-nodes asset (a simulation zone
running an XPBD solver) in ``datafiles/assets/nodes/geometry_nodes_dynamics_assets.blend``.
This benchmark appends that node group onto the headline scenes' grid through a Geometry Nodes
modifier, as an artist does when they drag the asset onto a mesh, and runs, per scene:

* ``ours``: the add-on's bake (``BakeJob``, the operator's path) at a new cloth object's
  defaults (Cotton, quality Final, strain limit 5 %): ``headline.run_ours``;
* ``classic``: Blender's Cloth modifier at its defaults (Cotton, quality 5):
  ``headline.run_blender``;
* ``xpbd``: the Cloth Dynamics node group at its defaults (Substeps 5, Constraint Steps 15,
  Stretchiness 0, Bendiness 0, Mass 1, Linear Damping 1, Collision Radius 1 cm). Pins: the
  same vertex group ``pin`` fed to its *Pin Group* field as an attribute. Collider (sphere):
  the same UV-sphere mesh carrying the shipped *Collider* node group (its defaults: margin 0,
  friction 0.2), in a collection given as *Effectors Collection*. The node group's pins and
  collider replace the classic modifier's vertex group and Collision modifier one to one; its
  solver settings are left at the asset's defaults, as the classic modifier's and ours are;
* ``xpbd_tight``: the same with Substeps 20 (``--xpbd-substeps``; 4× the default), which
  shows whether its stretch is its iterations' convergence (XPBD's pins and edges are solved by
  a fixed number of constraint passes, so a long chain hanging from two vertices converges
  slowly) rather than its material.

Scenes (``headline.py``'s): ``hanging`` (1 m grid of n × n vertices held at its two top corners)
and ``sphere`` (2 m grid falling onto a 48 × 24 UV sphere of r = 0.5 m). Every solver steps
frames as playback does: ``frame_set`` over 1..frames+1 in order (a simulation zone only steps
forward one frame at a time from the scene's start).

Measured for every run, independently of the solvers' own reports (``headline.measured``):
ms per frame (median over the simulated frames; ours from the bake's per-frame log, Blender's
from the timed ``frame_set``), worst-frame strain of the structural (quad-side) edges, deepest
vertex inside the sphere mesh (smallest distance to its face planes) over all frames, and
crossing triangle pairs on the last frame, and (hanging) how far the pinned corners moved from
their place; plus the last frame's extent, so a run that stands still, explodes or falls through
is visible in the file.

    NUMBA_CACHE_DIR=/tmp/numba-py313 .venv-bpy52/bin/python bench/xpbd_peer.py \\
        --frames 48 --rounds 2 --json bench/results/xpbd_peer.json --positions /tmp/last.npz
    .venv/bin/python bench/xpbd_peer.py --positions /tmp/last.npz --render docs/xpbd_peer.png

(the render runs in the 5.0 wheel's environment, which has Pillow; any Blender renders it).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import headline  # noqa: E402  (sets up the scratch user resources before bpy)

import numpy as np  # noqa: E402
from blender_builtin import (  # noqa: E402
    _GRID,
    _mesh_object,
    _uv_sphere,
    _world_positions,
    blender_threads,
    grid_arrays,
)
from record import save_json  # noqa: E402

ASSET_FILE = Path("assets") / "nodes" / "geometry_nodes_dynamics_assets.blend"
CLOTH_GROUP = "Cloth Dynamics (Experimental)"
COLLIDER_GROUP = "Collider"
SCENES = ("hanging", "sphere")


def asset_path() -> Path:
    import bpy
    path = Path(bpy.utils.system_resource("DATAFILES")) / ASSET_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: Cloth Dynamics ships with Blender 5.2+ "
                                f"(this is {bpy.app.version_string})")
    return path


def _append(name: str):
    """The asset file's node group ``name``, appended (not linked) into the current file."""
    import bpy
    with bpy.data.libraries.load(str(asset_path()), link=False) as (src, dst):
        if name not in src.node_groups:
            raise KeyError(f"{name!r} not in {asset_path().name}: {list(src.node_groups)}")
        dst.node_groups = [name]
    return dst.node_groups[0]


def _inputs(group) -> dict:
    """Input socket name -> identifier (the key a Geometry Nodes modifier stores it under)."""
    return {item.name: item.identifier for item in group.interface.items_tree
            if item.item_type == "SOCKET" and item.in_out == "INPUT"}


def _socket(mod, ids: dict, name: str):
    """The modifier's input ``name`` (Blender 5.2 keeps a Geometry Nodes modifier's inputs in
    ``properties.inputs``, one struct per socket with ``value``, ``type`` and
    ``attribute_name``)."""
    return getattr(mod.properties.inputs, ids[name])


def xpbd_settings(mod, ids: dict) -> dict:
    """The modifier's solver inputs as the run used them (the asset's defaults)."""
    keep = ("Stretchiness", "Bendiness", "Substeps", "Constraint Steps", "Mass", "Friction",
            "Collision Radius", "Linear Damping")
    return {name: round(float(_socket(mod, ids, name).value), 6) for name in keep}


def build_xpbd(scene: str, n: int, frames: int, substeps: int | None = None):
    """The headline scene with the Cloth Dynamics node group on the grid (its defaults but
    ``substeps``, when given). Returns the cloth object and the group's settings."""
    import bpy
    bpy.ops.wm.read_factory_settings(use_empty=True)
    sc = bpy.context.scene
    sc.frame_start, sc.frame_end = 1, frames + 1
    sc.render.fps, sc.render.fps_base = 24, 1.0
    sc.frame_set(1)
    size, center = _GRID[scene]
    pos, quads, _ = grid_arrays(n, size, center)
    cloth = _mesh_object("Cloth", pos, quads)
    group = _append(CLOTH_GROUP)
    ids = _inputs(group)
    mod = cloth.modifiers.new("Cloth Dynamics", "NODES")
    mod.node_group = group
    if substeps is not None:
        _socket(mod, ids, "Substeps").value = substeps
    if scene == "hanging":
        vg = cloth.vertex_groups.new(name="pin")
        vg.add([(n - 1) * n, n * n - 1], 1.0, "REPLACE")
        pin = _socket(mod, ids, "Pin Group")   # a field: read from the attribute "pin"
        pin.type, pin.attribute_name = "ATTRIBUTE", "pin"
    else:
        sphere = _uv_sphere(headline.SPHERE_RADIUS, *headline.SPHERE_SEGMENTS)
        sphere.modifiers.remove(sphere.modifiers["Collision"])
        collider = sphere.modifiers.new("Collider", "NODES")
        collider.node_group = _append(COLLIDER_GROUP)
        effectors = bpy.data.collections.new("Effectors")
        sc.collection.children.link(effectors)
        sc.collection.objects.unlink(sphere)
        effectors.objects.link(sphere)
        _socket(mod, ids, "Effectors Collection").value = effectors
    cloth.data.update()
    return cloth, xpbd_settings(mod, ids)


def _positions(obj) -> np.ndarray:
    """World-space positions (V, 3) of ``obj``'s evaluated mesh at the current frame."""
    import bpy
    return _world_positions(obj, bpy.context.evaluated_depsgraph_get())


def run_xpbd(scene: str, n: int, frames: int, planes, substeps: int | None = None) -> dict:
    """The Cloth Dynamics run; ``substeps`` overrides the asset's Substeps (None: default)."""
    import bpy
    cloth, settings = build_xpbd(scene, n, frames, substeps)
    sc = bpy.context.scene
    ms, history = [], []
    for f in range(1, frames + 2):
        t = time.perf_counter()
        sc.frame_set(f)
        ms.append((time.perf_counter() - t) * 1e3)
        pos = _positions(cloth)
        if pos.shape[0] != n * n:
            raise RuntimeError(f"Cloth Dynamics gave {pos.shape[0]} vertices, expected {n * n}")
        history.append(pos)
    positions = np.array(history)
    moved = float(np.linalg.norm(positions[-1] - positions[0], axis=1).max())
    if moved < 1e-3:
        raise RuntimeError("Cloth Dynamics did not move the cloth: the simulation zone did not "
                           "step under frame_set")
    label = "defaults" if substeps is None else f"Substeps {substeps}"
    return {"solver": f"Cloth Dynamics (XPBD) {label}", "scene": scene, "vertices": n * n,
            "median_ms": float(np.median(ms[1:])), "ms_per_frame": [round(x, 2) for x in ms],
            "settings": settings, "max_displacement_m": moved, "last_positions": positions[-1],
            **shape(positions[-1]), **headline.measured(n, scene, positions, planes)}


def shape(pos: np.ndarray) -> dict:
    """The last frame's extent, to see a run that stood still, exploded or fell through."""
    return {"last_min_z": float(pos[:, 2].min()), "last_max_z": float(pos[:, 2].max()),
            "last_extent_xy": float(np.ptp(pos[:, :2], axis=0).max())}


def run_ours(scene: str, n: int, frames: int, planes) -> dict:
    import bpy
    r = headline.run_ours(scene, n, frames, "final", planes)
    r.pop("spec"), r.pop("module")
    bpy.context.scene.frame_set(frames + 1)   # the shape keys' last frame
    r["last_positions"] = _positions(bpy.data.objects["Cloth"])
    r.update(shape(r["last_positions"]))
    r["solver"] = "ours (defaults: Cotton, Final)"
    return r


def run_classic(scene: str, n: int, frames: int, planes) -> dict:
    import bpy
    r = headline.run_blender(scene, n, frames, planes)
    r["last_positions"] = _positions(bpy.data.objects["Cloth"])
    r.update(shape(r["last_positions"]))
    return r


def figures(rows: dict) -> dict:
    """``scenes[scene][solver]`` with ``ms``, ``over_ours`` (its time over ours: > 1, ours
    faster), ``strain`` (worst frame, fraction), ``penetration_m``, ``crossing_pairs`` and
    (hanging) ``pin_drift_m``."""
    out = {}
    for scene, runs in rows.items():
        ours = runs["ours"]["median_ms"]
        out[scene] = {who: {"ms": r["median_ms"], "over_ours": r["median_ms"] / ours,
                            "strain": r["worst_frame_strain"], "penetration_m": r["penetration_m"],
                            "crossing_pairs": r["crossing_pairs"],
                            **({"pin_drift_m": r["pin_drift_m"]} if "pin_drift_m" in r else {})}
                      for who, r in runs.items()}
    return out


def render(positions: Path, out: Path, samples: int = 16) -> Path:
    """The last frame of every run in ``positions`` (``--positions``' file), one row per
    scene (ours, classic, Cloth Dynamics from left to right), Cycles on the CPU."""
    import tempfile

    import bpy
    sys.path.insert(0, str(ROOT / "scripts"))
    import render_scene as rs
    data = np.load(positions)
    n = int(round(len(next(iter(data.values()))) ** 0.5))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for scene in SCENES:
            tiles = []
            for who in ("ours", "classic", "xpbd", "xpbd_tight"):
                key = f"{scene}_{who}"
                if key not in data:
                    continue
                bpy.ops.wm.read_factory_settings(use_empty=True)
                sc = bpy.context.scene
                _, quads, _ = grid_arrays(n, *_GRID[scene])
                cloth = rs.mesh_object(bpy, "Cloth", data[key], quads,
                                       rs.material(bpy, "Cloth", (0.55, 0.12, 0.1)))
                if scene == "sphere":
                    sphere = _uv_sphere(headline.SPHERE_RADIUS, *headline.SPHERE_SEGMENTS)
                    sphere.data.materials.append(rs.material(bpy, "Body", (0.6, 0.6, 0.6)))
                rs.sun_and_sky(bpy, sc, (50, 10, 30), 3.0, (0.8, 0.85, 0.9), 0.6)
                if scene == "hanging":
                    rs.camera(bpy, sc, (1.4, -1.7, 1.1), (0.0, 0.3, 0.5), lens=40)
                else:
                    rs.camera(bpy, sc, (2.2, -2.6, 1.6), (0.0, 0.0, 0.3), lens=40)
                rs.cycles(sc, (320, 260), samples)
                tiles.append(rs.render_still(bpy, sc, Path(tmp) / f"{key}.png"))
            rows.append(rs.side_by_side(tiles, Path(tmp) / f"{scene}.png"))
        labels = ("ours (defaults)", "classic Cloth (defaults)", "Cloth Dynamics (defaults)",
                  "Cloth Dynamics (Substeps 20)")
        return rs.stacked(rows, out, head=24,
                          texts=[(160 + 320 * i, 12, t, 14, 40, "mm")
                                 for i, t in enumerate(labels)])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=65)
    ap.add_argument("--frames", type=int, default=48)
    ap.add_argument("--scenes", nargs="+", choices=SCENES, default=list(SCENES))
    ap.add_argument("--rounds", type=int, default=2, help="alternating timing rounds")
    ap.add_argument("--xpbd-substeps", type=int, default=20,
                    help="Cloth Dynamics' Substeps of its second, tighter run (0: none)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--positions", type=Path, default=None,
                    help="an .npz for every run's last-frame positions (to look at them)")
    ap.add_argument("--render", type=Path, default=None,
                    help="a PNG of the last frames in --positions' file (no runs)")
    args = ap.parse_args(argv)
    import bpy
    if args.render:
        print(render(args.positions, args.render))
        return 0
    load_before = os.getloadavg()
    planes = headline.sphere_planes()
    headline.run_ours("sphere", 9, 2, "final", planes)   # compile or load our kernels untimed
    rows, last = {}, {}
    runners = {"ours": run_ours, "classic": run_classic, "xpbd": run_xpbd}
    if args.xpbd_substeps:
        runners["xpbd_tight"] = lambda *a: run_xpbd(*a, substeps=args.xpbd_substeps)
    for scene in args.scenes:
        rows[scene] = {}
        for k in range(max(1, args.rounds)):   # alternating, so drift falls on all alike
            for who, run in runners.items():
                print(f"== {scene} {args.size} × {args.size}, {who}, round {k + 1}", flush=True)
                r = run(scene, args.size, args.frames, planes)
                last[f"{scene}_{who}"] = r.pop("last_positions")
                if scene == "hanging":   # the pinned corners' distance from their rest place
                    rest = grid_arrays(args.size, *_GRID[scene])[0]
                    pins = [(args.size - 1) * args.size, args.size ** 2 - 1]
                    r["pin_drift_m"] = float(np.linalg.norm(
                        last[f"{scene}_{who}"][pins] - rest[pins], axis=1).max())
                runs_ms = rows[scene].get(who, {}).get("runs_ms", []) + [r["median_ms"]]
                r["runs_ms"], r["median_ms"] = runs_ms, float(np.median(runs_ms))
                rows[scene][who] = r
                print(f"   {runs_ms[-1]:.0f} ms/frame, strain "
                      f"{100 * r['worst_frame_strain']:.1f}%, penetration "
                      f"{1e3 * r['penetration_m']:.1f} mm, crossing pairs {r['crossing_pairs']}, "
                      f"last frame z {r['last_min_z']:.3f}..{r['last_max_z']:.3f}", flush=True)
    table = ["| scene | solver | ms/frame | its time / ours | worst-frame strain | "
             "penetration [mm] | crossing pairs |", "|---|---|---|---|---|---|---|"]
    for scene, f in figures(rows).items():
        for who, x in f.items():
            table.append(f"| {scene} | {rows[scene][who]['solver']} | {x['ms']:.0f} | "
                         f"{x['over_ours']:.2f}× | {100 * x['strain']:.1f}% | "
                         f"{1e3 * x['penetration_m']:.1f} | {x['crossing_pairs']} |")
    print("\n".join(table))
    if args.positions:
        np.savez_compressed(args.positions, **last)
    save_json(args.json, {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "blender_version": bpy.app.version_string, "threads": blender_threads(),
        "load_average": {"before": list(load_before), "after": list(os.getloadavg())},
        "frames": args.frames, "vertices": args.size ** 2, "rounds": args.rounds, "rows": rows,
        "markdown": "\n".join(table), "scenes": figures(rows)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
