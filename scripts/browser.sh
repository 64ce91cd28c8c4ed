#!/usr/bin/env bash
# Debian's chromium, for the tests that open report pages in a real headless browser
# (tests/nemo_runspec/report, driven by playwright from the test extra with
# executable_path=/usr/bin/chromium: no browser download). Idempotent: does nothing when
# chromium is installed. Needs root (apt-get); otherwise says what to run and exits 0,
# and those tests skip (under CI=true a skip fails the run).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "[browser] chromium is not installed; as root: apt-get install chromium (the report tests need it)" >&2
  exit 0
fi
echo "[browser] installing Debian's chromium"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq </dev/null >/dev/null
apt-get install -y -qq --no-install-recommends chromium </dev/null >/dev/null
chromium --version
