"""Train DQN: ``python experiments/dqn.py --env CartPole-v1 --num-seeds 4``.

``--env`` picks that environment's preset (purerl/presets.py); any other flag overrides it.
Writes runs/dqn-<env>-<timestamp>/ with config.json, metrics.jsonl and summary.json.
"""

import sys

from purerl.algos.dqn import DQNConfig, make_dqn
from purerl.cli import main
from purerl.presets import DQN_PRESETS

if __name__ == "__main__":
    sys.exit(main("dqn", DQNConfig, make_dqn, DQN_PRESETS, __doc__))
