#!/usr/bin/env bash
# The dashboard in a real browser (API.md §15): headless Chromium driven by Python's selenium
# against the real `buzzkit` binary on a free port with a fresh database and a tenant.
# Installs Debian's chromium, chromium-driver and python3-selenium when missing; fails (non-zero)
# if the browser cannot be installed or started: CI never skips this.
# Screenshots of each view land in $DASHBOARD_SCREENSHOTS (default .build/dashboard-screenshots).
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "dashboard-browser-test: $*" >&2; exit 1; }

# Debian's python3 sees Debian's python3-selenium; a pyenv or venv python on PATH may not.
find_python() {
  for candidate in /usr/bin/python3 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import selenium' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  return 1
}

if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null || ! find_python >/dev/null; then
  command -v apt-get >/dev/null || fail "chromium/chromedriver/selenium missing and no apt-get to install them"
  echo "installing chromium, chromium-driver and python3-selenium (apt-get)"
  apt-get update -qq || fail "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver python3-selenium >/dev/null \
    || fail "apt-get install chromium chromium-driver python3-selenium failed"
fi
if ! find_python >/dev/null; then
  python3 -m pip install --quiet selenium || fail "selenium could not be installed with pip either"
fi
PYTHON=$(find_python) || fail "no python3 can import selenium"
command -v chromium >/dev/null || fail "chromium is not installed"
command -v chromedriver >/dev/null || fail "chromedriver is not installed"

BINARY=${BUZZKIT_BINARY:-.build/debug/buzzkit}
if [ -z "${BUZZKIT_BINARY:-}" ]; then
  swift build --product buzzkit >/dev/null || fail "swift build failed"
fi
[ -x "$BINARY" ] || fail "$BINARY is not an executable"

export DASHBOARD_SCREENSHOTS=${DASHBOARD_SCREENSHOTS:-$PWD/.build/dashboard-screenshots}
mkdir -p "$DASHBOARD_SCREENSHOTS"
exec "$PYTHON" scripts/dashboard_browser_test.py --binary "$BINARY"
