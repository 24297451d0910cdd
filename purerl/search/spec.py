"""Search specs: which configurations a hyperparameter search trains.

A spec is a YAML or JSON file, or the same keys as command-line flags (``num_seeds`` is
``--num-seeds``; ``num_seeds``, ``seed`` and ``total_timesteps`` mean what they mean to
``purerl train``)::

    algo: ppo                  # a registered algorithm (purerl train --help lists them)
    env: CartPole-v1
    preset: CartPole-v1        # base configuration (default: the env's preset, else defaults)
    num_seeds: 2               # seeds per configuration: seed, seed + 1, ...
    seed: 0                    # seed of each configuration's first agent (default: the preset's)
    total_timesteps: 200000    # the budget of every configuration (default: the preset's)
    samples: 8                 # draws of the sampled parameters (per grid point)
    sample_seed: 0             # seed of the numpy Generator that draws them
    params:
      lr: {loguniform: [1.0e-4, 1.0e-2]}
      ent_coef: {grid: [0.0, 0.01]}
      num_envs: {choice: [4, 8]}
      rollout_len: 64          # a plain value is fixed: it changes the base configuration

The configurations are ``samples`` rounds of the grid's cartesian product, each configuration
with its own draw of the sampled parameters (choice, uniform, loguniform). Traced parameters
(the fields of the algorithm's ``hparams_cls``) take any kind and are vmapped within one
program; every other field is grouped (one compile per distinct value) and takes grid or choice
only.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from collections.abc import Mapping
from typing import Any

from purerl import algos, envs
from purerl.config import ConfigError

SPEC_KEYS = (
    "algo", "env", "preset", "num_seeds", "seed", "total_timesteps", "samples", "sample_seed"
)  # fmt: skip
RENAMED_KEYS = {"seeds": "num_seeds", "first_seed": "seed", "budget": "total_timesteps"}
"""Spec keys of earlier versions -> the keys (the ``purerl train`` names) that replaced them."""
KINDS = ("grid", "choice", "uniform", "loguniform")
SAMPLED_KINDS = ("choice", "uniform", "loguniform")
RANGE_KINDS = ("uniform", "loguniform")
RESERVED = {
    "env": "give the spec's env (one search per environment)",
    "seed": "give the spec's seed (--seed); configuration k's agents use seed, seed + 1, ...",
    "num_seeds": "give the spec's num_seeds (--num-seeds), seeds per configuration",
    "total_timesteps": "give the spec's total_timesteps (--total-timesteps), for every "
    "configuration",
}
"""Config fields a spec sets through its own keys, never through params."""


class SpecError(ConfigError):
    """A search spec that cannot run; the message says what to change."""


@dataclasses.dataclass(frozen=True)
class ParamSpec:
    """One parameter: ``fixed`` (values = (value,)), ``grid``/``choice`` (the values), or
    ``uniform``/``loguniform`` (values = (low, high))."""

    name: str
    kind: str
    values: tuple


@dataclasses.dataclass(frozen=True)
class SearchSpec:
    """A validated spec. A configuration is ``preset_config`` with ``overrides`` (env,
    num_seeds, seed, total_timesteps, fixed params) and its searched values applied."""

    algo: str
    env: str
    preset: str | None
    preset_config: Any
    overrides: tuple[tuple[str, Any], ...]
    params: tuple[ParamSpec, ...]
    num_seeds: int = 1
    samples: int = 1
    sample_seed: int = 0
    total_timesteps: int | None = None
    seed: int | None = None

    @property
    def searched(self) -> tuple[ParamSpec, ...]:
        return tuple(p for p in self.params if p.kind != "fixed")


def scalar(data: Mapping, key: str, default: Any, minimum: int) -> Any:
    value = data.get(key, default)
    if value is None:
        return None
    try:
        number = to_int(value)
    except (TypeError, ValueError):
        raise SpecError(f"{key} must be an integer, got {value!r}") from None
    if number < minimum:
        raise SpecError(f"{key} must be at least {minimum}, got {number}")
    return number


def parse_spec(data: Mapping[str, Any]) -> SearchSpec:
    """Validates a spec given as a mapping (a loaded file merged with flags).

    Raises:
        SpecError: the first problem found, as one line naming what to change.
    """
    renamed = [key for key in RENAMED_KEYS if key in data]
    if renamed:
        new = ", ".join(f"{key} is now {RENAMED_KEYS[key]}" for key in renamed)
        raise SpecError(f"spec keys take purerl train's names: {new}")
    unknown = sorted(set(data) - {*SPEC_KEYS, "params", "resolved"})
    if unknown:
        raise SpecError(f"unknown spec keys {unknown}; keys: {', '.join(SPEC_KEYS)}, params")
    algo = str(data.get("algo", algos.names()[0]))
    if algo not in algos.names():
        known = ", ".join(sorted(algos.names()))
        raise SpecError(f"unknown algorithm {algo!r}; algorithms: {known}")
    env = str(data.get("env", "CartPole-v1"))
    try:
        envs.lookup(env)
    except envs.UnknownEnvError as err:
        raise SpecError(str(err)) from None
    num_seeds, samples = scalar(data, "num_seeds", 1, 1), scalar(data, "samples", 1, 1)
    sample_seed = scalar(data, "sample_seed", 0, 0)
    total_timesteps = scalar(data, "total_timesteps", None, 1)
    seed = scalar(data, "seed", None, 0)
    raw = data.get("params") or {}
    if not isinstance(raw, Mapping):
        raise SpecError("params must map parameter names to a value or {kind: values}")
    params = tuple(parse_param(algo, name, value) for name, value in raw.items())
    if samples > 1 and not any(p.kind in SAMPLED_KINDS for p in params):
        raise SpecError(
            f"samples {samples} needs a choice, uniform or loguniform parameter to draw; "
            "a grid is enumerated once"
        )
    preset = data.get("preset")
    overrides: dict[str, Any] = {"env": env, "num_seeds": num_seeds}
    if total_timesteps is not None:
        overrides["total_timesteps"] = total_timesteps
    if seed is not None:
        overrides["seed"] = seed
    overrides.update({p.name: p.values[0] for p in params if p.kind == "fixed"})
    return SearchSpec(
        algo,
        env,
        preset,
        base_config(algo, env, preset),
        tuple(overrides.items()),
        params,
        num_seeds,
        samples,
        sample_seed,
        total_timesteps,
        seed,
    )


def base_config(algo: str, env: str, preset: str | None) -> Any:
    """The named preset, else ``env``'s preset, else the algorithm's defaults."""
    try:
        return algos.get(algo).base_config(env, preset)
    except ConfigError as err:
        raise SpecError(str(err)) from None


def parameter_kinds(algo: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(traced, grouped)`` field names of ``algo`` that params may name."""
    spec = algos.get(algo)
    names = [f.name for f in dataclasses.fields(spec.config_cls) if f.name not in RESERVED]
    return spec.traced, tuple(n for n in names if n not in spec.traced)


def parse_param(algo: str, name: str, value: Any) -> ParamSpec:
    """One ``params`` entry, with its values converted to the config field's type."""
    traced, grouped = parameter_kinds(algo)
    if name in RESERVED:
        raise SpecError(f"parameter {name!r} cannot be searched: {RESERVED[name]}")
    if name not in traced and name not in grouped:
        raise SpecError(
            f"unknown parameter {name!r} for {algo}; traced (vmapped in one program): "
            f"{', '.join(traced)}; grouped (one program per value): {', '.join(grouped)}"
        )
    hint = typing.get_type_hints(algos.get(algo).config_cls)[name]
    if not isinstance(value, Mapping):
        return ParamSpec(name, "fixed", (coerce(name, value, hint),))
    if len(value) != 1 or next(iter(value)) not in KINDS:
        raise SpecError(f"parameter {name}: give one of {', '.join(KINDS)}, got {sorted(value)}")
    kind, values = next(iter(value.items()))
    if not isinstance(values, list | tuple):
        raise SpecError(f"parameter {name}: {kind} takes a list, got {values!r}")
    if kind in RANGE_KINDS:
        return ParamSpec(name, kind, parse_range(name, kind, values, traced))
    if not values:
        raise SpecError(f"parameter {name}: {kind} is empty; give at least one value")
    return ParamSpec(name, kind, tuple(coerce(name, v, hint) for v in values))


def parse_range(name: str, kind: str, values: Any, traced: tuple[str, ...]) -> tuple:
    if name not in traced:
        raise SpecError(
            f"parameter {name}: {kind} ranges are for traced parameters ({', '.join(traced)}); "
            f"{name} changes shapes or program structure, so give it a grid or choice"
        )
    if len(values) != 2:
        raise SpecError(f"parameter {name}: {kind} takes [low, high], got {list(values)}")
    low, high = (coerce(name, v, float) for v in values)
    if kind == "loguniform" and min(low, high) <= 0:
        raise SpecError(
            f"parameter {name}: loguniform bounds must be positive, got [{low}, {high}]"
        )
    if low >= high:
        raise SpecError(f"parameter {name}: {kind} needs low < high, got [{low}, {high}]")
    return (low, high)


def to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError(value)
    number = float(value) if isinstance(value, str) and not value.strip().isdigit() else value
    if isinstance(number, float) and not number.is_integer():
        raise ValueError(value)
    return int(number)


def to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError(value)
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(value)
    return number


def to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    words = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}
    return words[str(value).strip().lower()]


def to_int_tuple(value: Any) -> tuple[int, ...]:
    if isinstance(value, str):
        text = value.strip()
        value = json.loads(text) if text.startswith("[") else text.replace("x", ",").split(",")
    if not isinstance(value, list | tuple):
        value = [value]
    return tuple(to_int(v) for v in value)


def to_str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


CONVERTERS = {
    bool: (to_bool, "true or false"),
    int: (to_int, "an integer"),
    float: (to_float, "a finite number"),
    str: (to_str, "a string"),
}


def coerce(name: str, value: Any, hint: Any) -> Any:
    """``value`` as the config field's type (YAML reads ``1e-4`` as a string, flags are text)."""
    if typing.get_origin(hint) is typing.Literal:
        choices = typing.get_args(hint)
        if value not in choices:
            raise SpecError(f"parameter {name}: {value!r} is not one of {', '.join(choices)}")
        return value
    if typing.get_origin(hint) is tuple:
        convert, what = to_int_tuple, "a list of integers"
    elif hint in CONVERTERS:
        convert, what = CONVERTERS[hint]
    else:
        return value
    try:
        return convert(value)
    except (TypeError, ValueError, KeyError):
        raise SpecError(f"parameter {name}: {value!r} is not {what}") from None


def parse_param_flag(text: str) -> tuple[str, Any]:
    """``--param`` text as a ``params`` entry: ``lr=loguniform:1e-4,1e-2``,
    ``num_envs=grid:4,8``, ``hidden_sizes=grid:[[32],[64,64]]`` or ``rollout_len=64``."""
    name, sep, rest = text.partition("=")
    if not sep or not name.strip():
        raise SpecError(
            f"--param {text!r}: write NAME=KIND:VALUES (KIND one of {', '.join(KINDS)}) or "
            "NAME=VALUE"
        )
    kind, colon, values = rest.partition(":")
    if not colon:
        return name.strip(), rest
    if kind not in KINDS:
        raise SpecError(f"--param {text!r}: unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
    values = values.strip()
    if values.startswith("["):
        try:
            return name.strip(), {kind: json.loads(values)}
        except ValueError:
            raise SpecError(f"--param {text!r}: {values!r} is not a JSON list") from None
    return name.strip(), {kind: [v.strip() for v in values.split(",")] if values else []}
