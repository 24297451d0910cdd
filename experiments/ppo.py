"""Train PPO: ``python experiments/ppo.py --env CartPole-v1 --num-seeds 4``.

``--env`` picks that environment's preset (purerl/presets.py), ``--preset`` a named one, and
``--config runs/<dir>`` a saved run's configuration; any other flag overrides single fields.
``--resume runs/<dir>`` continues a run from its latest checkpoint. Writes
runs/ppo-<env>-<timestamp>/ with config.json, metrics.jsonl, summary.json and checkpoints/.
"""

import sys

from purerl.runtime import configure_jax, start_distributed_from_argv

if __name__ == "__main__":
    # Both must come first: the imports below create JAX's backend (importing gymnax does),
    # which fixes its settings and must be joined to a multi-process run beforehand.
    configure_jax()
    start_distributed_from_argv(sys.argv[1:])
    from purerl.algos.ppo import PPOConfig, make_ppo
    from purerl.cli import Command, main
    from purerl.presets import PPO_PRESETS

    command = Command("ppo", PPOConfig, make_ppo, PPO_PRESETS, __doc__)
    sys.exit(main(command, script=sys.argv[0]))
