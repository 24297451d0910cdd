"""What a run directory's recorded code may run: nothing, unless the user says so.

Reading a run is parsing data, so opening a run someone else made (evaluating it, loading its
policy, resuming it, starting a new run from its configuration) is as safe as opening a data
file. A run's ``env`` may name a ``module:factory``, and its ``network`` a ``module:attr``: code
that building the environment or the network imports and calls. ``purerl eval``, ``purerl train
--resume`` and ``--config`` and ``purerl.load`` run it only when the user names the same code
again in this command or call (``--env module:factory``, ``env="module:factory"``, ``--network
module:attr``, ``network="module:attr"``: their own code, found as training finds it, the
current directory included) or says they trust the run (``--trust-run-code``,
``trust_run_code=True``: the module comes from ``sys.path`` as it is, never from the run's or
the current directory). Registered ids and purerl's own networks run nothing of the run's
choosing, and ``object:`` ids need the object again.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import flax.linen as nn

from purerl.algos import torso
from purerl.config import OBJECT_PREFIX, ConfigError, is_user_network
from purerl.envs import custom


class UntrustedCodeError(ConfigError):
    """A run's configuration names code (a ``module:factory``) that the user has neither named
    again nor trusted; nothing of it was imported."""


@dataclasses.dataclass(frozen=True)
class Words:
    """How a user vouches for a run's code where they are (the command line, Python)."""

    name_again: str
    """Naming the code again: ``{field}`` (``env``, ``network``) and ``{value}`` stand for it."""
    trust: str
    """Trusting the run."""

    def naming(self, field: str, value: str) -> str:
        """Naming ``value`` again as ``field`` (``--env mymodule:make_env``)."""
        return self.name_again.format(field=field, value=value)


COMMAND = Words("--{field} {value}", "--trust-run-code")
PYTHON = Words("{field}={value!r}", "trust_run_code=True")

TRUST_HELP = (
    "Import and call the module:factory environment and the module:attr network that the run's "
    "config.json names, from sys.path as it is (PYTHONPATH and installed packages; never the "
    "run's directory or the current one). Only for runs you trust: that code runs with your "
    "permissions. Without it, a run on a factory needs --env naming the same factory again, and "
    "a run with a network of yours --network naming it again; registered environment ids and "
    "purerl's networks need neither."
)
"""``--trust-run-code``'s help, the same for ``purerl train`` and ``purerl eval``."""


def recorded_env(
    where: Path, recorded: str, named: str | None, trusted: bool, words: Words = COMMAND
) -> custom.Factory | None:
    """What builds the environment a run's configuration records (``AlgoSpec.make``'s ``env``):
    None where purerl builds ``recorded`` from its id; the factory it names, imported now, where
    the user named it again (looked for as training looks, the current directory too) or trusts
    the run (from ``sys.path`` as it is).

    Args:
        where: the run directory or config.json, for messages.
        recorded: the configuration's ``env``.
        named: the environment the user named in this command or call, if any.
        trusted: the user trusts the run's code.
        words: how the user vouches, for the message.

    Raises:
        ConfigError: ``named`` is not ``recorded``.
        UntrustedCodeError: ``recorded`` names a factory that the user neither named nor
            trusted; nothing of it was imported.
        InvalidEnvError: the factory cannot be imported.
    """
    if named is not None and named != recorded:
        raise ConfigError(
            f"{where} trained on {recorded}, not on {named}: a run is evaluated and resumed on "
            "its own environment"
        )
    if not custom.is_factory_id(recorded):
        return None
    if named is None and not trusted:
        raise UntrustedCodeError(
            f"{where} records the environment factory {recorded}, code that purerl would import "
            f"and call: if it is yours, name it again ({words.naming('env', recorded)}); if "
            f"you trust this run, pass {words.trust}"
        )
    return custom.resolve(recorded, search_cwd=named is not None)


def recorded_network(
    where: Path, recorded: str, named: Any, trusted: bool, words: Words = COMMAND
) -> nn.Module | None:
    """What builds the torso a run's configuration records (``AlgoSpec.make``'s ``network``):
    None for one of purerl's own; the module object given again for an ``object:`` network; the
    module a ``module:attr`` names, imported now, where the user named it again (looked for as
    training looks, the current directory too) or trusts the run (from ``sys.path`` as it is).

    Args:
        where: the run directory or config.json, for messages.
        recorded: the configuration's ``network``.
        named: the network the user gave in this command or call, if any: a ``module:attr``,
            or a module object.
        trusted: the user trusts the run's code.
        words: how the user vouches, for the message.

    Raises:
        ConfigError: ``named`` is not the run's network.
        UntrustedCodeError: ``recorded`` names a ``module:attr`` that the user neither named
            nor trusted; nothing of it was imported.
        InvalidNetworkError: the module cannot be imported or used, or an ``object:`` network
            was not given again.
    """
    if not is_user_network(recorded):
        if named is not None:
            raise ConfigError(
                f"{where} trained purerl's {recorded} network; a network is given again only "
                "for a run on a network of yours"
            )
        return None
    if recorded.startswith(OBJECT_PREFIX):
        if named is None or isinstance(named, str):
            raise torso.object_needed(recorded)
        # The class's module may differ: one defined in a notebook lives in __main__.
        given = torso.object_id(named)
        if given.rpartition(".")[2] != recorded.rpartition(".")[2]:
            raise ConfigError(f"{where} trained with the network {recorded}, not {given}")
        return named
    if named is not None and named != recorded:
        raise ConfigError(
            f"{where} trained with the network {recorded}, not {named}: a run is evaluated "
            "and resumed with its own network"
        )
    if named is None and not trusted:
        raise UntrustedCodeError(
            f"{where} records the network {recorded}, code that purerl would import and call: "
            f"if it is yours, name it again ({words.naming('network', recorded)}); if you "
            f"trust this run, pass {words.trust}"
        )
    return torso.resolve(recorded, search_cwd=named is not None)
