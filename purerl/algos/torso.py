"""A torso of your own: the flax module a configuration's ``network`` names, found where an
algorithm is built.

``network`` names one of purerl's torsos (``mlp``; ``gru`` and ``lstm`` for PPO and PQN) or one of
the user's: a feed-forward flax module mapping observations ``[N, *obs_shape]`` to features
``[N, F]``, to which purerl adds its heads (``purerl.core.nets``; each network that needs a torso
gets its own copy, with its own parameters). On the command line it is ``module:attr``, a module
class or a function of no arguments returning a module, imported where the algorithm is built, as
an environment factory is (``purerl.envs.custom``); from Python it may also be the module itself,
whose run records ``object:<module>.<class>`` and needs the module again to be evaluated or
loaded. Reading a run imports nothing: ``purerl.run.trust`` finds a recorded ``module:attr``
only when the user names it again or trusts the run.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn

from purerl.config import MODULE_ATTR, OBJECT_PREFIX, ConfigError, is_user_network
from purerl.envs import custom

EXAMPLE = "mypackage.nets:Torso"


class InvalidNetworkError(ConfigError):
    """A network of the user's that purerl cannot find or use; the message says why."""


def object_id(module: Any) -> str:
    """The ``network`` a run on the module object ``module`` records.

    Raises:
        InvalidNetworkError: ``module`` is not a feed-forward flax module instance.
    """
    check_module(module, "network")
    cls = type(module)
    return f"{OBJECT_PREFIX}{cls.__module__}.{cls.__qualname__}"


def check_module(module: Any, name: str) -> nn.Module:
    """``module``, checked to be a flax module instance and not a recurrent cell (``name``: what
    gave it, for the message).

    Raises:
        InvalidNetworkError: otherwise.
    """
    if isinstance(module, type) and issubclass(module, nn.Module):
        raise InvalidNetworkError(
            f"{name} is the class {module.__name__}; give an instance ({module.__name__}())"
        )
    if not isinstance(module, nn.Module):
        raise InvalidNetworkError(
            f"{name} must give a flax linen module mapping observations to features, got "
            f"{type(module).__name__}"
        )
    if isinstance(module, nn.RNNCellBase | nn.RNN):
        raise InvalidNetworkError(
            f"{name} is a recurrent {type(module).__name__}: a torso of yours runs feed-forward "
            "(recurrent ones are not supported); --network gru or lstm adds purerl's cell to "
            "purerl's torso"
        )
    return module


def object_needed(network: str) -> InvalidNetworkError:
    """The error for a run whose network was a module object that was not given again."""
    return InvalidNetworkError(
        f"the network {network} was given to purerl as a module object, which purerl cannot "
        f"rebuild: pass it again (network=...), or train with --network module:attr ({EXAMPLE}) "
        "so that the command line finds it"
    )


def resolve(network: str, search_cwd: bool = True) -> nn.Module:
    """The module ``network`` (``module:attr``) names, imported now: the class made with no
    arguments, or what the function returns. ``search_cwd``: the module may also come from the
    current directory (a network the user typed), else from ``sys.path`` as it is.

    Raises:
        InvalidNetworkError: bad syntax, a module that cannot be imported, a missing attribute,
            or one that gives no flax module.
    """
    match = MODULE_ATTR.fullmatch(network)
    if match is None:
        raise InvalidNetworkError(f"network {network!r} is not module:attr, e.g. {EXAMPLE}")
    module_name, attr = match.groups()
    found: Any = custom.import_module(module_name, network, search_cwd, InvalidNetworkError)
    for part in attr.split("."):
        if not hasattr(found, part):
            raise InvalidNetworkError(f"{network}: module {module_name} has no attribute {attr}")
        found = getattr(found, part)
    if isinstance(found, nn.Module):
        return check_module(found, network)
    if not callable(found):
        raise InvalidNetworkError(
            f"{network}: {attr} is a {type(found).__name__}; name a flax module class or a "
            "function returning a module"
        )
    try:
        made = found()
    except (Exception, SystemExit) as err:
        raise InvalidNetworkError(f"{network}() raised {type(err).__name__}: {err}") from err
    return check_module(made, f"{network}()")


def network_of(cfg: Any) -> str:
    """``cfg.network``; ``mlp`` for an algorithm registered from outside purerl whose
    configuration offers no torso choice."""
    return getattr(cfg, "network", "mlp")


def find(cfg: Any, given: nn.Module | None = None) -> nn.Module | None:
    """The torso of the user's that ``cfg.network`` names: ``given`` (the module object, or the
    one the run layer found for a recorded run), else imported now (a ``module:attr`` the user
    named in this command or call); None for one of purerl's own.

    Raises:
        InvalidNetworkError: a network that cannot be found or used, or ``given`` for a
            configuration on one of purerl's torsos.
    """
    network = network_of(cfg)
    if not is_user_network(network):
        if given is not None:
            raise InvalidNetworkError(
                f"a network module was given, but the configuration's network is {network!r}: "
                "give the module as purerl.train's network=, which records it"
            )
        return None
    if given is not None:
        return check_module(given, network)
    if network.startswith(OBJECT_PREFIX):
        raise object_needed(network)
    return resolve(network)
