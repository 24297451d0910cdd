"""Train PPO: ``python experiments/ppo.py --env CartPole-v1 --num-seeds 4``.

The same command as ``purerl train ppo`` (every flag, preset and exit code), kept for
checkouts without the console script. ``--help`` lists the flags.
"""

import sys

from purerl.cli import guarded
from purerl.cli.train import train_algo

if __name__ == "__main__":
    sys.exit(guarded(lambda: train_algo("ppo", sys.argv[1:], f"python {sys.argv[0]}")))
