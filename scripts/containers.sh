#!/usr/bin/env bash
# Container support for the local test cluster: enroot and pyxis built from their pinned
# release sources, pyxis enabled in this Slurm, and a test image made here without any
# registry. Debian 12 with Slurm from Debian, as root. `scripts/slurm-cluster.sh up` runs
# `up`; scripts/docker-engine.sh runs `image`. See docs/dev/containers.md.
#
#   scripts/containers.sh up            install what is missing, enable pyxis, make the image
#                                       (idempotent: about 2 s when everything is there)
#   scripts/containers.sh status        one line: ready, or what is missing and why; exit 1 if not ready
#   scripts/containers.sh image         only the test image (debootstrap + mksquashfs)
#   scripts/containers.sh fetch [DIR]   only download and verify the two source tarballs (into DIR)
#   scripts/containers.sh build DIR     fetch into DIR, then build both under DIR/stage; installs nothing
#
# Where the source tarballs come from, first match wins; whatever the source, a file is
# used only when it matches the sha256 pinned below, and verified copies are kept in the cache:
#   1. the cache (NEMOTRON_CONTAINER_CACHE, default /var/tmp/nemotron-containers/sources)
#   2. NEMOTRON_ENROOT_SRC / NEMOTRON_PYXIS_SRC: a URL (https://, http://, file://) or a file
#   3. NEMOTRON_CONTAINER_KIT: a directory holding enroot-4.1.2.tar.gz and pyxis-0.24.0.tar.gz
#   4. the workplace kit at $REPO_PARENT/shared/tools/pyxis-enroot, only if it exists there
#   5. GitHub's archive of the release tag (the default on a user's machine)
# Other settings: NEMOTRON_CONTAINER_IMAGE (the test image), NEMOTRON_DEBIAN_MIRROR
# (debootstrap's mirror; default: this machine's apt source), PYXIS_ARGS (plugstack options,
# default use_squashfuse=true), NEMOTRON_CONTAINER_WORK (build dir and logs).
# Every failure ends with one line `[containers] error: ...` on stderr and exit status 1.
set -euo pipefail
umask 022

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Pins. The tarballs are GitHub's source archives of the release tags (git archive of the
# tag, gzip -n). *_SHA256 is the archive's sha256; *_TAR_SHA256 is the sha256 of the tar
# inside it, which does not depend on how the tar was compressed: a copy re-compressed
# elsewhere (the workplace kit's copies were compressed by git's own gzip and have another
# .tar.gz sha256) is accepted when its tar matches. Both values were computed here from
# `git archive --prefix=NAME-VERSION/ vVERSION` of NVIDIA's repositories at these tags
# (enroot v4.1.2 = bd51f53b6fa9, pyxis v0.24.0 = 107519944221); this machine cannot reach
# GitHub, so the archive sha256 is GitHub's own only where docs/dev/containers.md says it was
# confirmed. Bump a version only together with both sha256 values.
ENROOT_VERSION=4.1.2
ENROOT_URL="https://github.com/NVIDIA/enroot/archive/refs/tags/v$ENROOT_VERSION.tar.gz"
ENROOT_SHA256=9f8c589bf2537cf5ac042358c49b3f203b5c8ed8dc646010719eb728d76da4ac
ENROOT_TAR_SHA256=aa67095a002fef365e9404d8a336beeb4e5e36409a0e0b682bd7496861dea0d3
PYXIS_VERSION=0.24.0
PYXIS_URL="https://github.com/NVIDIA/pyxis/archive/refs/tags/v$PYXIS_VERSION.tar.gz"
PYXIS_SHA256=9c4cdb79a67301d8ea05951aa4d2c205f40cf6145e338214b0191add8b36d6c4
PYXIS_TAR_SHA256=b406327c172809248d6015a4c514a1ab7974a6a132b5e70b191d6ac5ab2523d0

STATE_DIR=/var/tmp/nemotron-containers
CACHE="${NEMOTRON_CONTAINER_CACHE:-$STATE_DIR/sources}"
WORK="${NEMOTRON_CONTAINER_WORK:-$STATE_DIR/build}"
LOGS="$WORK/logs"
LAST_ERROR="$STATE_DIR/last-error"   # why the last `up` failed, for `status`
# Workplace shortcut (optional): the machine this project is developed on keeps a kit with
# both tarballs beside its checkouts. Used only when it exists and nothing above names a
# source; a user's clone has nothing there and downloads instead.
WORKPLACE_KIT="$(dirname "$REPO")/shared/tools/pyxis-enroot"
IMAGE="${NEMOTRON_CONTAINER_IMAGE:-/var/tmp/pyxis-enroot/images/bookworm-python3.sqsh}"
IMAGE_MARKER=/etc/pyxis-test-image          # exists only inside the test image
SUITE=bookworm
PREFIX=/usr/local
PLUGIN="$PREFIX/lib/slurm/spank_pyxis.so"
PLUGSTACK=/etc/slurm/plugstack.conf
PYXIS_DROPIN=/etc/slurm/plugstack.conf.d/pyxis.conf
# use_squashfuse: a step starts a .sqsh image in place (about 1 s) instead of unpacking it (about 4 s)
PYXIS_ARGS="${PYXIS_ARGS-use_squashfuse=true}"
ENROOT_DROPIN=/etc/enroot/enroot.conf.d/50-local-slurm.conf

say() { echo "[containers] $*"; }

# Every failure ends in one line: die's own, or (a command that failed under set -e) the
# EXIT trap's. `up` also keeps it in $LAST_ERROR.
RECORD_ERROR=0 DIED=0 CLEANUP=()
die() {
  echo "[containers] error: $*" >&2
  [ "$RECORD_ERROR" = 0 ] || printf '%s\n' "$*" >"$LAST_ERROR"
  DIED=1
  exit 1
}
on_exit() {
  local rc="$1" cmd="$2"
  [ "${#CLEANUP[@]}" -eq 0 ] || rm -rf "${CLEANUP[@]}"
  if [ "$rc" != 0 ] && [ "$rc" != 2 ] && [ "$DIED" = 0 ]; then
    DIED=1
    die "'$cmd' failed (exit $rc)"
  fi
}
trap 'on_exit "$?" "$BASH_COMMAND"' EXIT

# run_logged NAME CMD...: run CMD with its output in $LOGS/NAME.log; on failure show the
# log's tail and die naming the log.
run_logged() {
  local name="$1"; shift
  install -d -m 0755 "$LOGS"
  if ! "$@" </dev/null >"$LOGS/$name.log" 2>&1; then
    tail -n 20 "$LOGS/$name.log" >&2
    die "$name failed (log: $LOGS/$name.log)"
  fi
}

# write_if_changed FILE CONTENT: atomic replace, only when the content differs; 0 when written.
write_if_changed() {
  if [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; then return 1; fi
  install -d -m 0755 "$(dirname "$1")"
  printf '%s\n' "$2" >"$1.tmp.$$"
  chmod 0644 "$1.tmp.$$"
  mv -f "$1.tmp.$$" "$1"
}

# ------------------------------------------------------------------------------ packages
# enroot's run-time needs (its Debian package's Depends, plus squashfuse and fuse-overlayfs
# to start a .sqsh in place), the compilers and Slurm's spank.h for the builds, makeself
# (enroot bundles it as enroot-makeself; Debian's is the release enroot pins, 2.4.5), and
# debootstrap + squashfs-tools for the image.
PACKAGES=(build-essential libslurm-dev makeself curl ca-certificates gawk jq parallel passwd
          squashfs-tools squashfuse fuse-overlayfs zstd pigz bsdmainutils debootstrap)

ensure_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  say "installing Debian packages: ${missing[*]}"
  run_logged apt-get-update apt-get update -q
  run_logged apt-get-install env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# ------------------------------------------------------------------------------ sources
sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# verify FILE GZ_SHA TAR_SHA: the file is the pinned archive, or a re-compression of its tar.
verify() {
  [ "$(sha256_of "$1")" = "$2" ] && return 0
  [ "$(gzip -dc "$1" 2>/dev/null | sha256sum | cut -d' ' -f1)" = "$3" ]
}

# source_of NAME SRC_VAR URL: where NAME comes from when it is not cached (see the header).
source_of() {
  local name="$1" explicit="${!2:-}"
  if [ -n "$explicit" ]; then echo "$explicit"
  elif [ -n "${NEMOTRON_CONTAINER_KIT:-}" ]; then echo "$NEMOTRON_CONTAINER_KIT/$name"
  elif [ -f "$WORKPLACE_KIT/$name" ]; then echo "$WORKPLACE_KIT/$name"
  else echo "$3"
  fi
}

# obtain DIR NAME SRC_VAR URL GZ_SHA TAR_SHA: make DIR/NAME a verified copy and set
# OBTAINED to its path. Nothing unverified is ever left under NAME.
OBTAINED=""
obtain() {
  local dir="$1" name="$2" src_var="$3" url="$4" gz="$5" tar="$6"
  local dest="$dir/$name" src tmp err
  OBTAINED="$dest"
  if [ -f "$dest" ] && verify "$dest" "$gz" "$tar"; then return 0; fi
  src="$(source_of "$name" "$src_var" "$url")"
  install -d -m 0755 "$dir"
  tmp="$(mktemp "$dir/.$name.XXXXXX")"
  CLEANUP+=("$tmp")
  case "$src" in
    http://*|https://*|file://*)
      command -v curl >/dev/null || die "curl is not installed (apt-get install curl), needed to download $src"
      say "downloading $name from $src"
      err="$(curl -fsSL --connect-timeout 15 --retry 2 -o "$tmp" "$src" 2>&1)" \
        || die "could not download $name from $src: ${err##*$'\n'}"  # (--retry repeats the error)
      ;;
    *)
      [ -f "$src" ] || die "$name not found at $src"
      say "using $name from $src"
      cp "$src" "$tmp" ;;
  esac
  verify "$tmp" "$gz" "$tar" \
    || die "$name from $src: sha256 $(sha256_of "$tmp") is not the pinned $gz (nor is its tar the pinned $tar); refused"
  chmod 0644 "$tmp"
  mv -f "$tmp" "$dest"
}

fetch_enroot() { obtain "$1" "enroot-$ENROOT_VERSION.tar.gz" NEMOTRON_ENROOT_SRC "$ENROOT_URL" "$ENROOT_SHA256" "$ENROOT_TAR_SHA256"; }
fetch_pyxis() { obtain "$1" "pyxis-$PYXIS_VERSION.tar.gz" NEMOTRON_PYXIS_SRC "$PYXIS_URL" "$PYXIS_SHA256" "$PYXIS_TAR_SHA256"; }

# ------------------------------------------------------------------------------ builds
# build_enroot TARBALL BUILD_DIR STAGE: compile enroot and install it under STAGE (DESTDIR).
build_enroot() {
  local src="$2/enroot-$ENROOT_VERSION"
  rm -rf "$src"
  tar -xzf "$1" -C "$2"
  # A source archive has no git submodules (musl, linux-headers, makeself): build the helpers
  # against glibc and this system's kernel headers, and bundle Debian's makeself.
  install -m 0755 /usr/bin/makeself "$src/deps/makeself/makeself.sh"
  touch "$src/deps/linux-headers/.stamp"
  # enroot's helpers call BSD's strlcpy/strlcat, which glibc has only from 2.38 (Debian 12: 2.36).
  local cppflags=""
  if ! printf '#include <string.h>\nint main(void){char b[2];return (int)strlcpy(b,"",2);}\n' |
      gcc -x c -Werror=implicit-function-declaration -o /dev/null - 2>/dev/null; then
    write_strl_compat "$src/strl-compat.h"
    cppflags="-include $src/strl-compat.h"
  fi
  # Build with the final paths first: `install` then only copies, so DESTDIR stays out of
  # the paths baked into bin/enroot and enroot.conf. GIT_DIR: the Makefile's `git submodule
  # update` must not find any enclosing repository.
  local make_args=(-C "$src" FORCE_GLIBC=1 prefix="$PREFIX" sysconfdir=/etc)
  run_logged enroot-build env GIT_DIR=/dev/null CPPFLAGS="$cppflags" make -j"$(nproc)" "${make_args[@]}" all
  run_logged enroot-stage env GIT_DIR=/dev/null CPPFLAGS="$cppflags" make "${make_args[@]}" DESTDIR="$3" install
  [ "$("$3$PREFIX/bin/enroot" version)" = "$ENROOT_VERSION" ] || die "the enroot just built does not say version $ENROOT_VERSION"
}

# Only compiler-provided headers here: a libc header included before a source file's own
# feature macros (_GNU_SOURCE) would fix the wrong feature set for the whole file.
write_strl_compat() {
  cat >"$1" <<'EOF'
#ifndef NEMOTRON_STRL_COMPAT_H
#define NEMOTRON_STRL_COMPAT_H
#include <stddef.h>
/* BSD semantics: copy/append at most size-1 bytes, always terminate, return the length
   the result would have had without truncation. */
static inline size_t compat_strlcpy(char *dst, const char *src, size_t size)
{
	size_t len = 0, i;
	while (src[len] != '\0')
		len++;
	if (size == 0)
		return len;
	for (i = 0; i < len && i < size - 1; i++)
		dst[i] = src[i];
	dst[i] = '\0';
	return len;
}
static inline size_t compat_strlcat(char *dst, const char *src, size_t size)
{
	size_t used = 0, len = 0;
	while (used < size && dst[used] != '\0')
		used++;
	if (used == size) {
		while (src[len] != '\0')
			len++;
		return size + len;
	}
	return used + compat_strlcpy(dst + used, src, size - used);
}
#define strlcpy compat_strlcpy
#define strlcat compat_strlcat
#endif
EOF
}

# build_pyxis TARBALL BUILD_DIR STAGE: compile pyxis against this Slurm's spank.h (Slurm
# refuses a plugin built for another release) and put the plugin under STAGE.
build_pyxis() {
  local src="$2/pyxis-$PYXIS_VERSION"
  rm -rf "$src"
  tar -xzf "$1" -C "$2"
  run_logged pyxis-build make -C "$src" -j"$(nproc)"
  install -D -m 0644 "$src/spank_pyxis.so" "$3$PLUGIN"
}

# ------------------------------------------------------------------------------ install
# bin/enroot is what `enroot_installed` looks at: it is copied last, so an interrupted
# install is redone next time.
enroot_installed() { [ "$("$PREFIX/bin/enroot" version 2>/dev/null)" = "$ENROOT_VERSION" ]; }
pyxis_installed() { [ -f "$PLUGIN" ] && grep -qaF "pyxis: version v$PYXIS_VERSION" "$PLUGIN"; }
srun_has_pyxis() { srun --help 2>/dev/null | grep -q -- '--container-image'; }

# install_stage STAGE: copy files (not directory modes) over the system; replaced files are
# unlinked first, so running processes keep the ones they have open.
install_stage() {
  local stage="$1" enroot_bin=".$PREFIX/bin/enroot"
  (cd "$stage" && tar -c --exclude="$enroot_bin" .) | tar -C / -x --no-overwrite-dir --no-same-owner
  if [ -f "$stage/$enroot_bin" ]; then
    install -m 0755 "$stage/$enroot_bin" "$PREFIX/bin/enroot.tmp.$$"
    mv -f "$PREFIX/bin/enroot.tmp.$$" "$PREFIX/bin/enroot"
  fi
}

ensure_enroot() {
  if enroot_installed; then return 0; fi
  local stage="$WORK/stage-enroot"
  fetch_enroot "$CACHE"
  say "building enroot $ENROOT_VERSION"
  rm -rf "$stage"
  build_enroot "$OBTAINED" "$WORK" "$stage"
  install_stage "$stage"
  rm -rf "$stage"
  enroot_installed || die "enroot $ENROOT_VERSION is not what $PREFIX/bin/enroot says after installing it"
  say "enroot $ENROOT_VERSION installed in $PREFIX"
}

enroot_config() {
  # The test cluster's nodes share this host's filesystem: keep enroot's container store per
  # node (SLURM_TOPOLOGY_ADDR is the node name in the environment pyxis gives enroot, at
  # creation and at removal), or n1 and n2 unpack the same pyxis_<job>.<step> into one
  # directory. Without nvidia-container-cli, NVIDIA_VISIBLE_DEVICES=void by default (a job's
  # own value wins) lets CUDA images start CPU-only instead of failing in enroot's GPU hook.
  local gpus=""
  command -v nvidia-container-cli >/dev/null 2>&1 || gpus=$'\nNVIDIA_VISIBLE_DEVICES void'
  write_if_changed "$ENROOT_DROPIN" '# Managed by nemotron scripts/containers.sh (nodes of the local test cluster share one host).
ENROOT_RUNTIME_PATH    /run/enroot/user-$(id -u)
ENROOT_DATA_PATH       /var/tmp/enroot-data/${SLURM_TOPOLOGY_ADDR:-${SLURMD_NODENAME:-local}}/user-$(id -u)
ENROOT_CACHE_PATH      /var/tmp/enroot-cache/user-$(id -u)
ENROOT_TEMP_PATH       ${TMPDIR:-/tmp}
ENROOT_ROOTFS_WRITABLE yes'"$gpus" && say "wrote $ENROOT_DROPIN" || true
  install -d -m 1777 /run/enroot /var/tmp/enroot-data /var/tmp/enroot-cache
}

install_pyxis() {
  local stage="$WORK/stage-pyxis"
  fetch_pyxis "$CACHE"
  say "building pyxis $PYXIS_VERSION against libslurm-dev $(dpkg-query -W -f='${Version}' libslurm-dev)"
  rm -rf "$stage"
  build_pyxis "$OBTAINED" "$WORK" "$stage"
  # atomic replace: steps that have the old plugin mapped keep it
  install -D -m 0644 "$stage$PLUGIN" "$PLUGIN.tmp.$$"
  mv -f "$PLUGIN.tmp.$$" "$PLUGIN"
  rm -rf "$stage"
  say "pyxis $PYXIS_VERSION installed: $PLUGIN"
}

ensure_pyxis() {
  local built=0
  if ! pyxis_installed; then install_pyxis; built=1; fi
  # srun, sbatch and every slurmstepd read plugstack.conf when they start: no daemon restart.
  # Debian's plugstack.conf includes plugstack.conf.d; add the line where it does not.
  if ! grep -qsE '^[[:space:]]*include[[:space:]]+/etc/slurm/plugstack\.conf\.d/\*' "$PLUGSTACK"; then
    echo "include /etc/slurm/plugstack.conf.d/*.conf" >>"$PLUGSTACK"
    say "added the plugstack.conf.d include to $PLUGSTACK"
  fi
  write_if_changed "$PYXIS_DROPIN" "required $PLUGIN${PYXIS_ARGS:+ $PYXIS_ARGS}" && say "wrote $PYXIS_DROPIN" || true
  # what pyxis' slurmd_init does; a slurmd started before pyxis was enabled never ran it
  install -d -m 0755 /run/pyxis
  if ! srun_has_pyxis && [ "$built" = 0 ]; then
    # installed, but this Slurm does not load it (built against another Slurm release?)
    install_pyxis
  fi
  srun_has_pyxis || die "srun does not offer --container-image with $PLUGIN enabled (srun --help; $PYXIS_DROPIN)"
}

# ------------------------------------------------------------------------------ image
image_ok() { [ -s "$IMAGE" ] && unsquashfs -s "$IMAGE" >/dev/null 2>&1; }

debian_mirror() {
  local m="${NEMOTRON_DEBIAN_MIRROR:-}"
  [ -n "$m" ] || m="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
  [ -n "$m" ] || m="$(awk '$1 == "deb" && $2 !~ /^\[/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)"
  echo "${m:-http://deb.debian.org/debian}"
}

ensure_image() {
  if image_ok; then return 0; fi
  ensure_packages debootstrap squashfs-tools
  local rootfs="$WORK/rootfs" mirror
  mirror="$(debian_mirror)"
  rm -rf "$rootfs"
  say "image: debootstrap --variant=minbase --include=python3 $SUITE from $mirror (a few minutes)"
  run_logged debootstrap debootstrap --variant=minbase --include=python3 "$SUITE" "$rootfs" "$mirror"
  echo "pyxis-enroot test image: debian $SUITE minbase + python3" >"$rootfs$IMAGE_MARKER"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log
  install -d -m 0755 "$(dirname "$IMAGE")"
  run_logged mksquashfs mksquashfs "$rootfs" "$IMAGE.tmp" -noappend -no-progress
  mv -f "$IMAGE.tmp" "$IMAGE"
  rm -rf "$rootfs"
  say "image: $IMAGE ($(du -h "$IMAGE" | cut -f1))"
}

check_enroot_start() {
  local out
  out="$(enroot start "$IMAGE" python3 -c "print(open('$IMAGE_MARKER').read().strip())" 2>&1 </dev/null)" \
    && [[ "$out" == *"test image"* ]] \
    || die "enroot start $IMAGE did not run python3 in the image: ${out//$'\n'/ }"
}

# ------------------------------------------------------------------------------ commands
need_root() { [ "$(id -u)" = 0 ] || die "must run as root (installs packages and Slurm's plugin configuration)"; }

cmd_up() {
  need_root
  install -d -m 0755 "$STATE_DIR" "$WORK"
  # a failure below leaves its one line for `status` (and scripts/test.sh) to repeat
  rm -f "$LAST_ERROR"
  RECORD_ERROR=1
  local t0=$SECONDS
  ensure_packages "${PACKAGES[@]}"
  ensure_enroot
  enroot_config
  ensure_pyxis
  ensure_image
  check_enroot_start
  say "ready: enroot $ENROOT_VERSION, pyxis $PYXIS_VERSION enabled${PYXIS_ARGS:+ ($PYXIS_ARGS)}, test image $IMAGE ($((SECONDS - t0)) s)"
}

cmd_status() {
  local why=""
  if ! enroot_installed; then why="enroot $ENROOT_VERSION is not installed in $PREFIX"
  elif ! pyxis_installed; then why="pyxis $PYXIS_VERSION is not installed ($PLUGIN)"
  elif [ ! -f "$PYXIS_DROPIN" ]; then why="pyxis is not enabled ($PYXIS_DROPIN missing)"
  elif ! srun_has_pyxis; then why="srun does not offer --container-image (pyxis not loaded)"
  elif ! image_ok; then why="no test image at $IMAGE"
  fi
  if [ -z "$why" ]; then
    echo "ready: enroot $ENROOT_VERSION, pyxis $PYXIS_VERSION, test image $IMAGE"
    return 0
  fi
  [ -s "$LAST_ERROR" ] && why="$why; the last set-up failed: $(cat "$LAST_ERROR")"
  echo "not ready: $why (scripts/containers.sh up)"
  return 1
}

cmd_build() {
  local dir="${1:?usage: $0 build DIR}" enroot_tgz
  need_root
  ensure_packages build-essential libslurm-dev makeself curl ca-certificates
  fetch_enroot "$dir"; enroot_tgz="$OBTAINED"
  fetch_pyxis "$dir"
  LOGS="$dir/logs"
  rm -rf "$dir/stage"
  build_enroot "$enroot_tgz" "$dir" "$dir/stage"
  build_pyxis "$OBTAINED" "$dir" "$dir/stage"
  say "built enroot $ENROOT_VERSION and pyxis $PYXIS_VERSION under $dir/stage (nothing installed)"
}

case "${1:-}" in
  up) cmd_up ;;
  status) cmd_status ;;
  image) need_root; ensure_image; say "image: $IMAGE" ;;
  fetch)
    dir="${2:-$CACHE}"
    fetch_enroot "$dir"; fetch_pyxis "$dir"
    say "verified: $dir/enroot-$ENROOT_VERSION.tar.gz $dir/pyxis-$PYXIS_VERSION.tar.gz" ;;
  build) shift; cmd_build "$@" ;;
  *) echo "usage: $0 up | status | image | fetch [DIR] | build DIR" >&2; exit 2 ;;
esac
