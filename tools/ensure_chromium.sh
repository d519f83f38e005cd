#!/usr/bin/env bash
# Give the browser tests a Chromium to drive, or say exactly what to run: make test calls this.
#
#   1. Debian's /usr/bin/chromium, if installed;
#   2. a Chromium that Playwright manages, if one was installed before;
#   3. as root with apt-get (CI, a container): apt-get install chromium;
#   4. `playwright install chromium`, where the network allows it;
#   5. otherwise one message naming the command, and a failing exit status.
#
# tests/support/labdriver.py (find_browser) looks in the same order.
# Usage: tools/ensure_chromium.sh VENV_BIN
set -uo pipefail
bin=${1:?usage: tools/ensure_chromium.sh VENV_BIN}

managed_chromium() {  # exit 0 if Playwright's own Chromium is on disk
    "$bin/python" - <<'PY' 2>/dev/null
from pathlib import Path
from playwright.sync_api import sync_playwright

with sync_playwright() as playwright:
    raise SystemExit(0 if Path(playwright.chromium.executable_path).exists() else 1)
PY
}

[ -x /usr/bin/chromium ] && exit 0
managed_chromium && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian's chromium for the browser tests (apt-get, about a minute) ..."
    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; then
        [ -x /usr/bin/chromium ] && exit 0
    fi
fi

echo "Trying a Chromium managed by Playwright ($bin/playwright install chromium) ..."
log=$(mktemp)
if timeout 600 "$bin/playwright" install chromium >"$log" 2>&1 && managed_chromium; then
    rm -f "$log"
    exit 0
fi
grep -m 1 -i "error" "$log" | sed 's/^/  playwright says: /'
rm -f "$log"
cat >&2 <<MSG

The browser tests need Chromium, and none could be set up on this machine. Install one:
  Debian/Ubuntu:  sudo apt-get install chromium
  elsewhere:      $bin/playwright install --with-deps chromium
then run make test again.
MSG
exit 1
