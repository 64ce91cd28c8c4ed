#!/bin/bash
# Start a Docker engine for the executor = "docker" tests, and import a local test image.
#
#   scripts/docker-engine.sh up     # install docker.io (Debian, as root), start dockerd, import the image
#   scripts/docker-engine.sh down   # stop the dockerd this script started
#
# No registry is reachable here, so the image is imported from the squashfs test image
# (/var/tmp/pyxis-enroot/images/bookworm-python3.sqsh, python3 inside) instead of pulled.
# Prints `export DOCKER_HOST=...` on success; tests read NEMOTRON_TEST_DOCKER_HOST.
set -euo pipefail
SOCK=/run/docker-nemotron.sock
PIDFILE=/run/docker-nemotron.pid
IMAGE=nemotron-test/python3:bookworm
SQSH=${NEMOTRON_TEST_SQSH:-/var/tmp/pyxis-enroot/images/bookworm-python3.sqsh}
export DOCKER_HOST=unix://$SOCK

case "${1:-up}" in
  down)
    [ -f "$PIDFILE" ] && kill "$(cat "$PIDFILE")" 2>/dev/null || true
    exit 0 ;;
  up) ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac

command -v dockerd >/dev/null || { apt-get install -y docker.io >/dev/null || { apt-get update >/dev/null && apt-get install -y docker.io >/dev/null; }; }
command -v unsquashfs >/dev/null || apt-get install -y squashfs-tools >/dev/null
if ! docker version >/dev/null 2>&1; then
  # no systemd here: dockerd in the background; vfs works without overlayfs
  setsid dockerd --storage-driver=vfs --data-root=/var/lib/docker-nemotron \
    --exec-root=/run/docker-nemotron -H "$DOCKER_HOST" --pidfile="$PIDFILE" \
    >/var/log/docker-nemotron.log 2>&1 < /dev/null &
  for _ in $(seq 60); do docker version >/dev/null 2>&1 && break; sleep 0.5; done
  docker version >/dev/null 2>&1 || { echo "dockerd did not start:" >&2; tail -5 /var/log/docker-nemotron.log >&2; exit 1; }
fi
if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  unsquashfs -q -d "$tmp/rootfs" "$SQSH" >/dev/null
  tar -C "$tmp/rootfs" -c . | docker import - "$IMAGE" >/dev/null
fi
docker run --rm --network none "$IMAGE" python3 -c 'print("docker engine ok")' >&2
echo "export DOCKER_HOST=$DOCKER_HOST"
