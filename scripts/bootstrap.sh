#!/usr/bin/env bash
# Create .venv (if missing) and install the project into it, editable.
#   scripts/bootstrap.sh          -> runtime deps (CLI, nemo-run, Ray, tokenizers)
#   scripts/bootstrap.sh test     -> plus torch (CPU), megatron-core, wandb, pytest, hypothesis, ruff,
#                                    the docs tools, playwright, and Debian's chromium (scripts/browser.sh)
# Idempotent: a second run with nothing changed takes a few seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  # Debian's python3 makes a venv only with python3-venv (ensurepip); as root, install it
  if ! "$PY" -c "import ensurepip" 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "[bootstrap] installing Debian's python3-venv (python3 -m venv needs it)"
      { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv; } </dev/null >/dev/null \
        || { echo "[bootstrap] error: apt-get install python3-venv failed" >&2; exit 1; }
    else
      echo "[bootstrap] error: $PY cannot make a venv (no ensurepip): as root, apt-get install python3-venv" >&2
      exit 1
    fi
  fi
  echo "[bootstrap] creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
# Debian's chromium for the report tests; without it those tests skip (fail under CI=true),
# the rest of the set-up goes on
if [ "$extras" = test ]; then
  bash scripts/browser.sh || echo "[bootstrap] chromium could not be installed: the report tests will skip" >&2
fi
stamp=".venv/.installed-${extras:-base}"
want="$(cat pyproject.toml scripts/bootstrap.sh | sha1sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "[bootstrap] .venv up to date (${extras:-base})"
  exit 0
fi
echo "[bootstrap] installing nemotron${extras:+[$extras]} into .venv (first run takes a few minutes)"
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
spec="."
[ -n "$extras" ] && spec=".[$extras]"
# pip's own exit status decides (a pipe into grep would hide it); its output is
# shown afterwards without the noise about the on-disk wheel location.
pip_status=0
.venv/bin/python -m pip install -q --disable-pip-version-check -e "$spec" >.venv/pip-install.log 2>&1 \
  || pip_status=$?
grep -v -E "^WARNING: Location .* is ignored" .venv/pip-install.log || true
if [ "$pip_status" -ne 0 ]; then
  echo "[bootstrap] error: pip install of nemotron${extras:+[$extras]} failed (exit $pip_status); nothing marked installed" >&2
  exit "$pip_status"
fi
.venv/bin/python -c "import nemotron, nemo_runspec" 
if [ "$extras" = test ]; then
  # Megatron-Bridge's wheel without its GPU-only dependencies (transformer-engine):
  # the tests read its source to check our config mapping against the pinned
  # version (nemotron.training.megatron_bridge.PINNED); it is never imported.
  pin="$(.venv/bin/python -c 'from nemotron.training.megatron_bridge import PINNED; print(PINNED)')"
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "$pin" >>.venv/pip-install.log 2>&1 \
    || { echo "[bootstrap] error: pip install --no-deps $pin failed (see .venv/pip-install.log)" >&2; exit 1; }
fi
echo "$want" > "$stamp"
echo "[bootstrap] done"
