"""What a run directory's recorded environment may run: nothing, unless the user says so.

Reading a run is parsing data, so opening a run someone else made (evaluating it, loading its
policy, resuming it, starting a new run from its configuration) is as safe as opening a data
file. A run's ``env`` may name a ``module:factory``, code that building the environment imports
and calls. ``purerl eval``, ``purerl train --resume`` and ``--config`` and ``purerl.load`` run
it only when the user names the same factory again in this command or call (``--env
module:factory``, ``env="module:factory"``: their own code, found as training finds it, the
current directory included) or says they trust the run (``--trust-run-code``,
``trust_run_code=True``: the module comes from ``sys.path`` as it is, never from the run's or
the current directory). Registered ids run nothing of the run's choosing, and ``object:`` ids
need the object again.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from purerl.config import ConfigError
from purerl.envs import custom


class UntrustedCodeError(ConfigError):
    """A run's configuration names code (a ``module:factory``) that the user has neither named
    again nor trusted; nothing of it was imported."""


@dataclasses.dataclass(frozen=True)
class Words:
    """How a user vouches for a run's factory where they are (the command line, Python)."""

    name_again: str
    """Naming the factory again; ``{}`` stands for it."""
    trust: str
    """Trusting the run."""


COMMAND = Words("--env {}", "--trust-run-code")
PYTHON = Words("env={!r}", "trust_run_code=True")

TRUST_HELP = (
    "Import and call the module:factory environment that the run's config.json names, from "
    "sys.path as it is (PYTHONPATH and installed packages; never the run's directory or the "
    "current one). Only for runs you trust: that code runs with your permissions. Without it, a "
    "run on a factory needs --env naming the same factory again; registered environment ids "
    "need neither."
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
            f"and call: if it is yours, name it again ({words.name_again.format(recorded)}); if "
            f"you trust this run, pass {words.trust}"
        )
    return custom.resolve(recorded, search_cwd=named is not None)
