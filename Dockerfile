# syntax=docker/dockerfile:1
#
# purerl images: one Dockerfile, two flavours chosen by the FLAVOR build argument.
#
#   docker build -t purerl .                             # GPU (default): CUDA 12, '.[cuda12,atari]'
#   docker build --build-arg FLAVOR=cpu -t purerl:cpu .  # CPU only: python:3.11-slim, '.[atari]'
#
#   docker run --gpus all -v "$PWD/runs:/app/runs" purerl train ppo --env Breakout-v5 --num-envs 16
#   docker run --rm purerl:cpu train ppo --env CartPole-v1 --num-seeds 4
#   docker run --rm -it purerl bash
#
# The arguments of `docker run` are a purerl command (train, eval, plot, search, envs, doctor),
# an algorithm name (short for `train <algorithm>`), `bench NAME` for a benchmark module, or
# anything executable (see docker/entrypoint.sh). Other build arguments: EXTRAS (pip extras
# instead of the flavour's, e.g. cuda12,atari,search), CUDA_IMAGE, PYTHON_IMAGE and USER_ID (the container user's id, to match
# the owner of a mounted runs/ directory). docs/cluster.md covers multi-GPU and multi-host runs.

ARG FLAVOR=gpu
# jax[cuda12] brings its own CUDA libraries (cuBLAS, cuDNN, NCCL, ptxas) as pip wheels, so the
# base image only has to work with the host's NVIDIA driver through the container toolkit:
# an nvidia/cuda:12.x-base-ubuntu22.04 tag works too and is about 2 GB smaller.
ARG CUDA_IMAGE=nvidia/cuda:12.6.3-runtime-ubuntu22.04
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- GPU base: Ubuntu 22.04 ships Python 3.10, so 3.11 comes from the deadsnakes PPA. A
# python:3.11 image cannot be the GPU base, and copying its interpreter over would need a
# newer glibc than Ubuntu 22.04's.
FROM ${CUDA_IMAGE} AS gpu-base
ARG DEBIAN_FRONTEND=noninteractive
# The PPA publishes only the latest build of each package, so pinned apt versions would break
# the build at the next Python patch release; the Python minor version is what is pinned.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        ca-certificates gpg-agent software-properties-common \
    && add-apt-repository -y ppa:deadsnakes/ppa \
    && apt-get update \
    && apt-get install -y --no-install-recommends python3.11 python3.11-venv \
    && apt-get purge -y --auto-remove software-properties-common gpg-agent \
    && rm -rf /var/lib/apt/lists/* \
    && python3.11 -m venv /opt/venv
ENV PURERL_EXTRAS=cuda12,atari

# ---- CPU base: the official Python image.
FROM ${PYTHON_IMAGE} AS cpu-base
RUN python3.11 -m venv /opt/venv
ENV PURERL_EXTRAS=atari

# ---- The image: the same steps on either base.
# FLAVOR names one of the two stages above; BuildKit builds only the one it names.
FROM ${FLAVOR}-base AS purerl
ARG EXTRAS=""
ARG USER_ID=1000
# PYTHONUNBUFFERED: progress and summaries reach `docker logs` as they are printed.
# MPLCONFIGDIR: matplotlib (learning-curve PNGs) needs a writable cache directory whatever the
# user id (`docker run --user`). JAX's GPU memory settings keep their defaults: it preallocates
# 75% of each visible GPU's memory at the first computation; for several containers or
# processes on one GPU, pass -e XLA_PYTHON_CLIENT_PREALLOCATE=false or
# -e XLA_PYTHON_CLIENT_MEM_FRACTION=0.3 to `docker run`.
ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MPLCONFIGDIR=/tmp/matplotlib
WORKDIR /app

# Dependencies first, from pyproject.toml alone (with an empty placeholder package and readme):
# editing purerl/ or README.md then reinstalls only purerl, not the gigabytes of JAX, CUDA and
# EnvPool wheels.
COPY pyproject.toml ./
# The versions are pinned where they belong, in pyproject.toml's dependencies and extras.
# hadolint ignore=DL3013
RUN mkdir purerl \
    && touch purerl/__init__.py README.md \
    && pip install --no-cache-dir ".[${EXTRAS:-$PURERL_EXTRAS}]" \
    && rm -rf purerl README.md build ./*.egg-info
COPY README.md ./
COPY purerl/ purerl/
RUN pip install --no-cache-dir --no-deps --force-reinstall . \
    && rm -rf build ./*.egg-info

# The rest: docker/ (the entry point), benchmarks/ (`bench NAME`), experiments/ and tests/.
COPY . .

# A non-root user; the code stays root-owned and read-only, runs/ is the writable part (group 0
# as well, for `docker run --user <uid>` without a matching passwd entry).
RUN useradd --create-home --uid "${USER_ID}" --shell /bin/bash purerl \
    && install -d -m 0775 -o purerl -g 0 /app/runs
# Numeric, so that a runtime can check it is not root (Kubernetes runAsNonRoot).
USER ${USER_ID}

ENTRYPOINT ["/app/docker/entrypoint.sh"]
CMD ["--help"]
