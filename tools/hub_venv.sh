#!/usr/bin/env bash
# The course's environment for a hub whose learners are Unix users: tests/hub builds one per run.
#
# Every learner's server and kernels run from it, so every user must be able to read it and
# run its Python: it is made from the system's interpreter (Debian's /usr/bin/python3, not
# a pyenv or conda Python under root's 0700 home), in a folder outside /root, mode 0755,
# files 0644, nobody but root able to write. The course is installed from this checkout as
# a copy (not editable: an editable install points into the checkout, which other users
# may not be able to read), with JupyterHub's single-user server at the given version.
# uv where present (seconds), else venv + pip (Debian: apt-get install python3-venv).
# Bytecode is compiled at install: a learner cannot write __pycache__ here, and without it
# every server and kernel would compile its imports again at each start.
#
# Usage: tools/hub_venv.sh VENV JUPYTERHUB_VERSION     (HUB_PYTHON: default /usr/bin/python3)
set -euo pipefail
venv=${1:?usage: tools/hub_venv.sh VENV JUPYTERHUB_VERSION}
jupyterhub=${2:?usage: tools/hub_venv.sh VENV JUPYTERHUB_VERSION}
python=${HUB_PYTHON:-/usr/bin/python3}
course=$(cd "$(dirname "$0")/.." && pwd)
umask 022

if [ ! -x "$python" ]; then
    echo "tools/hub_venv.sh: $python is missing; install the system's Python 3 (apt-get install python3 python3-venv) or set HUB_PYTHON." >&2
    exit 1
fi
if command -v uv >/dev/null 2>&1; then
    UV_PYTHON_DOWNLOADS=never uv venv --quiet --python "$python" "$venv"
    # --refresh-package: build the course from this checkout now, never a cached build of it
    uv pip install --quiet --compile-bytecode --python "$venv/bin/python" \
        --refresh-package streaming-course "$course" "jupyterhub==$jupyterhub"
else
    if ! "$python" -c "import ensurepip, venv" 2>/dev/null; then
        echo "tools/hub_venv.sh: $python cannot make a venv; install python3-venv (apt-get install python3-venv)." >&2
        exit 1
    fi
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "$course" "jupyterhub==$jupyterhub"
fi
chmod -R a+rX,go-w "$venv"
