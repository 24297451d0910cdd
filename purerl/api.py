"""The Python API for training: ``purerl.train(...)`` and ``purerl.make_train(cfg)``.

>>> import purerl
>>> result = purerl.train("ppo", env="CartPole-v1", num_seeds=4)
>>> result.summary.final_mean_return, result.history["episode/return"].shape   # [4, updates]
>>> policy = result.policy()          # the first seed's greedy policy, on raw observations

``purerl.train`` builds everything from the configuration exactly as ``purerl train`` does
(same environment construction, same compiled program, the same result bit for bit for the same
configuration); with ``run_dir=`` it writes the usual run directory through the same code.
``purerl.make_train(cfg)`` returns a pure ``train(key)`` to compose into your own programs
(jit it, vmap it over keys), as PureJaxRL and rejax users expect.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from purerl import algos, envs
from purerl.algos import Algo, AlgoSpec, torso
from purerl.config import ConfigError
from purerl.core import program
from purerl.core.types import Key, Metrics
from purerl.options import options_for
from purerl.run import session
from purerl.run.rundir import Summary
from purerl.run.setup import TrainRequest
from purerl.runtime import configure_jax, enable_compilation_cache


class TrainOutput(NamedTuple):
    """What ``purerl.train`` returns."""

    spec: AlgoSpec
    config: Any
    """The configuration that ran (preset, overrides applied)."""
    summary: Summary
    """What ``summary.json`` holds."""
    history: dict[str, np.ndarray]
    """Every per-update metric, per seed: ``[num_seeds, num_updates]`` float arrays."""
    agents: program.Agent
    """The trained agents, stacked over seeds (``agents.state`` is the algorithm state)."""
    algo: Algo
    run_dir: Path | None
    evaluations: dict[str, np.ndarray] | None = None
    """The greedy evaluations of ``eval_every=N`` (None without): ``update`` ``[E]``, the update
    counts they followed, and ``eval/return``, ``eval/length`` ``[num_seeds, E]``."""

    def policy(self, seed_index: int = 0, greedy: bool = True):
        """Seed ``seed_index``'s trained policy as a callable on raw observations."""
        from purerl.run.policy import Policy

        return Policy.from_agents(
            self.spec, self.config, self.algo, self.agents, seed_index, greedy
        )


def resolve(
    algo: str, env: Any, preset: str | None, overrides: dict[str, Any]
) -> tuple[AlgoSpec, Any, Any]:
    """The algorithm, its configuration and run options from keyword arguments: fields of the
    algorithm's configuration and of its run options, in any order. An environment object
    ``env`` becomes its id (``object:<module>.<class>``), with no preset.

    Raises:
        ConfigError: an argument that is neither, or a value that does not validate.
    """
    spec = algos.get(algo)
    if env is not None and not isinstance(env, str):
        env = envs.custom.object_id(env)
    cfg = spec.base_config(env, preset)
    if env is not None:
        # With a named preset, ``env`` trains that preset on another environment, as ``--preset
        # NAME --env ID`` does on the command line (without one, ``cfg.env`` is ``env`` already).
        overrides = {"env": env, **overrides}
    cfg_fields = {f.name for f in dataclasses.fields(spec.config_cls)}
    opt_fields = {f.name for f in dataclasses.fields(options_for(spec))}
    unknown = sorted(set(overrides) - cfg_fields - opt_fields)
    if unknown:
        raise ConfigError(
            f"purerl.train({algo!r}) takes no argument {', '.join(unknown)}; configuration: "
            f"{', '.join(sorted(cfg_fields))}; run options: {', '.join(sorted(opt_fields))}"
        )
    overrides = {name: plain(value) for name, value in overrides.items()}
    try:
        cfg = dataclasses.replace(cfg, **{k: v for k, v in overrides.items() if k in cfg_fields})
        options = options_for(spec)(**{k: v for k, v in overrides.items() if k in opt_fields})
    except ConfigError as err:
        err.args = (python_words(str(err), cfg_fields | opt_fields),)
        raise
    return spec, cfg, options


def plain(value: Any) -> Any:
    """NumPy scalars as Python's, lists as tuples: what a keyword argument obviously means."""
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, list):
        return tuple(plain(v) for v in value)
    return value


def python_words(message: str, names: set[str]) -> str:
    """A message written for the command line, with its flags as the keyword arguments they
    are here (``--num-envs`` -> ``num_envs``)."""

    def word(match: re.Match) -> str:
        name = match.group(1).replace("-", "_")
        return name if name in names else match.group(0)

    return re.sub(r"--([a-z][a-z0-9-]*)", word, message)


def train(
    algo: str,
    *,
    env: Any = None,
    preset: str | None = None,
    run_dir: str | Path | None = None,
    progress: bool = False,
    callbacks: Sequence[Callable[[Any], Any]] = (),
    **overrides: Any,
) -> TrainOutput:
    """Trains ``algo`` (a registered name) as ``purerl train`` would.

    Args:
        algo: ``"ppo"``, ``"dqn"``, ... (``purerl.algos.names()``).
        env: environment id (its preset is the starting configuration, as on the command
            line), ``module:factory`` string, or your own environment object or
            ``(env, params)`` pair (``purerl.envs.custom``; no preset, the defaults apply).
        preset: a named preset instead.
        run_dir: write the usual run directory there (config, metrics, summary, checkpoints,
            learning curves); without it nothing is written.
        progress: show the progress bar.
        callbacks: functions called after every chunk with a ``purerl.run.control.Report``
            (update, steps, the chunk's metrics, the recent and evaluation returns); one
            returning True stops the run early, saved and resumable.
        **overrides: fields of the configuration (``num_seeds=4``, ``lr=1e-3``) or of the run
            options (``updates_per_chunk=10``, ``checkpoint_minutes=5``). ``network`` may be
            your flax module itself (``network=MyTorso()``; the run records
            ``object:<module>.<class>``, and ``purerl.load`` asks for the module again), or a
            ``module:attr`` string (``purerl.algos.torso``).

    Raises:
        ConfigError: unknown algorithm, environment or argument, or an invalid value.
        NonFiniteLossError: training diverged.
    """
    if run_dir is not None:
        if not isinstance(run_dir, str | os.PathLike):
            raise ConfigError(f"run_dir takes a path (str or pathlib.Path), got {run_dir!r}")
        overrides["run_dir"] = str(run_dir)
    if not isinstance(progress, bool | np.bool_):
        raise ConfigError(f"progress takes True or False, got {progress!r}")
    module = overrides.get("network")
    if module is not None and not isinstance(module, str):
        overrides["network"] = torso.object_id(module)  # the run records it; load asks again
    else:
        module = None
    spec, cfg, options = resolve(algo, env, preset, {**overrides, "progress": progress})
    configure_jax()
    enable_compilation_cache(options.compilation_cache)
    source = None if env is None or isinstance(env, str) else env
    if not all(callable(fn) for fn in callbacks):
        raise ConfigError("callbacks takes functions of one argument (a Report)")
    request = TrainRequest(
        spec, cfg, options, in_memory=run_dir is None, env=source, network=module,
        callbacks=tuple(callbacks),
    )  # fmt: skip
    outcome = session.run(request)
    result = outcome.result
    where = None if outcome.run_dir is None else outcome.run_dir.resolve()
    return TrainOutput(
        spec,
        cfg,
        outcome.summary,
        result.history,
        result.agents,
        outcome.algo,
        where,
        result.evaluations,
    )


def make_train(
    cfg: Any, env: Any = None, network: Any = None
) -> Callable[[Key], tuple[Any, Metrics]]:
    """A pure, jittable ``train(key) -> (state, metrics)`` for configuration ``cfg``, on
    ``cfg.env`` or on ``env``, your own environment object or ``(env, params)`` pair, with the
    torso ``cfg.network`` names or ``network``, your flax module.

    ``metrics`` are stacked over the ``cfg.num_updates`` updates. ``train`` is a function of
    the key alone, so ``jax.jit(jax.vmap(train))(keys)`` trains one agent per key;
    ``train(jax.random.key(s))`` computes what ``purerl train`` computes for seed ``s`` (to
    float rounding: XLA may fuse this differently shaped program a little differently).
    ``cfg.num_seeds`` is ignored (map over keys instead), except by an environment that steps
    outside JAX (EnvPool, Gymnasium: one simulator for ``cfg.num_seeds`` agents, stepped from the
    program through a host callback): ``jax.jit(train)(key)`` runs it, and ``jax.vmap`` maps it
    over exactly ``cfg.num_seeds`` keys.

    Raises:
        ConfigError: ``cfg`` belongs to no registered algorithm.
    """
    if network is not None:
        cfg = dataclasses.replace(cfg, network=torso.object_id(network))
    _, algo = algos.for_config(cfg).make(cfg, env=env, network=network)
    run_chunk = program.make_run_chunk(algo, cfg.num_updates)

    def train_fn(key: Key) -> tuple[Any, Metrics]:
        agent, metrics = run_chunk(program.init_agent_from_key(algo, key))
        return agent.state, metrics

    return train_fn
