#!/usr/bin/env bash
# The other Blenders the tests run in, each as the bpy wheel in its own virtual environment:
# Blender 4.2 LTS (Python 3.11, .venv-bpy42) and Blender 5.2 LTS (Python 3.13, .venv-bpy52).
# Python 3.13 is found as $PYTHON313, python3.13 on PATH, or an installed pyenv 3.13.x.
set -euo pipefail
cd "$(dirname "$0")/.."

is_python313() {  # a pyenv shim is on PATH even where its version is not active: run it
    [ -n "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null
}

find_python313() {
    local candidate version
    for candidate in "${PYTHON313:-}" "$(command -v python3.13 || true)"; do
        if is_python313 "$candidate"; then echo "$candidate"; return; fi
    done
    if command -v pyenv >/dev/null; then
        version=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.13(\.[0-9]+)?$' | sort -V | tail -n 1)
        if [ -n "$version" ]; then
            candidate=$(PYENV_VERSION=$version pyenv which python3.13)
            if is_python313 "$candidate"; then echo "$candidate"; return; fi
        fi
    fi
    echo "setup_blenders: Python 3.13 is needed for the Blender 5.2 tests (the bpy 5.2 wheel" \
         "is built for it) and none was found: install it (for example 'pyenv install 3.13')" \
         "or set PYTHON313=/path/to/python3.13" >&2
    exit 1
}

make_venv() {  # folder, python, requirements file
    if [ ! -x "$1/bin/python" ]; then
        "$2" -m venv "$1"
    fi
    "$1/bin/python" -m pip install --quiet --upgrade pip
    "$1/bin/python" -m pip install --quiet -r "$3"
}

python313=$(find_python313)  # on its own line so that set -e stops here if none is found
# Both at once (each mostly unpacks its wheels); `wait` stops the script if either failed.
make_venv .venv-bpy42 "${PYTHON:-python3}" requirements-blender-4.2.txt &
bpy42=$!
make_venv .venv-bpy52 "$python313" requirements-blender-5.2.txt
wait $bpy42
