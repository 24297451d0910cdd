"""Train PPO: ``python experiments/ppo.py --env CartPole-v1 --num-seeds 4``.

``--env`` picks that environment's preset (purerl/presets.py); any other flag overrides it.
Writes runs/ppo-<env>-<timestamp>/ with config.json, metrics.jsonl and summary.json.
"""

import sys

from purerl.algos.ppo import PPOConfig, make_ppo
from purerl.cli import main
from purerl.presets import PPO_PRESETS

if __name__ == "__main__":
    sys.exit(main("ppo", PPOConfig, make_ppo, PPO_PRESETS, __doc__))
