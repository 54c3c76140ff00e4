#!/usr/bin/env bash
# Set up, then run every test: the solver tests and the Blender tests through the bpy wheel
# (Blender 5.0) in one pytest session, then the Blender tests again inside Debian's
# `blender -b` (Blender 3.4, legacy add-on) through pytest-blender. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup_debian_blender.sh
mkdir -p .cache
# One numba cache per numba build, shared by the solver and the add-on (compile once).
echo "== solver tests + Blender tests (bpy wheel)"
NUMBA_CACHE_DIR="$PWD/.cache/numba-venv" .venv/bin/python -m pytest tests "$@"
echo "== Blender tests in $(blender --version 2>/dev/null | head -1) (blender -b, pytest-blender)"
NUMBA_CACHE_DIR="$PWD/.cache/numba-debian" .venv-blender/bin/pytest tests/blender \
    --blender-executable "$(command -v blender)" -p no:cacheprovider "$@" -- --factory-startup
