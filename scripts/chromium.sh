#!/usr/bin/env bash
# Debian's Chromium and its WebDriver (packages `chromium` and `chromium-driver`), for the
# console's browser test (tests/tests/console.rs, tests/mcp/console_browser.py). Installs them
# with apt-get when either is missing (as root, or through sudo); does nothing when both are
# there. Prints the two programs' paths on stdout:
#
#   bash scripts/chromium.sh     # /usr/bin/chromium /usr/bin/chromedriver
#
# Nothing is downloaded but Debian's packages: Selenium is handed both paths, so its own
# manager looks nothing up.
set -euo pipefail

have() { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; }

if ! have; then
    started=$SECONDS
    as_root=()
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || {
            echo "chromium: chromium and chromium-driver are missing and this user cannot install them; as root: apt-get install chromium chromium-driver" >&2
            exit 1
        }
        as_root=(sudo)
    fi
    echo "chromium: installing Debian's chromium and chromium-driver" >&2
    export DEBIAN_FRONTEND=noninteractive
    # An old package list may not know the current version: read it again, then install.
    "${as_root[@]}" apt-get update -qq >&2
    "${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium chromium-driver >&2
    have || { echo "chromium: installed, but chromium or chromedriver is not on PATH" >&2; exit 1; }
    echo "chromium: installed in $((SECONDS - started)) s" >&2
fi
echo "$(command -v chromium) $(command -v chromedriver)"
