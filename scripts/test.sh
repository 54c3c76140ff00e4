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
mkdir -p .cache/test-logs
# Two lanes side by side, as most tests use one core of two. Lane 1: the Python 3.11 suites,
# which share numba's cache and the add-on's copy (tests/blender/conftest.py), one after the
# other, their output shown as it comes. Lane 2: the Python 3.13 suite, then Debian's (each its
# own cache and copy), printed when they end. Debian's tests that drive a window under Xvfb
# (marked `window`) check what a live bake shows while it runs, and a busy machine can let the
# bake finish before the window looks: they run last, alone. Simulation-heavy Blender tests
# (marked `physics`) run in Blender 5.0 and 3.4 only; the API tests run in every Blender.
suite() {  # name, log file, command...
    local name=$1 log=$2
    shift 2
    echo "== $name" >>"$log"
    if "$@" >>"$log" 2>&1; then echo ok >"$log.status"; else echo failed >"$log.status"; fi
}
L=.cache/test-logs
rm -f "$L"/*
for n in 1 2 3 4 5; do : >"$L/$n"; done
extra=("$@")
debian="$(blender --version 2>/dev/null | head -1)"
debian_suite() {  # log file, marker expression, what runs
    suite "Blender tests in $debian$3 (blender -b, pytest-blender)" "$1" \
        env NUMBA_CACHE_DIR="$PWD/.cache/numba-debian" .venv-blender/bin/pytest \
        tests/blender --blender-executable "$(command -v blender)" -p no:cacheprovider \
        -m "$2" ${extra[@]+"${extra[@]}"} -- --factory-startup
}
(
    suite "Blender tests in Blender 5.2 LTS (bpy wheel, Python 3.13)" "$L/3" \
        env NUMBA_CACHE_DIR="$PWD/.cache/numba-py313" CLOTH_SOLVER_TESTS_PHYSICS=0 \
        .venv-bpy52/bin/python -m pytest tests/blender -p no:cacheprovider "$@"
    debian_suite "$L/4" "not window" ""
) &
other=$!
for n in 1 2; do
    if [ $n = 1 ]; then
        args=(env NUMBA_CACHE_DIR="$PWD/.cache/numba-py311" .venv/bin/python -m pytest tests "$@")
        name="solver tests + Blender tests in Blender 5.0 (bpy wheel)"
    else
        args=(env NUMBA_CACHE_DIR="$PWD/.cache/numba-py311" CLOTH_SOLVER_TESTS_PHYSICS=0
              .venv-bpy42/bin/python -m pytest tests/blender -p no:cacheprovider "$@")
        name="Blender tests in Blender 4.2 LTS (bpy wheel)"
    fi
    suite "$name" "$L/$n" "${args[@]}" &
    tail -n +1 --pid=$! -f "$L/$n"
    wait $! || true
done
wait $other || true
cat "$L/3" "$L/4"
debian_suite "$L/5" window ", in a window under Xvfb" &
tail -n +1 --pid=$! -f "$L/5"
wait $! || true
failed=()
for n in 1 2 3 4 5; do
    if [ "$(cat "$L/$n.status" 2>/dev/null)" != ok ]; then failed+=("$(head -1 "$L/$n" | cut -c4-)"); fi
done
if [ ${#failed[@]} -gt 0 ]; then
    printf 'FAILED suite: %s\n' "${failed[@]}" >&2
    exit 1
fi
