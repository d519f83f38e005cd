#!/usr/bin/env bash
# Install axe-core (Deque's accessibility rules, an npm package) for tests/browser.
#
# The accessibility test injects node_modules/axe-core/axe.min.js into the JupyterLab page.
# It goes into a private npm prefix (never `npm -g`), inside .venv so `make clean` removes
# it. npm comes from PATH; as root with apt-get, Node.js and npm are installed if missing.
# Usage: tools/ensure_axe.sh PREFIX
set -euo pipefail
prefix=${1:?usage: tools/ensure_axe.sh PREFIX}
version=4.14.1
[ -f "$prefix/node_modules/axe-core/axe.min.js" ] && exit 0

# Two stages that need it may start at once (make test's browser and site-test, or make -j):
# one installs, the other waits for it and then finds it there (flock, where there is one).
mkdir -p "$(dirname "$prefix")"
if command -v flock >/dev/null 2>&1; then
    exec 9>"$prefix.lock"
    flock 9
    [ -f "$prefix/node_modules/axe-core/axe.min.js" ] && exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "Installing Node.js and npm for axe-core (apt-get) ..."
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    else
        cat >&2 <<MSG
The accessibility test needs axe-core from npm, and npm is not on PATH. Install it:
  Debian/Ubuntu:  sudo apt-get install nodejs npm
then run make test again.
MSG
        exit 1
    fi
fi

echo "Installing axe-core@$version into $prefix (npm) ..."
mkdir -p "$prefix"
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "axe-core@$version" >/dev/null
[ -f "$prefix/node_modules/axe-core/axe.min.js" ]
