"""Configuration shared by the algorithms: frozen dataclasses that tyro turns into CLIs.

Every configuration is validated when it is built, whatever built it (the command line, a saved
``config.json``, the Python API): a value that cannot run raises ``ConfigError`` naming the flag
and what to do, before any environment, program or file is made.
"""

from __future__ import annotations

import ast
import dataclasses
import errno
import math
import re
import types
import typing
from typing import Any, Literal

Activation = Literal["tanh", "relu", "gelu", "swish"]
Network = Literal["mlp", "gru", "lstm"]
"""purerl's own torsos (``--network``); a torso of the user's is named by ``module:attr``."""
RECURRENT: tuple[str, ...] = ("gru", "lstm")
"""The torsos with a recurrent cell."""
Precision = Literal["fp32", "bf16"]

MAX_UPDATES = 2**31 - 1
"""Updates are counted in int32 (``state.step``, ``fold_in(key, step)``)."""
MAX_TOTAL_TIMESTEPS = 10**15
"""About a year of training at 30M environment steps per second: beyond any machine."""
MAX_BATCH = 2**31 - 1
"""Transitions in one update over all seeds: XLA indexes arrays with int32."""
MAX_WIDTH = 2**16
"""Widest hidden layer accepted."""
MAX_LAYERS = 64
"""Most hidden layers accepted."""
MAX_SEED = 2**31 - 1
"""Seeds travel as int32."""


TRACED = "purerl.traced"
"""Metadata key of the configuration fields ``traced`` marks."""


def traced(default: float) -> Any:
    """Marks a float configuration field as a traced hyperparameter: it travels in the
    algorithm's state as data (``state.hparams``, a NamedTuple ``purerl.core.algo.hparams_class``
    derives from these marks), so that sweeps vary it inside one compiled program. Use it as the
    field's default: ``lr: float = traced(2.5e-4)``."""
    return dataclasses.field(default=default, metadata={TRACED: True})


def traced_fields(config_cls: type) -> tuple[str, ...]:
    """The fields of ``config_cls`` marked with ``traced``, in field order."""
    return tuple(f.name for f in dataclasses.fields(config_cls) if f.metadata.get(TRACED))


class ConfigError(Exception):
    """A configuration that cannot run; the message says what to change."""


USER_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.ENOENT,
        errno.ENAMETOOLONG,
    }
)
"""File-system errors a user causes and can fix (a full disk or quota, an unwritable or missing
path, a name longer than the file system allows): one line and exit code 2, not a traceback."""


def os_error_reason(err: OSError) -> str:
    """Why a file operation failed, in words, with the way out where the system's words lack
    one (a name too long)."""
    reason = err.strerror or str(err)
    if err.errno == errno.ENAMETOOLONG:
        reason += " (a file or directory name holds at most 255 bytes): choose a shorter name"
    return reason


DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
MODULE_ATTR = re.compile(rf"({DOTTED}):({DOTTED})")
"""``module:attr``: a user's environment factory (``--env``) or network (``--network``)."""
OBJECT_PREFIX = "object:"
"""Ids of what a user gave purerl as an object: ``object:<module>.<qualified class name>``."""


def is_user_network(network: str) -> bool:
    """Whether ``network`` names a torso of the user's: ``module:attr``, or the
    ``object:<module>.<class>`` of a module given as an object (``purerl.algos.torso``)."""
    if network.startswith(OBJECT_PREFIX):
        return re.fullmatch(DOTTED, network[len(OBJECT_PREFIX) :]) is not None
    return MODULE_ATTR.fullmatch(network) is not None


def flag(name: str) -> str:
    """The command-line flag of a field: ``num_envs`` -> ``--num-envs``."""
    return "--" + name.replace("_", "-")


@dataclasses.dataclass(frozen=True)
class CommonConfig:
    """Settings every algorithm has. Everything here can change the result of a run."""

    env: str = "CartPole-v1"
    """Environment id (`purerl envs` lists them), or module:function returning your own
    environment (docs/guide.md, "Your own environment")."""
    num_envs: int = 4
    """Parallel environments per agent."""
    total_timesteps: int = 500_000
    """Training budget in agent steps: environment steps per agent, all of its environments
    together (on Atari each step is 4 emulator frames)."""
    seed: int = 0
    """Seed of the first agent; agent i uses seed + i."""
    num_seeds: int = 1
    """Independent agents trained at once (vmapped)."""
    normalize_obs: bool = False
    """Standardise observations with running statistics."""
    normalize_reward: bool = False
    """Divide rewards by the running standard deviation of the return discounted with the
    algorithm's gamma, clipped to [-10, 10]; reported episode returns stay unscaled."""
    env_options: tuple[str, ...] = ()
    """Environment options as key=value: Atari protocol fields (sticky_actions=0,
    episodic_life=False, reward_clip=False, noop_max, frame_skip, max_episode_steps), gymnax
    EnvParams fields (e.g. max_steps_in_episode=200), Snake options (obs_mode=features)."""
    precision: Precision = "fp32"
    """Network compute precision: bf16 computes activations and matmuls in bfloat16;
    parameters, optimizer and losses stay float32. It is meant for accelerators with bfloat16
    matrix units; on a CPU it can run slower than fp32 (docs/performance.md)."""

    def __post_init__(self):
        check_field_types(self)
        check_traced_range(self)
        require_positive(self, "num_envs", "total_timesteps", "num_seeds")
        if not 0 <= self.seed <= MAX_SEED:
            raise ConfigError(f"--seed must lie in [0, {MAX_SEED}], got {self.seed}")
        if self.seed + self.num_seeds - 1 > MAX_SEED:
            raise ConfigError(f"--seed + --num-seeds must stay below {MAX_SEED}")
        parse_env_options(self.env_options)
        self.check()
        check_budget(self)

    def check(self) -> None:
        """Algorithm-specific checks (subclasses extend it); raise ``ConfigError``."""

    @property
    def env_steps_per_update(self) -> int:
        raise NotImplementedError

    @property
    def num_updates(self) -> int:
        return self.total_timesteps // self.env_steps_per_update

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """``env_options`` as keyword arguments of ``purerl.envs.make``."""
        return parse_env_options(self.env_options)


def check_budget(cfg: CommonConfig) -> None:
    """Upper and lower bounds on the run's size, checked before anything is built."""
    per_update = cfg.env_steps_per_update
    if cfg.total_timesteps > MAX_TOTAL_TIMESTEPS:
        raise ConfigError(
            f"--total-timesteps {cfg.total_timesteps:,} is beyond {MAX_TOTAL_TIMESTEPS:,} "
            "(about a year at 30M steps/s); give a budget that can finish"
        )
    if cfg.total_timesteps < per_update:
        raise ConfigError(
            f"--total-timesteps {cfg.total_timesteps} is less than one update of {per_update} "
            "steps; raise it or lower num_envs x rollout_len"
        )
    if cfg.num_updates > MAX_UPDATES:
        raise ConfigError(
            f"--total-timesteps {cfg.total_timesteps:,} makes {cfg.num_updates:,} updates of "
            f"{per_update} steps, more than the {MAX_UPDATES:,} an int32 update counter holds; "
            "lower it or raise num_envs x rollout_len"
        )
    if per_update * cfg.num_seeds > MAX_BATCH:
        raise ConfigError(
            f"one update of {cfg.num_seeds} seed(s) x {per_update} steps exceeds {MAX_BATCH:,} "
            "transitions; lower --num-envs, --rollout-len or --num-seeds"
        )


def check_field_types(cfg: object) -> None:
    """Checks every field against its annotation: choices of ``Literal`` fields, whole numbers
    for ``int``, finite numbers for ``float``, tuples of the right items.

    The command line parses values into these types already; this guards configurations
    built in Python or read from ``config.json``.
    """
    hints = typing.get_type_hints(type(cfg))
    for field in dataclasses.fields(cfg):
        problem = type_problem(getattr(cfg, field.name), hints[field.name])
        if problem:
            raise ConfigError(f"{flag(field.name)} {problem}")


FLOAT32_MAX = 3.4028234663852886e38
"""The largest float32: traced hyperparameters travel as float32 scalars."""


def check_traced_range(cfg: object) -> None:
    """Refuses a traced hyperparameter beyond float32's range: it would become infinite in the
    compiled program (``--lr 1e308``) and the first update's loss with it."""
    for name in traced_fields(type(cfg)):
        value = getattr(cfg, name)
        if abs(value) > FLOAT32_MAX:
            raise ConfigError(
                f"{flag(name)} {value:g} is beyond the float32 range (+-{FLOAT32_MAX:.1e}) it "
                "is computed in; give a smaller number"
            )


def type_problem(value: Any, hint: Any) -> str | None:
    """Why ``value`` does not fit the annotation ``hint`` (None if it does)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        arms = [arm for arm in typing.get_args(hint) if arm is not type(None)]
        if value is None and len(arms) < len(typing.get_args(hint)):
            return None
        if any(type_problem(value, arm) is None for arm in arms):
            return None
        return f"must be {' or '.join(map(describe_type, arms))}, got {value!r}"
    if origin is list or origin is dict:
        if not isinstance(value, origin):
            return f"must be {describe_type(hint)}, got {value!r}"
        items = value.values() if origin is dict else value
        item_hint = typing.get_args(hint)[-1:] or (Any,)
        problems = (type_problem(item, item_hint[0]) for item in items)
        return next((problem for problem in problems if problem), None)
    if origin is Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            return f"must be one of {', '.join(map(str, choices))}; got {value!r}"
        return None
    if hint is bool:
        return None if isinstance(value, bool) else f"must be true or false, got {value!r}"
    if hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else f"must be a whole number, got {value!r}"
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number, got {value!r}"
        return None if math.isfinite(value) else f"must be finite, got {value}"
    if origin is tuple:
        if not isinstance(value, tuple):
            return f"must be a sequence, got {value!r}"
        (item,) = typing.get_args(hint)[:1]
        for element in value:
            problem = type_problem(element, item)
            if problem:
                return problem
        return None
    if hint is str:
        return None if isinstance(value, str) else f"must be a string, got {value!r}"
    return None


def describe_type(hint: Any) -> str:
    """What a value of annotation ``hint`` is, in words (for ``type_problem``'s messages)."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        return f"one of {', '.join(map(str, typing.get_args(hint)))}"
    words = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}
    words.update({tuple: "a sequence", list: "a list", dict: "a mapping"})
    return words.get(origin or hint, getattr(hint, "__name__", str(hint)))


def parse_env_options(options: tuple[str, ...]) -> dict[str, Any]:
    """``("a=1", "b=False", "c=grid")`` to ``{"a": 1, "b": False, "c": "grid"}``.

    Values are Python literals where they parse as one, strings otherwise.
    """
    parsed = {}
    for option in options:
        key, sep, text = option.partition("=")
        if not sep or not key.isidentifier():
            raise ConfigError(f"--env-options takes key=value pairs, got {option!r}")
        try:
            parsed[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            parsed[key] = text
    return parsed


def require_positive(cfg: object, *names: str) -> None:
    """Raises ``ConfigError`` naming the first field in ``names`` that is not positive."""
    for name in names:
        value = getattr(cfg, name)
        if not value > 0:
            raise ConfigError(f"{flag(name)} must be positive, got {value}")


def require_unit_interval(cfg: object, *names: str) -> None:
    """Raises ``ConfigError`` naming the first field in ``names`` outside ``[0, 1]``."""
    for name in names:
        value = getattr(cfg, name)
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"{flag(name)} must lie in [0, 1], got {value}")


def require_network(cfg: object, builtin: tuple[str, ...] = ("mlp",)) -> None:
    """Checks the ``network`` field (one of ``builtin``, or a torso of the user's) and the
    ``hidden_sizes`` of a config with an MLP."""
    if cfg.network not in builtin and not is_user_network(cfg.network):
        names = " or ".join(filter(None, [", ".join(builtin[:-1]), builtin[-1]]))
        raise ConfigError(
            f"--network must be {names}, or module:attr naming a flax module of "
            f'yours (mypackage.nets:Torso; docs/guide.md, "Your own network"), got '
            f"{cfg.network!r}"
        )
    sizes = cfg.hidden_sizes
    if not 1 <= len(sizes) <= MAX_LAYERS or min(sizes) < 1 or max(sizes) > MAX_WIDTH:
        raise ConfigError(
            f"--hidden-sizes must be 1 to {MAX_LAYERS} widths in [1, {MAX_WIDTH}], got {sizes}"
        )


RNN_DEFAULTS = (128, 0)
"""``MemoryConfig``'s ``rnn_size`` and ``bptt_len`` defaults: what a feed-forward torso has."""


@dataclasses.dataclass(frozen=True)
class MemoryConfig:
    """The torso's memory, for algorithms that learn from whole rollouts (PPO, PQN)."""

    network: str = "mlp"
    """Torso: mlp (feed-forward), or gru or lstm: the MLP of hidden_sizes (the Nature CNN
    for pixels), then a recurrent cell of rnn_size carried from step to step and reset where
    an episode starts, for tasks where the right action depends on what was seen before; or
    module:attr, a feed-forward flax module of yours (a class, or a function returning one)
    that purerl adds its heads to (docs/guide.md, "Your own network")."""
    rnn_size: int = RNN_DEFAULTS[0]
    """Width of the gru or lstm cell."""
    bptt_len: int = RNN_DEFAULTS[1]
    """Steps backpropagated through in the update with gru or lstm: each env's rollout is cut
    into sequences of this many steps, replayed from the memory recorded at their start (0:
    the whole rollout). Must divide rollout_len."""

    def check_memory(self) -> None:
        """Checks the memory fields against the rollout (``rollout_len``, ``num_envs``,
        ``num_minibatches`` of the algorithm's configuration)."""
        if not 1 <= self.rnn_size <= MAX_WIDTH:
            raise ConfigError(f"--rnn-size must lie in [1, {MAX_WIDTH}], got {self.rnn_size}")
        if is_user_network(self.network) and (self.rnn_size, self.bptt_len) != RNN_DEFAULTS:
            raise ConfigError(
                f"--network {self.network} is a torso of yours, which purerl runs feed-forward "
                f"(recurrent torsos of your own are not supported): --rnn-size {self.rnn_size} "
                f"and --bptt-len {self.bptt_len} (given, or a preset's) go with --network gru or "
                f"lstm; leave them at {RNN_DEFAULTS[0]} and {RNN_DEFAULTS[1]}"
            )
        if self.network not in RECURRENT:
            return
        length = self.sequence_len
        if length < 1 or self.rollout_len % length:
            raise ConfigError(
                f"--bptt-len {self.bptt_len} must divide --rollout-len {self.rollout_len} "
                "(0 backpropagates through the whole rollout)"
            )
        self.check_sequences(self.num_envs)

    def check_sequences(self, num_envs: int) -> None:
        """Minibatches are whole sequences: ``num_minibatches`` must divide the sequences of
        ``num_envs`` environments (those of one device, in data-parallel runs)."""
        windows = self.rollout_len // self.sequence_len
        sequences = num_envs * windows
        if self.network in RECURRENT and sequences % self.num_minibatches:
            raise ConfigError(
                f"--num-minibatches {self.num_minibatches} does not divide the {sequences} "
                f"sequences of a {self.network} update ({num_envs} envs x rollout_len / "
                f"bptt_len {windows}): minibatches are whole sequences; pick a divisor"
            )

    @property
    def sequence_len(self) -> int:
        """Steps per replayed sequence: ``bptt_len``, or the whole rollout for 0."""
        return self.bptt_len or self.rollout_len
