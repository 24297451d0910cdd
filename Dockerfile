# purerl images: one Dockerfile, one Python base, two flavours chosen by the FLAVOR build
# argument (they differ only in the pip extras they install).
#
#   docker build -t purerl .                             # GPU (default): '.[cuda12,atari]'
#   docker build --build-arg FLAVOR=cpu -t purerl:cpu .  # CPU only: '.[atari]'
#   docker build --build-arg FLAVOR=cpu --target test .  # the CPU image, then its smoke test
#
#   docker run --gpus all -v "$PWD/runs:/app/runs" purerl train ppo --env Breakout-v5 --num-envs 16
#   docker run --rm purerl:cpu train ppo --env CartPole-v1 --num-seeds 4
#   docker run --rm -it purerl bash
#
# Offline, from a wheelhouse filled by docker/wheelhouse.sh (pip then runs with --no-index):
#
#   docker build --build-context wheelhouse="$HOME/.cache/purerl-wheelhouse" -t purerl .
#
# The arguments of `docker run` are a purerl command (train, eval, plot, search, envs, doctor),
# an algorithm name (short for `train <algorithm>`), `bench NAME` for a benchmark module, or
# anything executable (see docker/entrypoint.sh). Other build arguments: EXTRAS (pip extras
# instead of the flavour's, e.g. cuda12,atari,search), PYTHON_IMAGE (the base: any Debian or
# Ubuntu image whose python3.11 has the venv module) and USER_ID (the container user's id, to
# match the owner of a mounted runs/ directory). docker/check.sh builds and tests both
# flavours; docs/cluster.md covers offline builds, multi-GPU and multi-host runs. The build needs
# BuildKit (Docker 23 or later) or podman.

ARG FLAVOR=gpu
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- The wheelhouse: `--build-context wheelhouse=DIR` replaces this stage with a folder of
# wheels, and every pip install below then reads it alone (--no-index). Without one, the stage
# holds only the script that fills a wheelhouse (no wheels: pip uses the package index).
FROM scratch AS wheelhouse
COPY docker/wheelhouse.sh /

# ---- One base for both flavours. jax[cuda12] brings its own CUDA libraries (cuBLAS, cuDNN,
# NCCL, ptxas) as pip wheels and needs only the host's NVIDIA driver, which the NVIDIA
# container toolkit mounts into the container: no CUDA base image is needed.
FROM ${PYTHON_IMAGE} AS base
RUN python3.11 -m venv /opt/venv

FROM base AS gpu-base
# What the NVIDIA container toolkit reads to mount the driver (libcuda.so.1, nvidia-smi) into
# the loader's standard path; the nvidia/cuda images set the same. LD_LIBRARY_PATH is left
# unset, so nothing hides the mounted driver from the dynamic loader.
ENV PURERL_EXTRAS=cuda12,atari \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility

FROM base AS cpu-base
ENV PURERL_EXTRAS=atari

# ---- The image: the same steps on either base.
# FLAVOR names one of the two stages above; the other is never built.
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
# EnvPool wheels. With a wheelhouse, pip reads nothing but it (PIP_NO_INDEX), build
# requirements (setuptools, wheel) included.
COPY pyproject.toml ./
# The versions are pinned where they belong, in pyproject.toml's dependencies and extras.
# hadolint ignore=DL3013
RUN --mount=type=bind,from=wheelhouse,target=/wheelhouse \
    if ls /wheelhouse/*.whl >/dev/null 2>&1; then \
        echo "pip: offline, from the wheelhouse"; \
        export PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheelhouse; \
    fi \
    && mkdir purerl \
    && touch purerl/__init__.py README.md \
    && pip install --no-cache-dir ".[${EXTRAS:-$PURERL_EXTRAS}]" \
    && rm -rf purerl README.md build ./*.egg-info
COPY README.md ./
COPY purerl/ purerl/
RUN --mount=type=bind,from=wheelhouse,target=/wheelhouse \
    if ls /wheelhouse/*.whl >/dev/null 2>&1; then \
        export PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheelhouse; \
    fi \
    && pip install --no-cache-dir --no-deps --force-reinstall . \
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

# ---- The smoke test: `--target test` builds the image above, then runs docker/smoke.sh in it
# as its user (doctor --quick, a PPO run to completion, a resumed run, Breakout-v5 steps with
# the atari extra, the CUDA wheels with cuda12); the build fails if any check fails. A build
# has no GPU, so JAX runs these on the CPU. CHECKS picks some of them (e.g. "cuda breakout").
FROM purerl AS test
ARG EXTRAS=""
ARG CHECKS=""
# CHECKS is a list of words: unquoted on purpose.
RUN /app/docker/smoke.sh "${EXTRAS:-$PURERL_EXTRAS}" ${CHECKS}

# ---- The default target: the image, without the test stage.
FROM purerl AS image
