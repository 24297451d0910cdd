"""Optional dependencies (pip extras), imported only when a feature that needs them is used."""

from __future__ import annotations

import importlib
from types import ModuleType

from purerl.config import ConfigError


class MissingExtraError(ConfigError, ImportError):
    """An optional package a requested feature needs is not installed.

    A ``ConfigError`` so the command line reports it as invalid input (one line, exit 2), and an
    ``ImportError`` for library callers that guard imports.
    """


def import_extra(module: str, requirement: str, feature: str) -> ModuleType:
    """Imports ``module`` or raises ``MissingExtraError`` with the pip command that installs it.

    Args:
        module: dotted module name, e.g. ``"tensorboardX"``.
        requirement: what to pip install for it, e.g. ``"'purerl[tensorboard]'"``.
        feature: what needs it, for the message, e.g. ``"--tensorboard"``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtraError(
            f"{feature} needs the optional package {module.split('.')[0]}, which is not "
            f"installed; install it with: pip install {requirement}"
        ) from err
