"""Search plans: the configurations a spec expands to, and how they are batched.

``expand`` enumerates ``samples`` rounds of the grid's cartesian product and draws the sampled
parameters of each configuration from ``np.random.default_rng(sample_seed)``; ``make_plan``
validates the resulting configurations and batches them into programs (``purerl.search.sweep``).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from purerl import algos
from purerl.config import ConfigError
from purerl.search.spec import (
    SAMPLED_KINDS,
    SPEC_KEYS,
    ParamSpec,
    SearchSpec,
    SpecError,
    parameter_kinds,
)
from purerl.search.sweep import batch_configs

SIGNIFICANT_DIGITS = 4
"""Drawn values are rounded to this many digits, so tables, configs and runs show one value."""


def draw(param: ParamSpec, rng: np.random.Generator) -> Any:
    """One draw of a sampled parameter."""
    if param.kind == "choice":
        return param.values[int(rng.integers(len(param.values)))]
    low, high = param.values
    if param.kind == "loguniform":
        value = math.exp(rng.uniform(math.log(low), math.log(high)))
    else:
        value = rng.uniform(low, high)
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}")


def expand(spec: SearchSpec) -> list[dict[str, Any]]:
    """The searched values of every configuration, keys in spec order.

    ``samples`` rounds of the grid's cartesian product; sampled parameters are drawn per
    configuration, in that order, from ``np.random.default_rng(sample_seed)``.
    """
    rng = np.random.default_rng(spec.sample_seed)
    grid = [p for p in spec.searched if p.kind == "grid"]
    sampled = [p for p in spec.searched if p.kind in SAMPLED_KINDS]
    assignments = []
    for _ in range(spec.samples):
        for point in itertools.product(*(p.values for p in grid)):
            values = dict(zip((p.name for p in grid), point, strict=True))
            values.update({p.name: draw(p, rng) for p in sampled})
            assignments.append({p.name: values[p.name] for p in spec.searched})
    return assignments


def format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, tuple):
        return "x".join(str(v) for v in value)
    return str(value)


def describe(assignment: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={format_value(v)}" for k, v in assignment.items()) or "(base)"


def make_configs(spec: SearchSpec, assignments: list[dict[str, Any]]) -> list[Any]:
    """Full configurations, validated: the base with overrides and each assignment applied."""
    configs = []
    for index, assignment in enumerate(assignments):
        try:
            configs.append(
                dataclasses.replace(spec.preset_config, **dict(spec.overrides), **assignment)
            )
        except ConfigError as err:
            raise SpecError(f"configuration {index} ({describe(assignment)}): {err}") from None
    return configs


def spec_record(spec: SearchSpec, assignments: list[dict[str, Any]]) -> dict[str, Any]:
    """``spec.json``: the spec as ``parse_spec`` reads it, plus what it resolved to."""
    traced, _ = parameter_kinds(spec.algo)
    params = {
        p.name: p.values[0] if p.kind == "fixed" else {p.kind: list(p.values)} for p in spec.params
    }
    return {
        **{key: getattr(spec, key) for key in SPEC_KEYS},
        "params": params,
        "resolved": {
            "traced": [p.name for p in spec.searched if p.name in traced],
            "grouped": [p.name for p in spec.searched if p.name not in traced],
            "base_config": dataclasses.asdict(spec.preset_config) | dict(spec.overrides),
            "configurations": assignments,
        },
    }


class SearchPlan(NamedTuple):
    """What a search trains: the configurations and how they are batched into programs."""

    algo: str
    configs: list[Any]
    assignments: list[dict[str, Any]]
    """The searched values of each configuration."""
    batches: list[list[int]]
    """Indices into ``configs``; each batch is one vmapped program (a group or a slice). From
    ``purerl.search.sweep.batch_configs``: the batches ``sweep`` trains, in its order."""


def make_plan(spec: SearchSpec, max_configs_per_batch: int | None = None) -> SearchPlan:
    """Expands, validates and batches the configurations of ``spec``."""
    assignments = expand(spec)
    configs = make_configs(spec, assignments)
    batches = batch_configs(configs, algos.get(spec.algo).traced, max_configs_per_batch)
    return SearchPlan(spec.algo, configs, assignments, batches)
