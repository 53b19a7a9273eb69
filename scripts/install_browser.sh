#!/usr/bin/env bash
# Install headless Chromium and its WebDriver from Debian's packages, for the browser tests of
# `nepotism annotate` (tests/annotate/test_browser.py). Idempotent: does nothing when both are
# already there, and only warns (exit 0) where apt-get is missing or we are not root, so the
# browser tests then skip with a reason instead of failing the run.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_browser.sh: apt-get not found; browser tests will be skipped" >&2
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "install_browser.sh: not root and no passwordless sudo; browser tests will be skipped" >&2
        exit 0
    fi
else
    SUDO=""
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
command -v chromium >/dev/null && command -v chromedriver >/dev/null
