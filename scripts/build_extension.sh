#!/usr/bin/env bash
# Set up, then build the extension zips (one per platform) into dist/ with Blender's own tool.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python scripts/build_extension.py "$@"
