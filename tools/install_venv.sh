#!/usr/bin/env bash
# Create VENV if needed and install the course into it: tools/install_venv.sh VENV SPEC
#   SPEC "."        what the lessons import (make lab)
#   SPEC ".[dev]"   that, the instructor's tools and the test tools (make test)
# The course is installed editable (-e), so a change to lessonkit/ reaches the kernels
# without a reinstall. uv where it is on the PATH (seconds), else python -m venv and pip.
# PYTHON names the interpreter for a new venv (default python3).
set -euo pipefail
venv=${1:?usage: tools/install_venv.sh VENV SPEC}
spec=${2:?usage: tools/install_venv.sh VENV SPEC}
python=${PYTHON:-python3}

if command -v uv >/dev/null 2>&1; then
    echo "Setting up $venv ($spec) with uv ..."
    [ -x "$venv/bin/python" ] || uv venv --quiet --python "$python" "$venv"
    # --compile-bytecode: as pip does by itself (bench/README.md, "Kernel memory per lesson")
    uv pip install --quiet --compile-bytecode --python "$venv/bin/python" -e "$spec"
else
    echo "Setting up $venv ($spec) with pip (install uv for a 10x faster set-up: pip install uv) ..."
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -e "$spec"
fi
