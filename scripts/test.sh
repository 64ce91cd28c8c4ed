#!/usr/bin/env bash
# Install the project with its test extras, bring up the local Slurm cluster and
# sshd, then run pytest. Extra arguments go to pytest:
#   scripts/test.sh                          # the whole suite
#   scripts/test.sh tests/nemo_runspec/env -k foo # a subset
# Exits with pytest's exit code. Never reads stdin (CI runs it with none).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh test </dev/null
bash scripts/slurm-cluster.sh up </dev/null
# A Docker engine and a local test image for the executor = "docker" tests.
eval "$(bash scripts/docker-engine.sh up </dev/null)"
export NEMOTRON_TEST_DOCKER_HOST="$DOCKER_HOST"

# A hung test must not eat CI's whole time budget.
timeout_arg=()
if .venv/bin/python -c "import pytest_timeout" 2>/dev/null; then
  timeout_arg=(--timeout="${NEMOTRON_TEST_TIMEOUT:-900}")
fi

rc=0
.venv/bin/python -m pytest -q -p no:cacheprovider "${timeout_arg[@]}" "$@" </dev/null || rc=$?
if [ "$rc" = 5 ]; then
  echo "scripts/test.sh: pytest collected no tests" >&2
fi
exit "$rc"
