#!/usr/bin/env bash
# Set up, then run every test: the solver tests and the Blender tests through the bpy 5.0 wheel in
# one pytest session; the Blender tests again through the bpy 4.2 LTS wheel (Python 3.11) and the
# bpy 5.2 LTS wheel (Python 3.13); then inside Debian's `blender -b` (Blender 3.4, legacy add-on)
# through pytest-blender. Every suite runs even if one fails; the exit status says whether all
# passed. Extra arguments go to every pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# The three wheel environments at once (mostly unpacking wheels); `wait` stops here if one failed.
bash scripts/setup.sh &
setup=$!
bash scripts/setup_blenders.sh &
blenders=$!
bash scripts/setup_debian_blender.sh
wait $setup
wait $blenders
mkdir -p .cache/test-logs
# Most of a cold run is numba compiling the solver's kernels, once per cache: a cache is tied to
# one Python and numba and to the folder and module name of the sources (numba rebuilds a cached
# kernel's environment by importing the module that compiled it), so the checkout's `solver` (solver
# tests), the add-on's copy in each Blender, and the extension a zip test installs into a clean
# user directory (cold on purpose) each compile their own; only the 5.0 and 4.2 wheels share one
# (and 4.2's zip test starts from the kernels 5.0's compiled). Two lanes side by side, as most tests
# use one core of two; they take about as long. Lane 1: the Python 3.11 suites, which share numba's
# cache and the add-on's copy (tests/blender/conftest.py), one after the other, their output shown
# as it comes. Lane 2: the Python 3.13 suite, then Debian's (each its own cache and copy), printed
# when they end. Debian's tests that drive a window under Xvfb (marked `window`) check what a live
# bake shows while it runs, and a busy machine can let the bake finish before the window looks:
# they run last, alone. Simulation-heavy Blender tests (marked `physics`) run in Blender 5.0 and
# 4.2 LTS, whose kernels are compiled once for both; the API tests run in every Blender.
suite() {  # name, log file, command...
    local name=$1 log=$2 start status
    shift 2
    start=$(date +%s)
    echo "== $name" >>"$log"
    if "$@" >>"$log" 2>&1; then status=ok; else status=failed; fi
    echo "== $status in $(( $(date +%s) - start )) s: $name" >>"$log"
    echo $status >"$log.status"
}
L=.cache/test-logs
rm -f "$L"/*
for n in 1 2 3 4 5; do : >"$L/$n"; done
extra=("$@")
debian="$(blender --version 2>/dev/null | head -1)"
debian_suite() {  # log file, marker expression, what runs
    suite "Blender tests in $debian$3 (blender -b, pytest-blender)" "$1" \
        env NUMBA_CACHE_DIR="$PWD/.cache/numba-debian" CLOTH_SOLVER_TESTS_PHYSICS=0 \
        .venv-blender/bin/pytest \
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
        args=(env NUMBA_CACHE_DIR="$PWD/.cache/numba-py311"
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
grep -h "^== [a-z]* in " "$L"/[1-5] || true
# Kernel signatures compiled into each cache (numba writes one .nbc file per signature).
for cache in .cache/numba-* .cache/zip-test-user-*; do
    if [ -d "$cache" ]; then echo "$(find "$cache" -name '*.nbc' | wc -l) kernel signatures in $cache"; fi
done
failed=()
for n in 1 2 3 4 5; do
    if [ "$(cat "$L/$n.status" 2>/dev/null)" != ok ]; then failed+=("$(head -1 "$L/$n" | cut -c4-)"); fi
done
if [ ${#failed[@]} -gt 0 ]; then
    printf 'FAILED suite: %s\n' "${failed[@]}" >&2
    exit 1
fi
