"""The figures the docs quote, computed from a benchmark's rows and written into its result file.

The docs quote a figure with a marker naming its result file and key
(``1.10×<!-- fig: headline_4k.json:scenes.hanging.final_ratio -->``, checked by
``tests/test_doc_figures.py``), so every ratio or share they quote must be a value in the file:
each function here turns a benchmark's raw rows into those values, keyed by scene.
"""

from __future__ import annotations

import statistics


def headline(rows: list[dict]) -> dict:
    """``scenes[scene]`` (``scene@n`` when a file holds several sizes) for ``headline.py``.

    ``*_ms``: mean ms per simulated frame (``*_median_frame_ms``: the median frame);
    ``*_sphere_frame``: the first frame within reach of the sphere (frame 1: the start);
    ``final_ratio``/``preview_ratio``: Blender's defaults' time over ours (> 1: ours faster);
    ``matched_ratio``/``matched_preview_ratio``: Blender's matched setting's time over ours;
    ``*_strain``: worst-frame strain (fraction); ``*_deviation_m``; ``*_crossing_pairs`` (last frame); ``*_penetration_m``.
    """
    sizes = {r["final"]["vertices"] for r in rows}
    scenes = {}
    for r in rows:
        name = r["final"]["scene"]
        if len(sizes) > 1:
            name = f"{name}@{int(round(r['final']['vertices'] ** 0.5))}"
        s = {"vertices": r["final"]["vertices"]}
        for key in ("final", "preview", "default", "matched"):
            run = r.get(key)
            if run is None:
                continue
            s[f"{key}_ms"] = run["mean_ms"]
            s[f"{key}_median_frame_ms"] = run["median_ms"]
            if run.get("sphere_frame") is not None:
                s[f"{key}_sphere_frame"] = run["sphere_frame"]
            s[f"{key}_strain"] = run["worst_frame_strain"]
            s[f"{key}_penetration_m"] = run["penetration_m"]
            s[f"{key}_crossing_pairs"] = run["crossing_pairs"]
            if "deviation_m" in run:
                s[f"{key}_deviation_m"] = run["deviation_m"]
        s["final_ratio"] = r["default"]["mean_ms"] / r["final"]["mean_ms"]
        s["preview_ratio"] = r["default"]["mean_ms"] / r["preview"]["mean_ms"]
        s["deterministic"] = bool(r["final"].get("deterministic")
                                  and r["preview"].get("deterministic"))
        if "matched" in r:
            m = r["matched"]
            s["matched_ratio"] = m["mean_ms"] / r["final"]["mean_ms"]
            s["matched_preview_ratio"] = m["mean_ms"] / r["preview"]["mean_ms"]
            s["matched_quality"] = m["quality"]
            s["matched_stiffness"] = m["stiffness"]
            s["matched_reached"] = bool(m.get("reached"))
        scenes[name] = s
    ours = [r[k] for r in rows for k in ("final", "preview")]
    return {"scenes": scenes,
            "ours_worst_strain": max(x["worst_frame_strain"] for x in ours),
            "ours_penetration_m": max(x["penetration_m"] for x in ours)}


def quality(scenes: dict) -> dict:
    """``figures[scene]`` for ``quality.py``: medians of the per-round ratios and the savings.

    ``*_over_*``: wall-time ratio within a round, median over rounds (``cpu_*``: CPU time);
    ``newton_saved``/``iterations_saved``: the share of Final's Newton / PCG + limiter
    iterations per frame that Preview does not take.
    """
    figures = {}
    for name, scene in scenes.items():
        rows = scene["rows"]
        f = {key: statistics.median(values) for key, values in scene["ratios"].items() if values}
        final, preview = rows["final"], rows["preview"]
        f["newton_saved"] = 1 - preview["newton_per_frame"] / final["newton_per_frame"]
        f["iterations_saved"] = 1 - preview["iterations_per_frame"] / final["iterations_per_frame"]
        figures[name] = f
    return figures


def compare(rows: list[dict]) -> dict:
    """``figures["scene@n"]`` for ``compare.py``: Blender's defaults (quality 5) against ours.

    ``blender_ms``/``ours_ms``: medians of the rounds' median ms per frame; ``ratio``: Blender's
    over ours; ``*_strain``: last frame, ``*_worst_strain``: worst frame (fractions).
    """
    figures = {}
    for r in rows:
        n = int(round(r["vertices"] ** 0.5))
        key = f"{r['scene']}@{n}"
        f = figures.setdefault(key, {"vertices": r["vertices"]})
        if r["solver"] == "blender_builtin" and r.get("quality") == 5:
            who = "blender"
        elif r["solver"] == "ours_implicit":
            who = "ours"
        else:
            continue
        f[f"{who}_ms"] = r["median_ms"]
        f[f"{who}_strain"] = r["max_strain"]
        f[f"{who}_worst_strain"] = r.get("worst_frame_strain")
        f[f"{who}_penetration_m"] = r.get("deepest_penetration_m")
        if who == "ours":
            f["ratio"] = r["ratio"]
    return figures


def first_bake(runs: list[dict]) -> dict:
    """``figures[case]`` for ``first_bake.py``: the range of each case's times over the runs."""
    figures = {}
    for case in runs[0]:  # the cases, as every run holds them
        f = {}
        for key in ("install_enable_s", "warmup_s", "bake_s", "install_to_frame_s",
                    "cache_misses", "cache_hits"):
            values = [run[case][key] for run in runs if key in run.get(case, {})]
            if values:
                f[f"{key}_min"], f[f"{key}_max"] = min(values), max(values)
        figures[case] = f
    return figures
