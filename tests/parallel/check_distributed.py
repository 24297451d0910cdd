"""One process of a two-process data-parallel PPO run; prints a digest of its parameters.

python tests/parallel/check_distributed.py <coordinator host:port> <process id>
"""

import sys

from purerl.runtime import initialize_distributed

if __name__ == "__main__":
    initialize_distributed(sys.argv[1], 2, int(sys.argv[2]))
    import hashlib

    import jax
    import numpy as np

    from purerl import envs
    from purerl.algos.ppo import PPOConfig, make_ppo
    from purerl.core.loop import train
    from purerl.core.parallel import DEVICE_AXIS, fetch, make_placement, select_devices
    from purerl.runtime import configure_jax

    configure_jax()
    cfg = PPOConfig(
        num_envs=4, rollout_len=16, num_minibatches=2, num_epochs=1, hidden_sizes=(8,),
        total_timesteps=4 * 16 * 3,
    )  # fmt: skip
    # --num-devices 2 counts both processes' devices: each keeps its one CPU device.
    placement = make_placement(select_devices("cpu", 2), "data", 1, cfg.num_envs)
    algo = make_ppo(cfg, envs.make(cfg.env, cfg.num_envs // 2), axis_name=DEVICE_AXIS)
    result = train(algo, cfg, placement=placement)
    params = fetch(result.agents.state.params)
    local = [np.asarray(x)[jax.process_index()] for x in jax.tree.leaves(params)]
    digest = hashlib.sha256(b"".join(x.tobytes() for x in local)).hexdigest()
    print(f"devices={jax.device_count()} process={jax.process_index()} digest={digest}")
