#!/usr/bin/env bash
# Set up, then run every test: the solver tests and the Blender tests through the bpy 5.0 wheel in
# one pytest session; the Blender tests again through the bpy 4.2 LTS wheel (Python 3.11) and the
# bpy 5.2 LTS wheel (Python 3.13); then inside Debian's `blender -b` (Blender 3.4, legacy add-on)
# through pytest-blender. Every suite runs even if one fails; the exit status says whether all
# passed. Extra arguments go to every pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup_blenders.sh
bash scripts/setup_debian_blender.sh
mkdir -p .cache
failed=()
suite() {  # name, command...
    local name=$1
    shift
    echo "== $name"
    "$@" || failed+=("$name")
}
# One numba cache per numba build and Python (the bpy 5.0 and 4.2 environments share theirs).
suite "solver tests + Blender tests in Blender 5.0 (bpy wheel)" \
    env NUMBA_CACHE_DIR="$PWD/.cache/numba-py311" .venv/bin/python -m pytest tests "$@"
suite "Blender tests in Blender 4.2 LTS (bpy wheel)" \
    env NUMBA_CACHE_DIR="$PWD/.cache/numba-py311" .venv-bpy42/bin/python -m pytest tests/blender \
    -p no:cacheprovider "$@"
suite "Blender tests in Blender 5.2 LTS (bpy wheel, Python 3.13)" \
    env NUMBA_CACHE_DIR="$PWD/.cache/numba-py313" .venv-bpy52/bin/python -m pytest tests/blender \
    -p no:cacheprovider "$@"
suite "Blender tests in $(blender --version 2>/dev/null | head -1) (blender -b, pytest-blender)" \
    env NUMBA_CACHE_DIR="$PWD/.cache/numba-debian" .venv-blender/bin/pytest tests/blender \
    --blender-executable "$(command -v blender)" -p no:cacheprovider "$@" -- --factory-startup
if [ ${#failed[@]} -gt 0 ]; then
    printf 'FAILED suite: %s\n' "${failed[@]}" >&2
    exit 1
fi
