#!/usr/bin/env bash
# Smoke test of a built purerl image, run by the Dockerfile's `test` stage as the image's user:
#
#   docker/smoke.sh EXTRAS [CHECK...]
#
# EXTRAS: the pip extras the image installed (e.g. cuda12,atari); CHECK: some of cuda, doctor,
# train, resume, breakout, run in that order (default: every check that applies to EXTRAS;
# resume needs train).
# Each check prints one line; the first that fails prints its log and ends the script with
# exit code 1 (which fails the build). The checks:
#   cuda (cuda12 extra): jax's CUDA plugin imports, the nvidia-*-cu12 wheels' libraries and
#     ptxas are present, and nothing in the image would hide the driver that the NVIDIA
#     container toolkit mounts (no libcuda of its own, no LD_LIBRARY_PATH, NVIDIA_* set);
#   doctor: purerl doctor --quick;
#   train: purerl train ppo --total-timesteps 20000, to its end;
#   resume: the same run, cut back to an earlier checkpoint as a killed run leaves it,
#     resumed to its end, must end with the same final return (gymnax runs resume exactly);
#   breakout (atari extra): 200 steps of Breakout-v5 through EnvPool, inside jit.
set -euo pipefail

usage="usage: docker/smoke.sh EXTRAS [CHECK...]   (the image's pip extras, e.g. cuda12,atari;"
usage+=" checks: cuda doctor train resume breakout)"
if [ "$#" -lt 1 ]; then
    echo "$usage" >&2
    exit 2
fi
extras=",$1,"
shift
checks=("$@")
if [ "${#checks[@]}" -eq 0 ]; then
    [[ "$extras" == *,cuda12,* ]] && checks+=(cuda)
    checks+=(doctor train resume)
    [[ "$extras" == *,atari,* ]] && checks+=(breakout)
fi
for check in "${checks[@]}"; do
    case "$check" in
        cuda | doctor | train | resume | breakout) ;;
        *)
            echo "docker/smoke.sh: unknown check '$check'; $usage" >&2
            exit 2
            ;;
    esac
done
if [[ " ${checks[*]} " == *" resume "* && " ${checks[*]} " != *" train "* ]]; then
    echo "docker/smoke.sh: the resume check resumes the train check's run: give both" >&2
    exit 2
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/purerl-smoke.XXXXXX")"
cd "$work"

# The persistent compilation cache stays inside this test: nothing is left in the user's home.
export PURERL_CACHE_DIR="$work/jax-cache"

# run NAME COMMAND...: runs COMMAND with its output in NAME.log; prints it if COMMAND fails.
run() {
    local name="$1"
    shift
    local start=$SECONDS
    if ! "$@" >"$name.log" 2>&1; then
        cat "$name.log"
        echo "smoke: FAIL $name: $*" >&2
        exit 1
    fi
    echo "smoke: ok   $name ($((SECONDS - start)) s)"
}

check_cuda() {
    python - <<'PY'
import ctypes.util
import importlib
import os
import sysconfig
from pathlib import Path

for module in ("jax_cuda12_plugin", "jax_plugins.xla_cuda12"):
    importlib.import_module(module)
nvidia = Path(sysconfig.get_paths()["purelib"]) / "nvidia"
needed = ["libcudart.so.12", "libcublas.so.12", "libcudnn.so.9", "libcufft.so.11",
          "libcusolver.so.11", "libcusparse.so.12", "libnccl.so.2", "libnvJitLink.so.12"]
found = {path.name for path in nvidia.glob("*/lib/*.so*")}
missing = [name for name in needed if name not in found]
assert not missing, f"CUDA libraries missing from {nvidia}: {missing}"
assert list(nvidia.glob("*/bin/ptxas")), f"ptxas missing from {nvidia}"
# The driver comes from the host: a libcuda inside the image would shadow it.
roots = [Path("/usr/lib"), Path("/usr/local/lib"), Path("/opt")]
shipped = [str(path) for root in roots for path in root.rglob("libcuda.so*")]
assert not shipped, f"the image ships a libcuda of its own: {shipped}"
assert ctypes.util.find_library("cuda") is None, "the loader finds a libcuda without a GPU host"
assert "LD_LIBRARY_PATH" not in os.environ, "LD_LIBRARY_PATH is set: it may hide the driver"
assert os.environ.get("NVIDIA_VISIBLE_DEVICES") == "all", "NVIDIA_VISIBLE_DEVICES is not all"
capabilities = os.environ.get("NVIDIA_DRIVER_CAPABILITIES", "").split(",")
assert "compute" in capabilities, "NVIDIA_DRIVER_CAPABILITIES lacks compute"
print(f"{len(found)} CUDA libraries from {len(list(nvidia.iterdir()))} nvidia wheels")
PY
}

# The summary of a finished run as "updates steps final-return resumed-from".
summary() {
    python - "$1" <<'PY'
import json
import sys

s = json.load(open(f"{sys.argv[1]}/summary.json"))
print(s["num_updates"], s["env_steps_per_seed"], s["per_seed_final_return"][0],
      s["resumed_from_update"])
PY
}

check_resume() {
    local run="$1"
    read -r updates steps final _ < <(summary "$run")
    # A run killed after its second-newest checkpoint leaves exactly this behind.
    local newest kept
    newest="$(find "$run/checkpoints" -mindepth 1 -maxdepth 1 -name '[0-9]*' -printf '%f\n' \
        | sort -n | tail -1)"
    kept="$(find "$run/checkpoints" -mindepth 1 -maxdepth 1 -name '[0-9]*' -printf '%f\n' \
        | sort -n | tail -2 | head -1)"
    rm -r "${run:?}/checkpoints/$newest" "$run/summary.json" || return 1
    purerl train --resume "$run" || return 1
    read -r updates2 steps2 final2 from < <(summary "$run")
    echo "resumed from update $from of $updates: $updates2 updates, $steps2 steps, final return" \
        "$final2 (uninterrupted: $final)"
    [ "$from" = "$kept" ] && [ "$updates2" = "$updates" ] && [ "$steps2" = "$steps" ] \
        && [ "$final2" = "$final" ]
}

check_breakout() {
    python - <<'PY'
import jax
import jax.numpy as jnp
import numpy as np

from purerl.envs import make

env = make("Breakout-v5", num_envs=2)
key = jax.random.key(0)
state, obs = env.reset(key, env.default_params)
assert obs.shape == (2, 4, 84, 84) and obs.dtype == jnp.uint8, (obs.shape, obs.dtype)
step_fn = jax.jit(env.step)
actions = np.random.default_rng(0).integers(0, env.spec.action_space.num_actions, (200, 2))
changed, previous = 0, np.asarray(obs)
for action in actions:
    state, step = step_fn(key, state, jnp.asarray(action, jnp.int32), env.default_params)
    frame = np.asarray(step.obs)
    changed += int((frame != previous).any())
    previous = frame
assert changed > 100, f"the screen changed on only {changed} of 200 steps"
print(f"Breakout-v5: 200 steps, the screen changed on {changed}")
PY
}

for check in cuda doctor train resume breakout; do
    [[ " ${checks[*]} " == *" $check "* ]] || continue
    case "$check" in
        cuda) run cuda check_cuda ;;
        doctor) run doctor purerl doctor --quick ;;
        train)
            run train purerl train ppo --total-timesteps 20000 --run-dir "$work/ppo" \
                --checkpoint-every 10
            ;;
        resume) run resume check_resume "$work/ppo" ;;
        breakout) run breakout check_breakout ;;
    esac
    # The check's own summary: its last line (train: the line before the learning curves).
    tail -"$([ "$check" = train ] && echo 2 || echo 1)" "$check.log" | head -1
done
rm -rf "$work"
echo "smoke: every check passed (${checks[*]})"
