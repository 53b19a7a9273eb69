#!/usr/bin/env bash
# Install headless Chromium and its WebDriver from Debian's packages, for the browser tests of
# `nepotism annotate` (tests/annotate/test_browser.py). Idempotent: does nothing when both are
# already there. Where apt-get is missing, we are not root, or the install fails, it only warns
# (exit 0) so the browser tests skip with their reason; with --strict any of these exits 1.
set -euo pipefail

STRICT=0
[ "${1:-}" = "--strict" ] && STRICT=1
give_up() {
    echo "install_browser.sh: $1; the browser tests will be skipped" >&2
    exit "$STRICT"
}

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    give_up "apt-get not found"
fi
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        give_up "not root and no passwordless sudo"
    fi
else
    SUDO=""
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || give_up "apt-get update failed"
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null \
    || give_up "apt-get install chromium chromium-driver failed"
command -v chromium >/dev/null && command -v chromedriver >/dev/null \
    || give_up "chromium or chromedriver still missing after the install"
