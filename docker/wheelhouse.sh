#!/usr/bin/env bash
# Fills a wheelhouse for an offline image build: every wheel that `pip install '.[EXTRAS]'`
# needs in the image (CPython 3.11, Linux x86-64, glibc 2.17 to 2.28 wheels), plus setuptools
# and wheel to build purerl itself from the build context. Run it from a checkout on a machine
# that reaches a package index; a second run downloads only what is missing.
#
#   docker/wheelhouse.sh [--flavor gpu|cpu] [--extras LIST] [DIR]
#
#   --flavor   gpu (default): cuda12,atari, about 3.5 GB; cpu: atari. A gpu wheelhouse serves
#              both flavours.
#   --extras   pip extras instead of the flavour's (the same list as the EXTRAS build argument).
#   DIR        default: ${XDG_CACHE_HOME:-~/.cache}/purerl-wheelhouse
#
# Then: docker build --build-context wheelhouse=DIR [--build-arg FLAVOR=cpu] -t purerl .
# The pip of $PYTHON (default python3) downloads; its own Python version does not matter.
set -euo pipefail

# usage CODE: the synopsis above, on stdout for --help (0), on stderr for a usage error.
usage() {
    if [ "$1" = 0 ]; then
        sed -n '7,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    else
        echo "usage: docker/wheelhouse.sh [--flavor gpu|cpu] [--extras LIST] [DIR] (see --help)" >&2
    fi
    exit "$1"
}

flavor=gpu
extras=""
dir="${XDG_CACHE_HOME:-$HOME/.cache}/purerl-wheelhouse"
while [ "$#" -gt 0 ]; do
    case "$1" in
        --flavor)
            [ "$#" -ge 2 ] || usage 2
            flavor="$2"
            shift 2
            ;;
        --extras)
            [ "$#" -ge 2 ] || usage 2
            extras="$2"
            shift 2
            ;;
        -h | --help) usage 0 ;;
        -*)
            echo "wheelhouse.sh: unknown option $1 (see --help)" >&2
            exit 2
            ;;
        *)
            dir="$1"
            shift
            ;;
    esac
done
case "$flavor" in
    gpu) extras="${extras:-cuda12,atari}" ;;
    cpu) extras="${extras:-atari}" ;;
    *)
        echo "wheelhouse.sh: --flavor must be gpu or cpu, not '$flavor'" >&2
        exit 2
        ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$dir"
# The image is Debian bookworm (glibc 2.36): wheels for any glibc up to 2.28 run there. pip
# expands manylinux2014 to the older tags but not manylinux_2_X to its predecessors, hence
# the list. --only-binary: nothing is compiled in the image.
"${PYTHON:-python3}" -m pip download --quiet --dest "$dir" \
    --only-binary=:all: --implementation cp --python-version 3.11 \
    --platform manylinux2014_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 \
    "$root[$extras]" "setuptools>=77" wheel
echo "$dir: $(find "$dir" -name '*.whl' | wc -l) wheels, $(du -sh "$dir" | cut -f1)"
