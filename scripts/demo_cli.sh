#!/usr/bin/env bash
# The solver alone, without Blender: simulate examples/demo.toml (a cotton flag on its hoist edge,
# in wind) and write out/demo.npz (positions per frame) and out/demo-cli.json (per-frame report).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out
.venv/bin/python -m solver run examples/demo.toml --out out/demo.npz --report out/demo-cli.json
.venv/bin/python - <<'PY'
import json
r = json.load(open("out/demo-cli.json"))
t = r["totals"]
print(f"demo: {r['frames_completed']} frames of {r['vertices']} vertices with the {r['model']} "
      f"model in {t['wall_time_s']:.2f} s (median {1e3 * t['median_frame_s']:.1f} ms/frame), "
      f"max strain {100 * t['max_strain']:.2f}% -> out/demo.npz, out/demo-cli.json")
PY
