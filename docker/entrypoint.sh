#!/usr/bin/env bash
# Entry point of the purerl image: `docker run purerl COMMAND [ARGUMENTS...]`.
#
#   train ppo --env Breakout-v5 ...   any purerl command (train, eval, plot, search, envs, doctor)
#   ppo --env Breakout-v5 ...         an algorithm name alone means `purerl train <algorithm>`
#   bench throughput --seeds 1 8      a benchmark module: python -m benchmarks.<name>
#   bash, python -c ..., nvidia-smi   anything executable runs as given
set -euo pipefail

# The benchmarks package sits beside this file's folder, so the working directory (where runs/
# is written) can be changed with `docker run -w`.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
purerl_commands=(train eval plot search envs doctor)

usage() {
    cat <<USAGE
usage: docker run [docker options] purerl COMMAND [ARGUMENTS...]

purerl commands (add --help to any of them):
  train ALGORITHM   train an agent          eval RUN_DIR     evaluate a run, record a video
  plot RUN_DIR...   compare runs            search           hyperparameter search
  envs              environment ids         doctor           what works here, how fast
ALGORITHM alone is short for train ALGORITHM (ppo --env Breakout-v5 ...).
bench NAME        python -m benchmarks.NAME (throughput, atari, envs, table, search)
Anything else executable runs as given, e.g. bash or python -c '...'.
USAGE
}

if [ "$#" -eq 0 ]; then
    usage
    exit 2
fi

case "$1" in
    help | -h | --help)
        usage
        exit 0
        ;;
    bench)
        if [ "$#" -lt 2 ]; then
            usage
            exit 2
        fi
        module="$2"
        shift 2
        cd "$root" && exec python -m "benchmarks.${module}" "$@"
        ;;
esac

for command in "${purerl_commands[@]}"; do
    if [ "$1" = "$command" ]; then
        exec purerl "$@"
    fi
done

if command -v "$1" >/dev/null 2>&1; then
    exec "$@"
fi
# Not a command and not an executable: an algorithm name (purerl says so if it is not one).
exec purerl train "$@"
