"""Evaluating trained agents: from their checkpoints (episode returns, and a video of one
episode), and during training (``--eval-every``, ``make_evaluation``).

Each evaluation plays ``K`` fresh environments in parallel until every one has finished an
episode, for every trained seed at once (vmapped); the first episode of each environment counts.
Counting only first episodes keeps the mean unbiased: the first ``K`` episodes to end among fewer
environments would favour short ones. Observation-normalisation statistics are taken from the
trained agent.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from purerl import algos, envs
from purerl.algos import Algo, AlgoSpec, torso
from purerl.config import ConfigError
from purerl.core.program import Agent, EvalFn, evaluation_key, init_agents
from purerl.core.types import Array, Key, Metrics
from purerl.envs.render import adapter_state, render_frame
from purerl.envs.wrappers import NormalizeObsState
from purerl.run import checkpoint, rundir, trust


class LoadedAgents(NamedTuple):
    """A run's trained agents, restored from one checkpoint (``rundir.load_run`` reads the
    run's metrics instead)."""

    spec: AlgoSpec
    cfg: Any
    algo: Algo
    agents: Agent
    """Restored agents, stacked over the run's seeds."""
    step: int
    """Updates done at the checkpoint."""
    skipped: tuple[checkpoint.UnreadableCheckpointError, ...] = ()
    """Newer checkpoints that could not be read and were passed over (``latest`` only)."""
    env: Any = None
    """The environment object the run trained on, given again, or the factory the user vouched
    for (``trust.recorded_env``); None: ``cfg.env`` is an id purerl builds itself."""


def load_agents(
    run_dir: Path,
    which: str = "latest",
    env: Any = None,
    trust_run_code: bool = False,
    words: trust.Words = trust.PYTHON,
    network: Any = None,
) -> LoadedAgents:
    """Restores checkpoint ``which`` (``latest``, ``best`` or an update count) of a run, reading
    only: ``latest`` is the newest checkpoint that can be read (``LoadedAgents.skipped`` names
    the newer ones passed over), as a resume would take. ``env`` is the environment object of
    a run trained on one (``cfg.env`` is then ``object:<module>.<class>``), or the run's
    ``module:factory`` named again; ``network`` likewise the module object of a run trained
    with one, or the run's ``module:attr`` named again; ``trust_run_code`` imports and calls
    the code the run names without that (``purerl.run.trust``). ``words``: how the messages say
    so.

    Raises:
        CheckpointError: no such run (a missing path, a file, a directory without a readable
            config.json), no such checkpoint, or an unreadable or foreign one.
        UntrustedCodeError: the run names a factory or network that was neither named again
            nor trusted.
        ConfigError: the run's configuration names an algorithm that is not registered or
            values this version does not accept; ``env`` or ``network`` missing, or not the
            run's.
    """
    run_dir = Path(run_dir)
    checkpoint.require_run_dir(run_dir)
    try:
        record = rundir.read_config(run_dir)
    except rundir.NotARunError as err:
        raise checkpoint.CheckpointError(str(err)) from None
    spec = algos.get(record.algo)
    cfg = record.make_config(spec.config_cls, run_dir)
    if env is None or isinstance(env, str):
        env = trust.recorded_env(run_dir, cfg.env, env, trust_run_code, words)
    else:
        check_env_object(run_dir, cfg.env, env)
    recorded = torso.network_of(cfg)
    network = trust.recorded_network(run_dir, recorded, network, trust_run_code, words)
    # A data-parallel run's replicas each stepped num_envs / D environments; the agents read
    # back keep those shapes (evaluation plays environments of its own).
    replicas = checkpoint.data_parallel_replicas(run_dir, which) or 1
    algo = spec.make(cfg, env, cfg.num_envs // replicas, network=network).algo
    fresh = init_agents(algo, [cfg.seed + i for i in range(cfg.num_seeds)])
    identity = rundir.run_identity(spec.name, cfg)
    step, snapshot, skipped = checkpoint.restore_named(run_dir, which, fresh, identity)
    return LoadedAgents(spec, cfg, algo, snapshot.agents, step, tuple(skipped), env)


def check_env_object(run_dir: Path, env_id: str, env: Any) -> None:
    """Refuses an environment object for a run that trained on none, or on a class of another
    name (the module may differ: a class trained on in a notebook lives in ``__main__``)."""
    given = envs.custom.object_id(env)
    if not envs.custom.is_object_id(env_id):
        raise ConfigError(
            f"{run_dir} trained on {env_id}, which purerl builds itself; env= is for runs "
            "trained on an environment object"
        )
    if given.rpartition(".")[2] != env_id.rpartition(".")[2]:
        raise ConfigError(f"{run_dir} trained on {env_id}, not on {given}")


def with_trained_obs_stats(env_state: Any, trained_env_state: Any) -> Any:
    """``env_state`` using the observation statistics of a trained agent's environments."""
    if isinstance(env_state, NormalizeObsState):
        return env_state._replace(obs_stats=trained_env_state.obs_stats)
    return env_state


class Episodes(NamedTuple):
    """First-episode results of each evaluation environment, ``[K]`` each (``[S, K]`` stacked)."""

    returns: Array
    lengths: Array
    finished: Array


def play_episodes(
    algo: Algo, env: Any, states: Any, keys: Key, greedy: bool, max_steps: int
) -> Episodes:
    """Every seed (``states`` and ``keys`` stacked ``[S]``) plays ``env.spec.num_envs``
    environments until each finished once, or ``max_steps``; leaves ``[S, K]``.

    The seeds step together in one loop whose condition is over all of them (no loop under
    ``vmap``): a host simulator (EnvPool, Gymnasium) steps every seed's environments at once.
    A seed whose episodes all finished steps on with the rest; its results are kept.
    """
    params = env.default_params
    num = env.spec.num_envs
    zeros = Episodes(jnp.zeros(num, jnp.float32), jnp.zeros(num, jnp.int32), jnp.zeros(num, bool))

    def start(state, key):
        reset_key, loop_key = jax.random.split(key)
        env_state, obs = env.reset(reset_key, params)
        env_state = with_trained_obs_stats(env_state, state.env_state)
        return env_state, obs, algos.initial_memory(algo, num), zeros, loop_key

    def advance(state, carry):
        env_state, obs, memory, episodes, key = carry
        key, act_key, step_key = jax.random.split(key, 3)
        action, memory = algos.policy_step(algo, state, obs, act_key, greedy, memory)
        env_state, out = env.step(step_key, env_state, action, params)
        first = out.episode.done & ~episodes.finished
        episodes = Episodes(
            jnp.where(first, out.episode.returns, episodes.returns),
            jnp.where(first, out.episode.lengths, episodes.lengths),
            episodes.finished | out.episode.done,
        )
        memory = algos.observe(memory, out, env.spec.autoreset)
        return env_state, out.obs, memory, episodes, key

    def running(loop):
        carry, t = loop
        return (~carry[3].finished).any() & (t < max_steps)

    def step(loop):
        carry, t = loop
        return jax.vmap(advance)(states, carry), t + 1

    start_carry = jax.vmap(start)(states, keys)
    return jax.lax.while_loop(running, step, (start_carry, jnp.int32(0)))[0][3]


def evaluate(
    run: LoadedAgents, num_episodes: int, seed: int, greedy: bool, max_steps: int
) -> Episodes:
    """``num_episodes`` episodes for every seed of ``run``; leaves ``[S, K]``."""
    env = envs.from_config(run.cfg, num_episodes, env=run.env)
    num_seeds = run.agents.seed.shape[0]
    keys = jax.random.split(jax.random.key(seed), num_seeds)

    def play(agents: Agent, keys: Key) -> Episodes:
        return play_episodes(run.algo, env, agents.state, keys, greedy, max_steps)

    return jax.jit(play)(run.agents, keys)


EVAL_MAX_STEPS = 10_000
"""Steps an evaluation during training plays at most (``purerl eval --max-steps``' default):
an episode still going then is left out of the mean."""


def episode_metrics(episodes: Episodes) -> Metrics:
    """``eval/return`` and ``eval/length``: means over the finished episodes (NaN: none)."""
    count = episodes.finished.sum()

    def mean(values: Array) -> Array:
        total = jnp.where(episodes.finished, values, 0).sum().astype(jnp.float32)
        return jnp.where(count > 0, total / jnp.maximum(count, 1), jnp.nan)

    return {"eval/return": mean(episodes.returns), "eval/length": mean(episodes.lengths)}


def make_evaluation(
    algo: Algo, env: Any, max_steps: int = EVAL_MAX_STEPS, replicated: bool = False
) -> EvalFn:
    """The evaluation of a run's agents during training (``purerl.core.loop.Evaluation``).

    Every seed plays ``env.spec.num_envs`` fresh episodes with its greedy policy, reset with
    ``evaluation_key(agent.key, updates_done)`` (a recurrent policy starts with fresh memory and
    forgets at each episode's end); their mean return and length are ``[S]`` metrics. It reads
    the agents' parameters (and observation statistics) and leaves them, and the training
    environments and keys, as they are. ``replicated``: agents stacked ``[D, S, ...]`` over
    data-parallel replicas (identical), of which the first is evaluated.
    """

    def program(agents: Agent, updates_done: Array) -> Metrics:
        if replicated:
            agents = jax.tree.map(lambda x: x[0], agents)

        keys = jax.vmap(lambda key: evaluation_key(key, updates_done))(agents.key)
        episodes = play_episodes(algo, env, agents.state, keys, True, max_steps)
        return jax.vmap(episode_metrics)(episodes)

    return program


class Recording(NamedTuple):
    frames: list[np.ndarray]
    """One RGB frame per action taken, of the state the action was taken in."""
    episode_return: float | None
    """The episode's return as the environment reported it (None if it did not finish)."""
    episode_length: int | None


def record_episode(
    run: LoadedAgents, seed_index: int, seed: int, greedy: bool, max_steps: int
) -> Recording:
    """Plays and draws one episode of trained seed ``seed_index``."""
    one_seed = dataclasses.replace(run.cfg, num_seeds=1, seed=run.cfg.seed + seed_index)
    drawing = () if run.env is not None else envs.lookup(run.cfg.env).video_options
    if drawing:
        options = tuple(f"{name}={value}" for name, value in drawing)
        one_seed = dataclasses.replace(one_seed, env_options=one_seed.env_options + options)
    env = envs.from_config(one_seed, 1, env=run.env)
    params = env.default_params
    agent = jax.tree.map(lambda x: x[seed_index], run.agents)
    reset_key, loop_key = jax.random.split(jax.random.key(seed))
    base, _ = adapter_state(env, None)
    # Host pools built to draw frames (MuJoCo, Gymnasium's rgb_array); every other env is drawn
    # from its state or its observations.
    if getattr(base, "draws_frames", False):
        return record_live(run.algo, env, agent, base, (reset_key, loop_key), greedy, max_steps)

    @jax.jit
    def rollout(reset_key, loop_key):
        env_state, obs = env.reset(reset_key, params)
        env_state = with_trained_obs_stats(env_state, agent.state.env_state)

        def step(carry, key):
            env_state, obs, memory = carry
            act_key, step_key = jax.random.split(key)
            action, memory = algos.policy_step(run.algo, agent.state, obs, act_key, greedy, memory)
            next_state, out = env.step(step_key, env_state, action, params)
            memory = algos.observe(memory, out, env.spec.autoreset)
            return (next_state, out.obs, memory), (env_state, obs, out.episode)

        keys = jax.random.split(loop_key, max_steps)
        memory = algos.initial_memory(run.algo, 1)
        return jax.lax.scan(step, (env_state, obs, memory), keys)[1]

    states, observations, episode = jax.device_get(rollout(reset_key, loop_key))
    done = episode.done[:, 0]
    end = int(np.argmax(done)) if done.any() else None
    count = max_steps if end is None else end + 1
    frames = [
        render_frame(
            env,
            jax.tree.map(lambda x, t=t: x[t], states),
            params,
            jax.tree.map(lambda x, t=t: x[t][0], observations),
        )
        for t in range(count)
    ]
    if end is None:
        return Recording(frames, None, None)
    return Recording(frames, float(episode.returns[end, 0]), int(episode.lengths[end, 0]))


def record_live(
    algo: Algo,
    env: Any,
    agent: Agent,
    base: Any,
    keys: tuple[Key, Key],
    greedy: bool,
    max_steps: int,
) -> Recording:
    """Plays one episode step by step, drawing the simulator as it is before each action: for
    environments whose state lives outside JAX (EnvPool's MuJoCo), where frames cannot be drawn
    from recorded states afterwards."""
    reset_key, loop_key = keys
    params = env.default_params

    @jax.jit
    def reset(key):
        env_state, obs = env.reset(key, params)
        return with_trained_obs_stats(env_state, agent.state.env_state), obs

    @jax.jit
    def step(env_state, obs, memory, key):
        act_key, step_key = jax.random.split(key)
        action, memory = algos.policy_step(algo, agent.state, obs, act_key, greedy, memory)
        env_state, out = env.step(step_key, env_state, action, params)
        return env_state, out.obs, algos.observe(memory, out, env.spec.autoreset), out.episode

    env_state, obs = reset(reset_key)
    memory = algos.initial_memory(algo, 1)
    frames = []
    for key in jax.random.split(loop_key, max_steps):
        frames.append(base.render_live())
        env_state, obs, memory, episode = step(env_state, obs, memory, key)
        if bool(episode.done[0]):
            return Recording(frames, float(episode.returns[0]), int(episode.lengths[0]))
    return Recording(frames, None, None)
