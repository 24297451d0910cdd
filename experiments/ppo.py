"""Train PPO: ``python experiments/ppo.py --env CartPole-v1 --num-seeds 4``.

The same command as ``purerl train ppo`` (every flag, preset and exit code), kept for
checkouts without the console script. ``--help`` lists the flags.
"""

from purerl.cli import run_script

if __name__ == "__main__":
    run_script("purerl.cli.train", "train_algo", "ppo")
