"""purerl: pure-functional reinforcement learning compiled end to end with JAX.

>>> import purerl
>>> result = purerl.train("ppo", env="CartPole-v1", num_seeds=4)
>>> result.summary.final_mean_return
>>> policy = purerl.load("runs/<dir>")     # a trained policy, callable on observations

Importing purerl (or any of its modules) creates no JAX backend and imports no environment
library; the API functions load what they need when called.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Any

try:  # pyproject.toml holds the version; the installed package's metadata carries it
    __version__ = metadata.version("purerl")
except metadata.PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__", "load", "make_train", "train"]


API = {"train": "purerl.api", "make_train": "purerl.api", "load": "purerl.run.policy"}
"""The public functions, each imported from its module on first use."""


def __getattr__(name: str) -> Any:
    if name in API:
        return getattr(importlib.import_module(API[name]), name)
    try:  # submodules on first use: purerl.algos.get(...), purerl.envs.make(...)
        return importlib.import_module(f"purerl.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module 'purerl' has no attribute {name!r}") from None
