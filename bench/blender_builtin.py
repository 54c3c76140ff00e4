"""Benchmark Blender's built-in Cloth modifier in real Blender (the ``bpy`` module, headless).

Runs a scene through ``scene.frame_set(f)`` for f = 1..frames, times every call and measures the
stretch of the final state, so that our own solver can be compared with Blender's in the same
process (same machine, same load) as ratios.

Needs only ``bpy`` (``pip install bpy==5.0.1``, Python 3.11, pulls numpy<2) and numpy.

Scenes (all grids: vertex (i, j) has index ``j * n + i`` at
``center + ((i / (n - 1) - 0.5) * s, (j / (n - 1) - 0.5) * s, 0)``, quads, normal +Z):

- ``hanging``:  1 m x 1 m grid at z = 1, pinned at its two j = n-1 corners (vertex indices
  ``(n - 1) * n`` and ``n * n - 1``) through the vertex group "pin" used as the cloth's pin group.
- ``sphere``:   2 m x 2 m grid at z = 1 falling onto a UV-sphere collider (r = 0.5, 32 x 16,
  Collision modifier with default settings) at the origin; no pins.
- ``freefall``: the sphere scene without the sphere (the "free fall" case of the project's
  first measurements of Blender's Cloth).

Gravity is (0, 0, -9.81) m/s^2, 24 fps, Cloth modifier defaults (= Cotton preset, quality 5)
unless ``preset``/``quality`` say otherwise.

Usage::

    python bench/blender_builtin.py --resolution 65 --frames 40 --json out.json
    python bench/blender_builtin.py --scene sphere --resolution 65 --self-collision --repeat 2

Thread count: Blender sizes its task pool from the CPU affinity mask when ``bpy`` is imported,
so run ``taskset -c 0 python bench/blender_builtin.py ...`` for one thread.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

import bpy  # noqa: E402  (Blender as a Python module)

SCENES = ("hanging", "sphere", "freefall")
PRESETS = ("default", "cotton", "denim", "leather", "rubber", "silk")

_GRID = {  # scene -> (edge length of the square [m], centre)
    "hanging": (1.0, (0.0, 0.0, 1.0)),
    "sphere": (2.0, (0.0, 0.0, 1.0)),
    "freefall": (2.0, (0.0, 0.0, 1.0)),
}


def grid_arrays(n: int, size: float, center=(0.0, 0.0, 1.0)):
    """Positions (n*n, 3) float64, quads (F, 4) int64 and edges (E, 2) int64 of an n x n grid.

    Same layout as ``solver.mesh.grid_mesh``. The edges are the structural (quad-side) edges.
    """
    if n < 2:
        raise ValueError(f"resolution must be >= 2, got {n}")
    j, i = np.divmod(np.arange(n * n), n)
    pos = np.zeros((n * n, 3))
    pos[:, 0] = (i / (n - 1) - 0.5) * size
    pos[:, 1] = (j / (n - 1) - 0.5) * size
    pos += np.asarray(center, dtype=np.float64)
    jj, ii = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a = (jj * n + ii).ravel()
    quads = np.stack([a, a + 1, a + 1 + n, a + n], axis=1).astype(np.int64)
    idx = np.arange(n * n).reshape(n, n)  # [j, i]
    horiz = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1)
    vert = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], axis=1)
    edges = np.concatenate([horiz, vert]).astype(np.int64)
    return pos, quads, edges


def edge_strain(pos: np.ndarray, rest_pos: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per-edge strain |x_a - x_b| / |X_a - X_b| - 1."""
    cur = np.linalg.norm(pos[edges[:, 0]] - pos[edges[:, 1]], axis=1)
    rest = np.linalg.norm(rest_pos[edges[:, 0]] - rest_pos[edges[:, 1]], axis=1)
    return cur / rest - 1.0


def _apply_preset(settings, preset: str) -> None:
    """Apply one of Blender's cloth presets (scripts/presets/cloth/<Name>.py) to ``settings``."""
    if preset == "default":
        return
    name = preset.capitalize() + ".py"
    for d in bpy.utils.preset_paths("cloth"):
        path = Path(d) / name
        if path.is_file():
            break
    else:
        raise ValueError(f"cloth preset {preset!r} not found in {bpy.utils.preset_paths('cloth')}")
    # Preset files are lines "bpy.context.cloth.settings.<attr> = <literal>".
    pat = re.compile(r"^bpy\.context\.cloth\.settings\.(\w+)\s*=\s*(.+)$")
    for line in path.read_text().splitlines():
        m = pat.match(line.strip())
        if m:
            setattr(settings, m.group(1), eval(m.group(2), {"__builtins__": {}}, {}))


def _mesh_object(name: str, pos: np.ndarray, faces: np.ndarray):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(pos.tolist(), [], faces.tolist())
    mesh.validate()
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _uv_sphere(radius: float, segments: int = 32, rings: int = 16):
    import bmesh

    mesh = bpy.data.meshes.new("Sphere")
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=segments, v_segments=rings, radius=radius)
    bm.to_mesh(mesh)
    bm.free()
    obj = bpy.data.objects.new("Sphere", mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.modifiers.new("Collision", "COLLISION")
    return obj


def blender_threads() -> int:
    """Worker threads Blender's simulation can use.

    ``scene.render.threads`` (AUTO mode) reports the system CPU count and ignores the CPU
    affinity mask, while Blender's TBB task pool follows the mask (``taskset -c 0`` gives one
    worker), so report the smaller of the two.
    """
    n = int(bpy.context.scene.render.threads)
    if hasattr(os, "sched_getaffinity"):
        n = min(n, len(os.sched_getaffinity(0)))
    return n


def build_scene(resolution: int, frames: int, scene: str = "hanging", quality: int | None = None,
                preset: str = "default", self_collision: bool = False,
                stiffness: float | None = None, sphere_segments: tuple[int, int] = (32, 16)):
    """Reset Blender and build the scene. Returns (cloth object, rest positions, edges).

    ``stiffness`` sets tension = compression = shear stiffness (None: the preset's);
    ``sphere_segments`` is the collider's (segments, rings)."""
    if scene not in SCENES:
        raise ValueError(f"scene must be one of {SCENES}, got {scene!r}")
    if preset.lower() not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")
    if frames < 2:
        raise ValueError("frames must be >= 2 (frame 1 is the initial state)")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    sc = bpy.context.scene
    sc.frame_start = 1
    sc.frame_end = frames
    sc.render.fps = 24
    sc.render.fps_base = 1.0
    sc.use_gravity = True
    sc.gravity = (0.0, 0.0, -9.81)
    sc.frame_set(1)

    size, center = _GRID[scene]
    n = int(resolution)
    pos, quads, edges = grid_arrays(n, size, center)
    obj = _mesh_object("Cloth", pos, quads)
    if len(obj.data.vertices) != n * n:
        raise RuntimeError("Blender changed the vertex count of the grid")

    mod = obj.modifiers.new("Cloth", "CLOTH")
    cs = mod.settings
    _apply_preset(cs, preset.lower())
    if quality is not None:
        cs.quality = int(quality)
    if stiffness is not None:
        cs.tension_stiffness = cs.compression_stiffness = cs.shear_stiffness = float(stiffness)
    if scene == "hanging":
        vg = obj.vertex_groups.new(name="pin")
        vg.add([(n - 1) * n, n * n - 1], 1.0, "REPLACE")
        cs.vertex_group_mass = "pin"
    mod.collision_settings.use_self_collision = bool(self_collision)
    # The point cache must cover the whole run, starting at the first timed frame; outside
    # its range the modifier returns the rest shape (or the last cached frame) and never steps.
    pc = mod.point_cache
    pc.frame_start = 1
    pc.frame_end = frames
    if scene == "sphere":
        _uv_sphere(0.5, *sphere_segments)
    return obj, pos, edges


def _world_positions(obj, depsgraph) -> np.ndarray:
    ev = obj.evaluated_get(depsgraph)
    me = ev.to_mesh()
    try:
        co = np.empty(len(me.vertices) * 3, dtype=np.float32)
        me.vertices.foreach_get("co", co)
    finally:
        ev.to_mesh_clear()
    co = co.reshape(-1, 3).astype(np.float64)
    m = np.array(ev.matrix_world, dtype=np.float64)  # cloth output is in object space
    return co @ m[:3, :3].T + m[:3, 3]


def run_builtin(resolution: int, frames: int, scene: str = "hanging", quality: int | None = None,
                preset: str = "default", self_collision: bool = False,
                return_positions: bool = False, save_positions: str | None = None,
                every_frame: bool = False, stiffness: float | None = None,
                sphere_segments: tuple[int, int] = (32, 16),
                stop_above_strain: float | None = None) -> dict:
    """Simulate ``frames`` frames with Blender's Cloth modifier and return timings and strain.

    Args:
        resolution: vertices per side n (n*n vertices).
        frames: frames 1..frames are evaluated; frame 1 is the initial (rest) state, so
            ``frames - 1`` frames (1/24 s each) are simulated.
        scene: "hanging", "sphere" or "freefall" (see module docstring).
        quality: cloth quality steps per frame; None keeps the preset's value (5 for default).
        preset: "default" (modifier defaults = Cotton) or a Blender cloth preset name.
        self_collision: turn on cloth self-collision.
        stiffness: tension = compression = shear stiffness (None: the preset's).
        sphere_segments: the sphere collider's (segments, rings).
        stop_above_strain: stop at the first frame whose strain exceeds this (a search that
            only needs to know a setting fails); ``stopped_at_frame`` says where (else None).
        return_positions: add "positions" (list of [x, y, z], world space) to the result.
        save_positions: path of a .npy file to write the final float32 positions to.
        every_frame: add "frame_positions", a (frames, V, 3) float64 array of every frame's
            world-space positions (frame 1 first), read outside the timed ``frame_set``.

    Returns a dict; ``ms_per_frame[k]`` is the wall time of ``frame_set(k + 1)``;
    ``median_ms``/``worst_ms``/``mean_ms`` are over the simulated frames 2..frames and
    ``init_ms`` is frame 1 (cloth setup + first depsgraph evaluation).
    """
    t0 = time.perf_counter()
    obj, rest, edges = build_scene(resolution, frames, scene, quality, preset, self_collision,
                                   stiffness, sphere_segments)
    sc = bpy.context.scene
    cs = obj.modifiers["Cloth"].settings
    setup_ms = (time.perf_counter() - t0) * 1e3

    ms = []
    worst_strain = 0.0  # over every simulated frame, read outside the timed frame_set
    history = []
    stopped = None
    for f in range(1, frames + 1):
        t = time.perf_counter()
        sc.frame_set(f)
        ms.append((time.perf_counter() - t) * 1e3)
        pos = _world_positions(obj, bpy.context.evaluated_depsgraph_get())
        if pos.shape != rest.shape:
            raise RuntimeError(f"evaluated mesh has {pos.shape[0]} vertices, "
                               f"expected {rest.shape[0]}")
        strain = edge_strain(pos, rest, edges)
        if every_frame:
            history.append(pos)
        if f > 1:
            worst_strain = max(worst_strain, float(strain.max()))
        if stop_above_strain is not None and worst_strain > stop_above_strain:
            stopped = f
            break
    pos32 = np.ascontiguousarray(pos, dtype=np.float32)
    sim = np.asarray(ms[1:])
    out = {
        "solver": "blender_builtin",
        "scene": scene,
        "resolution": int(resolution),
        "vertices": int(rest.shape[0]),
        "edges": int(edges.shape[0]),
        "frames": int(frames),
        "quality": int(cs.quality),
        "stiffness": float(cs.tension_stiffness),
        "stopped_at_frame": stopped,
        "preset": preset,
        "self_collision": bool(self_collision),
        "ms_per_frame": [round(x, 3) for x in ms],
        "init_ms": round(ms[0], 3),
        "median_ms": round(float(np.median(sim)), 3),
        "mean_ms": round(float(sim.mean()), 3),
        "worst_ms": round(float(sim.max()), 3),
        "total_ms": round(float(sum(ms)), 3),
        "setup_ms": round(setup_ms, 3),
        "max_strain": float(strain.max()),
        "mean_strain": float(np.abs(strain).mean()),
        "worst_frame_strain": worst_strain,
        "p99_strain": float(np.percentile(strain, 99)),
        "min_strain": float(strain.min()),
        "start_z": float(rest[:, 2].min()),
        "min_z": float(pos[:, 2].min()),
        "max_z": float(pos[:, 2].max()),
        "hash": hashlib.sha256(pos32.tobytes()).hexdigest(),
        "blender_version": bpy.app.version_string,
        "threads": blender_threads(),
        "render_threads": int(sc.render.threads),
    }
    if save_positions:
        np.save(save_positions, pos32)
        out["positions_file"] = str(save_positions)
    if return_positions:
        out["positions"] = pos32.tolist()
    if every_frame:
        out["frame_positions"] = np.array(history)
    return out


def _summary(r: dict) -> str:
    return (f"{r['scene']:8s} n={r['resolution']:4d} V={r['vertices']:6d} q={r['quality']:2d}"
            f"{' self' if r['self_collision'] else ''}  median {r['median_ms']:8.2f} ms"
            f"  mean {r['mean_ms']:8.2f}  worst {r['worst_ms']:8.2f}  init {r['init_ms']:7.2f}"
            f"  max strain {100 * r['max_strain']:6.2f}%  mean |strain| {100 * r['mean_strain']:5.2f}%"
            f"  z {r['start_z']:.3f}->{r['min_z']:.3f}  threads {r['threads']}  {r['hash'][:12]}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--resolution", "-n", type=int, default=65)
    p.add_argument("--frames", type=int, default=40)
    p.add_argument("--scene", choices=SCENES, default="hanging")
    p.add_argument("--quality", type=int, default=None,
                   help="quality steps per frame (default: the preset's, 5 for default)")
    p.add_argument("--preset", choices=PRESETS, default="default")
    p.add_argument("--self-collision", action="store_true")
    p.add_argument("--repeat", type=int, default=1, help="runs in this process")
    p.add_argument("--json", help="write the result(s) here (a list when --repeat > 1)")
    p.add_argument("--save-positions", help=".npy path for the final positions of the last run")
    p.add_argument("--positions", action="store_true", help="include positions in the JSON")
    a = p.parse_args(argv)
    results = []
    for k in range(a.repeat):
        r = run_builtin(a.resolution, a.frames, a.scene, a.quality, a.preset, a.self_collision,
                        return_positions=a.positions,
                        save_positions=a.save_positions if k == a.repeat - 1 else None)
        print(_summary(r), flush=True)
        results.append(r)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(results[0] if a.repeat == 1 else results, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
