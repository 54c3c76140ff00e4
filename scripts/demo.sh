#!/usr/bin/env bash
# Main job: set up, then build the demo scene in real Blender (the bpy wheel, no display), bake
# it with our solver through the add-on, render it with Cycles on the CPU and save it:
# out/demo.blend, out/frames/frame_####.png, out/demo.gif, out/demo.json. Extra arguments go to
# scripts/demo_blender.py (--width, --samples, --step, --out).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python scripts/demo_blender.py "$@"
