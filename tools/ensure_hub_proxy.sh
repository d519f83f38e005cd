#!/usr/bin/env bash
# Install JupyterHub's proxy, configurable-http-proxy (a Node.js program), for tests/hub.
#
# It goes into a private npm prefix (never `npm -g`), inside .venv so `make clean` removes
# it. Node.js and npm come from PATH; as root with apt-get they are installed if missing.
# configurable-http-proxy 5.3.0 wants node >= 20; older nodes (Debian 12's own is 18) get 4.6.3.
# Usage: tools/ensure_hub_proxy.sh PREFIX
set -euo pipefail
prefix=${1:?usage: tools/ensure_hub_proxy.sh PREFIX}
[ -x "$prefix/node_modules/.bin/configurable-http-proxy" ] && exit 0

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "Installing Node.js and npm for JupyterHub's proxy (apt-get) ..."
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    else
        cat >&2 <<MSG
The JupyterHub test needs Node.js and npm (JupyterHub's proxy, configurable-http-proxy,
is a Node.js program), and they are not on PATH. Install them:
  Debian/Ubuntu:  sudo apt-get install nodejs npm
then run make test again.
MSG
        exit 1
    fi
fi

major=$(node -p 'process.versions.node.split(".")[0]')
version=5.3.0
[ "$major" -ge 20 ] || version=4.6.3
echo "Installing configurable-http-proxy@$version into $prefix (npm) ..."
mkdir -p "$prefix"
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
    "configurable-http-proxy@$version" >/dev/null
[ -x "$prefix/node_modules/.bin/configurable-http-proxy" ]
