"""Fine-tuning: a new run that starts from another run's trained parameters (``--init-from``).

``RUN`` takes the run's newest readable checkpoint, ``RUN:UPDATE`` (or ``RUN:best``) another.
The new run copies every parameter set of the agent state (``params``, ``target_params``) and
the observation statistics of ``--normalize-obs``; the optimizer, the environments, the keys,
a replay buffer and the update count start fresh. Seed ``i`` of the new run starts from seed
``i mod S`` of a run of ``S`` seeds. The algorithm must be the same and every array the same
shape (the same observation and action spaces and network); otherwise one line says what
differs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import numpy as np

from purerl.config import ConfigError
from purerl.core.loop import Snapshot
from purerl.core.program import init_agents
from purerl.envs.wrappers import NormalizeObsState

COPIED = ("params", "target_params")
"""Agent-state fields a fine-tuned run takes from the run it starts from."""


def split_source(source: str) -> tuple[Path, str]:
    """``RUN`` or ``RUN:UPDATE`` / ``RUN:best`` -> (run directory, checkpoint)."""
    path, sep, which = source.rpartition(":")
    if sep and (which.isdigit() or which in ("best", "latest")) and path:
        return Path(path), which
    return Path(source), "latest"


def initial_snapshot(setup: Any, source: str, sinks: Any = ()) -> Snapshot:
    """Fresh agents of ``setup`` carrying the parameters of ``source``'s checkpoint.

    Raises:
        ConfigError: another algorithm, or arrays of other shapes.
        CheckpointError: no such run or checkpoint (as ``purerl eval`` says it).
    """
    from purerl.run.evaluate import load_agents
    from purerl.run.sinks import notify

    run_dir, which = split_source(source)
    cfg, spec = setup.cfg, setup.request.spec
    from purerl.envs.custom import Factory

    # The environment this run was given (an object, or a factory the user named) is the one
    # the source run is read with: naming it here vouches for it there too.
    env = setup.request.env
    if isinstance(env, Factory):
        env = env.env_id
    # Likewise the network: the module object this run was given, or the module:attr it names.
    network = None
    if setup.request.network is not None:
        user_object = cfg.network.startswith("object:")
        network = setup.request.network if user_object else cfg.network
    loaded = load_agents(run_dir, which, env=env, network=network)
    if loaded.spec.name != spec.name:
        raise ConfigError(
            f"--init-from {source} is a {loaded.spec.name} run; a {spec.name} run starts only "
            f"from a {spec.name} run's parameters"
        )
    fresh = init_agents(setup.algo, [cfg.seed + i for i in range(cfg.num_seeds)], setup.placement)
    trained = loaded.agents.state
    count = jax.tree.leaves(loaded.agents.seed)[0].shape[0]
    picks = np.arange(cfg.num_seeds) % count
    state = fresh.state
    changes = {}
    for name in COPIED:
        if name not in state._fields:
            continue
        mine, theirs = getattr(state, name), getattr(trained, name)
        check_shapes(source, name, mine, theirs)
        changes[name] = jax.tree.map(
            lambda a, b: np.asarray(b)[picks].astype(a.dtype), mine, theirs
        )
    env_state = state.env_state
    if isinstance(env_state, NormalizeObsState) and isinstance(
        trained.env_state, NormalizeObsState
    ):
        stats = jax.tree.map(lambda b: np.asarray(b)[picks], trained.env_state.obs_stats)
        changes["env_state"] = env_state._replace(obs_stats=stats)
    agents = fresh._replace(state=state._replace(**changes))
    notify(sinks, f"starting from {run_dir} checkpoint {loaded.step}: parameters copied, "
                  "optimizer fresh")  # fmt: skip
    return Snapshot(agents, {}, 0, {})


def check_shapes(source: str, name: str, mine: Any, theirs: Any) -> None:
    """One line naming the first array whose shape (past the seed axis) differs."""
    mine_leaves = jax.tree_util.tree_flatten_with_path(mine)[0]
    theirs_leaves = jax.tree_util.tree_flatten_with_path(theirs)[0]
    theirs_by_path = {jax.tree_util.keystr(p): v for p, v in theirs_leaves}
    for path, leaf in mine_leaves:
        key = jax.tree_util.keystr(path)
        other = theirs_by_path.get(key)
        if other is None:
            raise ConfigError(
                f"--init-from {source}: its {name} have no {key}; this run's network differs "
                "(another architecture or algorithm settings)"
            )
        if tuple(np.shape(other))[1:] != tuple(np.shape(leaf))[1:]:
            raise ConfigError(
                f"--init-from {source}: {name}{key} is {tuple(np.shape(other))[1:]} there and "
                f"{tuple(np.shape(leaf))[1:]} here (other observation or action spaces, or "
                "network sizes)"
            )
    if len(theirs_leaves) != len(mine_leaves):
        raise ConfigError(
            f"--init-from {source}: its {name} hold {len(theirs_leaves)} arrays, this run's "
            f"{len(mine_leaves)}; the networks differ"
        )
