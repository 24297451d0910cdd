#!/usr/bin/env bash
# Builds and tests the purerl images from a wheelhouse, with no network inside the builds:
#
#   bash docker/check.sh [--wheelhouse DIR] [--engine docker|podman]
#
# 1. An engine: Docker when its daemon answers, else podman; run as root where neither exists,
#    it installs podman (and debootstrap) with apt-get.
# 2. A base: python:3.11-slim-bookworm when the engine has it or can pull it; else a Debian
#    bookworm with python3.11 made by debootstrap and imported as purerl-python:3.11-bookworm.
# 3. The wheelhouse: docker/wheelhouse.sh --flavor gpu DIR (default
#    ${XDG_CACHE_HOME:-~/.cache}/purerl-wheelhouse); a second run reuses it.
# 4. purerl:cpu, then its `test` target (docker/smoke.sh: every check), then purerl:gpu and
#    its `test` target with the checks a build without a GPU can make of it (cuda, train on
#    the CPU, breakout). Each build runs without network (`docker build --network none`;
#    podman under `unshare --net`) and pip with --no-index: the wheelhouse is all it reads.
# Prints each image's size and build time. Exit code 0 when everything built and passed, 1 when
# a build or a check failed, 2 for bad arguments or a missing tool.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
wheelhouse="${XDG_CACHE_HOME:-$HOME/.cache}/purerl-wheelhouse"
engine=""
while [ "$#" -gt 0 ]; do
    case "$1" in
        --wheelhouse)
            [ "$#" -ge 2 ] || { echo "check.sh: --wheelhouse needs a folder" >&2; exit 2; }
            wheelhouse="$2"
            shift 2
            ;;
        --engine)
            [ "$#" -ge 2 ] || { echo "check.sh: --engine needs docker or podman" >&2; exit 2; }
            engine="$2"
            shift 2
            ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "check.sh: unknown argument $1 (usage: bash docker/check.sh" \
                "[--wheelhouse DIR] [--engine docker|podman])" >&2
            exit 2
            ;;
    esac
done

started=$SECONDS
log() { printf '[check %4d s] %s\n' "$((SECONDS - started))" "$*"; }
fail() {
    echo "check.sh: $*" >&2
    exit 2
}
minutes() { printf '%dm%02ds' "$(($1 / 60))" "$(($1 % 60))"; }

apt_install() {
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
        || fail "$* missing: install it (this script installs it with apt-get when run as root)"
    log "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null \
        || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"; }
}

# ---- 1. the engine ---------------------------------------------------------------------------
if [ -z "$engine" ]; then
    if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
        engine=docker
    else
        command -v podman >/dev/null || apt_install podman
        engine=podman
    fi
fi
case "$engine" in
    docker)
        build=(docker build --network none)
        local_base=purerl-python:3.11-bookworm
        ;;
    podman)
        command -v podman >/dev/null || apt_install podman
        # chroot isolation runs RUN steps where an OCI runtime cannot start containers (as in
        # an unprivileged container); the build then shares the host's network, so the whole
        # podman process goes into an empty network namespace instead.
        build=(podman build --isolation chroot)
        if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
            build=(unshare --net "${build[@]}")
        else
            log "not root: the builds keep the network (pip still runs with --no-index)"
        fi
        local_base=localhost/purerl-python:3.11-bookworm
        ;;
    *) fail "--engine must be docker or podman, not '$engine'" ;;
esac
log "engine: $engine"

# ---- 2. the base -----------------------------------------------------------------------------
base=python:3.11-slim-bookworm
if "$engine" image inspect "$base" >/dev/null 2>&1; then
    log "base: $base"
elif timeout 120 "$engine" pull -q "$base" >/dev/null 2>&1; then
    log "base: $base (pulled)"
elif "$engine" image inspect "$local_base" >/dev/null 2>&1; then
    base="$local_base"
    log "base: $base (made earlier with debootstrap; no registry reachable)"
else
    command -v debootstrap >/dev/null || apt_install debootstrap
    log "no registry reachable: debootstrap bookworm with python3.11"
    rootfs="$(mktemp -d)"
    t=$SECONDS
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        bookworm "$rootfs" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >/dev/null
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*
    tar -C "$rootfs" -c . | "$engine" import --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["python3"]' - "$local_base" >/dev/null
    rm -rf "$rootfs"
    base="$local_base"
    log "base: $base (debootstrap and import: $((SECONDS - t)) s)"
fi

# ---- 3. the wheelhouse -----------------------------------------------------------------------
t=$SECONDS
bash "$root/docker/wheelhouse.sh" --flavor gpu "$wheelhouse"
log "wheelhouse ready: $((SECONDS - t)) s"

# ---- 4. the images ---------------------------------------------------------------------------
report=()
# image NAME FLAVOR [BUILD ARGUMENTS...]: builds, times and records one target.
image() {
    local name="$1" flavor="$2"
    shift 2
    local t=$SECONDS
    log "building $name (FLAVOR=$flavor $*)"
    "${build[@]}" --build-arg FLAVOR="$flavor" --build-arg PYTHON_IMAGE="$base" \
        --build-context wheelhouse="$wheelhouse" --tag "$name" "$@" "$root" \
        || { echo "check.sh: building $name failed (its log is above)" >&2 && exit 1; }
    local seconds=$((SECONDS - t)) size
    if [[ "$name" == purerl-test:* ]]; then
        size="passed"
    else
        size="$(awk "BEGIN {printf \"%.2f GB\", $("$engine" image inspect --format '{{.Size}}' \
            "$name") / 1e9}")"
    fi
    report+=("$(printf '%-16s %-8s  %s' "$name" "$size" "$(minutes "$seconds")")")
    log "built $name in $(minutes "$seconds")"
}

image purerl:cpu cpu
image purerl-test:cpu cpu --target test
image purerl:gpu gpu
image purerl-test:gpu gpu --target test --build-arg CHECKS="cuda train breakout"
"$engine" rmi purerl-test:cpu purerl-test:gpu >/dev/null

echo
echo "target           size      build time (this run; a rerun reuses cached layers)"
printf '%s\n' "${report[@]}"
echo "total $(minutes $((SECONDS - started))) (the purerl-test images are removed)"
