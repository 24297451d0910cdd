#!/usr/bin/env bash
# Entry point of the purerl image: `docker run purerl <command> [arguments...]`.
#
# A command named below runs that experiment script with the remaining arguments, e.g.
# `ppo --env Breakout-v5 --num-envs 16` -> `python experiments/ppo.py --env Breakout-v5 ...`.
# Anything else is executed as given (`bash`, `python -c ...`, `nvidia-smi`).
set -euo pipefail

# Scripts are found beside this file, so the container's working directory (where runs/ is
# written) can be changed with `docker run -w`.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() {
    cat <<USAGE
usage: docker run [docker options] purerl COMMAND [ARGUMENTS...]

Experiment commands (each runs experiments/<script>.py; add --help for its flags):
  ppo           train PPO                     dqn           train DQN
  evaluate      evaluate a run's checkpoint   plot          compare runs, learning curves
  search        hyperparameter search         bench         training throughput table
  atari-bench   Atari frames/s vs EnvPool     env-bench     environment steps/s
  bench-table   preset matrix -> table

Any other COMMAND is executed as given, e.g. bash or python -c '...'.
USAGE
}

if [ "$#" -eq 0 ]; then
    usage
    exit 2
fi

case "$1" in
    ppo) script=ppo.py ;;
    dqn) script=dqn.py ;;
    evaluate) script=evaluate.py ;;
    plot) script=plot.py ;;
    search) script=search.py ;;
    bench) script=bench.py ;;
    atari-bench) script=atari_bench.py ;;
    env-bench) script=env_bench.py ;;
    bench-table) script=bench_table.py ;;
    help | -h | --help)
        usage
        exit 0
        ;;
    *) exec "$@" ;;
esac

shift
exec python "$root/experiments/$script" "$@"
