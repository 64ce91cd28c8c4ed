#!/usr/bin/env bash
# A Docker engine for the executor = "docker" tests, with a local test image. Debian, as root.
#
#   scripts/docker-engine.sh up     install docker.io if missing, start dockerd on its own
#                                   socket, import the test image (idempotent)
#   scripts/docker-engine.sh down   stop the dockerd this script started
#
# No registry is needed: the image is the project's own test image (scripts/containers.sh
# image: Debian bookworm minbase + python3, squashed), unpacked and imported as
# nemotron-test/python3:bookworm. On success `up` prints `export DOCKER_HOST=...` on stdout
# (scripts/test.sh evals it; tests read NEMOTRON_TEST_DOCKER_HOST); on failure its last line
# on stderr is `[docker-engine] error: ...` and the exit status is 1.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SOCK=/run/docker-nemotron.sock
PIDFILE=/run/docker-nemotron.pid
DATA_ROOT=/var/lib/docker-nemotron
LOG=/var/log/docker-nemotron.log
TAG=nemotron-test/python3:bookworm
# the squashfs image to import: the pyxis test image unless NEMOTRON_DOCKER_IMAGE names another
IMAGE="${NEMOTRON_DOCKER_IMAGE:-${NEMOTRON_CONTAINER_IMAGE:-/var/tmp/pyxis-enroot/images/bookworm-python3.sqsh}}"
export DOCKER_HOST="unix://$SOCK"

say() { echo "[docker-engine] $*" >&2; }
# Every failure ends in one line: fail's own, or (a command that failed under set -e) the EXIT trap's.
DIED=0 TMP=""
fail() { echo "[docker-engine] error: $*" >&2; DIED=1; exit 1; }
on_exit() {
  [ -z "$TMP" ] || rm -rf "$TMP"
  [ "$1" = 0 ] || [ "$1" = 2 ] || [ "$DIED" = 1 ] || echo "[docker-engine] error: '$2' failed (exit $1)" >&2
}
trap 'on_exit "$?" "$BASH_COMMAND"' EXIT

case "${1:-up}" in
  down)
    [ -f "$PIDFILE" ] && kill "$(cat "$PIDFILE")" 2>/dev/null || true
    exit 0 ;;
  up) ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac

[ "$(id -u)" = 0 ] || fail "must run as root (installs docker.io, starts dockerd)"

if ! command -v dockerd >/dev/null; then
  say "installing docker.io (apt-get)"
  # Package scripts must not start a daemon of their own: we start ours below.
  own_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && own_policy=1
  fi
  rc=0
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io; } \
    </dev/null >/var/log/docker-nemotron-apt.log 2>&1 || rc=$?
  [ "$own_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
  [ "$rc" = 0 ] || fail "could not install docker.io (apt-get exit $rc; log: /var/log/docker-nemotron-apt.log)"
fi

# The image comes first: without it a running engine is of no use to the tests.
if ! out="$(NEMOTRON_CONTAINER_IMAGE="$IMAGE" bash "$REPO/scripts/containers.sh" image 2>&1 </dev/null)"; then
  fail "no test image: ${out##*\[containers\] error: }"
fi

fresh=0  # 1: an engine or image of this run, checked by running a container (~15 s with vfs)
if ! docker version >/dev/null 2>&1; then
  fresh=1
  # No systemd here: dockerd in the background, on its own socket and data root; the vfs
  # storage driver needs no overlayfs support from the kernel.
  setsid dockerd --storage-driver=vfs --data-root="$DATA_ROOT" --exec-root=/run/docker-nemotron \
    -H "$DOCKER_HOST" --pidfile="$PIDFILE" >"$LOG" 2>&1 </dev/null &
  for _ in $(seq 60); do docker version >/dev/null 2>&1 && break; sleep 0.5; done
  docker version >/dev/null 2>&1 || fail "dockerd did not start within 30 s: $(grep -v '^$' "$LOG" | tail -n 1) (log: $LOG)"
fi
if ! docker image inspect "$TAG" >/dev/null 2>&1; then
  fresh=1
  TMP="$(mktemp -d)"
  unsquashfs -q -d "$TMP/rootfs" "$IMAGE" >/dev/null || fail "unsquashfs $IMAGE failed"
  tar -C "$TMP/rootfs" -c . | docker import - "$TAG" >/dev/null || fail "docker import of $IMAGE failed"
fi
if [ "$fresh" = 1 ]; then
  out="$(docker run --rm --network none "$TAG" python3 -c 'print("docker engine ok")' 2>&1)" \
    || fail "docker run $TAG failed: ${out##*$'\n'}"
  say "$out"
fi
say "ready: $TAG on $DOCKER_HOST"
echo "export DOCKER_HOST=$DOCKER_HOST"
