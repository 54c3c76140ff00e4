#!/usr/bin/env bash
# Debian's blender (3.4, runs Debian's Python 3.11 with python3-numba/-scipy/-pytest) for the
# `blender -b` tests, Xvfb for the test that drives Blender with a window (modal bake, undo,
# key presses), and a small launcher environment for pytest-blender (.venv-blender).
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v blender >/dev/null || need+=(blender)
for pkg in python3-numba python3-scipy python3-pytest; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
optional=()  # without them only the window test (tests/blender/test_ui_session.py) is skipped
command -v xvfb-run >/dev/null || optional+=(xvfb)
command -v xauth >/dev/null || optional+=(xauth)  # xvfb-run needs it; xvfb only recommends it
if [ "$(id -u)" != 0 ]; then
    if [ ${#need[@]} -gt 0 ]; then
        echo "setup_debian_blender: please run: sudo apt-get install -y ${need[*]} ${optional[*]}" >&2
        exit 1
    fi
    if [ ${#optional[@]} -gt 0 ]; then
        echo "setup_debian_blender: the test with a window is skipped without: sudo apt-get install -y ${optional[*]}" >&2
    fi
elif [ $(( ${#need[@]} + ${#optional[@]} )) -gt 0 ]; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${need[@]}" "${optional[@]}"
fi
PY=${PYTHON:-python3}
if [ ! -x .venv-blender/bin/python ]; then
    "$PY" -m venv .venv-blender
fi
.venv-blender/bin/python -m pip install --quiet --upgrade pip
.venv-blender/bin/python -m pip install --quiet "pytest>=8" "pytest-blender==3.0.8"
