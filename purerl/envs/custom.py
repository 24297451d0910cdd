"""Your own environments: objects, and ``module:factory`` strings naming a function that
returns one.

An environment is any object of the gymnax interface (``purerl.envs.gymnax``: ``reset``,
``step``, ``observation_space``, ``action_space``, ``default_params``), adapted by the code that
adapts gymnax's own environments, an object of Jumanji's timestep interface (``reset``, ``step``,
``action_spec``: ``purerl.envs.timestep``), adapted as Jumanji's own are, or an object of purerl's
own ``Environment`` interface (``purerl.core.env``: a single, pure, auto-resetting environment).
An ``(env, params)`` pair trains ``env`` with those parameters instead of its ``default_params``.

A factory string (``--env mypackage.envs:make_env``) that the user names is imported, and its
factory called with no arguments, where the environment is built. The module is looked up on
``sys.path`` and then in the current directory, which is on ``sys.path`` only while the module is
imported. A run records the string; reading the run imports nothing: ``purerl eval``,
``--resume``, ``--config`` and ``purerl.load`` build its environment from a ``Factory`` that the
run layer resolves only when the user names the factory again or trusts the run
(``purerl/run/trust.py``), the latter from ``sys.path`` as it is. An object has no such name: its
run records ``object:<module>.<class>``, and evaluating or loading that run needs the object again
(``purerl.load(run, env=obj)``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import jax

from purerl.config import MODULE_ATTR, OBJECT_PREFIX
from purerl.core.env import Environment, EnvSpec, InvalidEnvError, Step

EXAMPLE = "mypackage.envs:make_env"
INTERFACE = ("reset", "step", "observation_space", "action_space")


def is_factory_id(env_id: str) -> bool:
    """Whether ``env_id`` names a factory (has a colon) rather than a registered id."""
    return ":" in env_id and not is_object_id(env_id)


def is_object_id(env_id: str) -> bool:
    return env_id.startswith(OBJECT_PREFIX)


def object_id(source: Any) -> str:
    """The id a run on the environment object ``source`` (or ``(env, params)``) records.

    Raises:
        InvalidEnvError: ``source`` is not an environment.
    """
    from purerl.envs import gymnasium_env

    if gymnasium_env.is_gymnasium_source(source):
        return OBJECT_PREFIX + gymnasium_env.object_name(source)
    env = split(source)[0]
    if not (is_purerl_env(env) or all(hasattr(env, name) for name in ("reset", "step"))):
        name = getattr(env, "__name__", "factory")
        hint = f" (pass what it returns: env={name}())" if callable(env) else ""
        raise InvalidEnvError(
            f"env takes an environment id, a module:factory string ({EXAMPLE}) or an environment "
            f"object with reset and step; got {type(env).__name__}{hint}"
        )
    cls = type(env)
    return f"{OBJECT_PREFIX}{cls.__module__}.{cls.__qualname__}"


def object_needed(env_id: str) -> InvalidEnvError:
    """The error for a run whose environment was an object that was not given again."""
    return InvalidEnvError(
        f"{env_id} was given to purerl as an object, which purerl cannot rebuild: pass it again "
        f"(purerl.load(run_dir, env=obj)), or train with --env module:factory ({EXAMPLE}) so "
        "that the command line finds it"
    )


def split(source: Any) -> tuple[Any, Any]:
    """``(env, params)`` of ``source``; params None where ``source`` is the environment alone."""
    if isinstance(source, tuple) and len(source) == 2 and hasattr(source[0], "step"):
        return source[0], source[1]
    return source, None


@dataclasses.dataclass(frozen=True)
class Factory:
    """A ``module:factory`` string and the function it names, imported already: what builds a
    recorded run's environment once the user has vouched for it (``envs.make`` takes it)."""

    env_id: str
    make: Callable[[], Any]


def resolve(env_id: str, search_cwd: bool = True) -> Factory:
    """``env_id``'s factory, imported now (``load_factory``)."""
    return Factory(env_id, load_factory(env_id, search_cwd))


def load_factory(env_id: str, search_cwd: bool = True) -> Callable[[], Any]:
    """The function ``env_id`` (``module:factory``) names, imported; ``search_cwd``: the module
    may also come from the current directory (a factory the user typed), else from ``sys.path``
    as it is.

    Raises:
        InvalidEnvError: bad syntax, a module that cannot be imported, a missing attribute, or
            one that is not callable.
    """
    match = MODULE_ATTR.fullmatch(env_id)
    if match is None:
        raise InvalidEnvError(
            f"environment {env_id!r} is neither a registered id nor module:factory, e.g. {EXAMPLE} "
            "(`purerl envs` lists the ids)"
        )
    module_name, attr = match.groups()
    module = import_module(module_name, env_id, search_cwd)
    factory: Any = module
    for part in attr.split("."):
        if not hasattr(factory, part):
            raise InvalidEnvError(f"{env_id}: module {module_name} has no attribute {attr}")
        factory = getattr(factory, part)
    if not callable(factory):
        raise InvalidEnvError(
            f"{env_id}: {attr} is not callable ({type(factory).__name__}); name a function "
            "returning the environment"
        )
    return factory


USER_MODULES: set[str] = set()
"""Modules of the user's this process imported (environments, networks): their code may count
on the interpreter's usual exit (``purerl.cli.exit_now`` is skipped then)."""


def import_module(
    name: str, env_id: str, search_cwd: bool = True, error: type[Exception] = InvalidEnvError
) -> Any:
    """Imports ``name`` for ``env_id`` (a ``module:attr`` naming it); with ``search_cwd``, from
    the current directory too (the console script's ``sys.path`` lacks it, ``python -m
    purerl``'s has it). A failure raises ``error``, one line naming ``env_id``."""
    try:
        with current_directory_importable(search_cwd):
            module = importlib.import_module(name)
        USER_MODULES.add(name)
        return module
    except ModuleNotFoundError as err:
        if err.name is not None and (name + ".").startswith(err.name + "."):
            where = "put its directory on PYTHONPATH" + (" or run from it" if search_cwd else "")
            raise error(f"{env_id}: no module named {err.name!r}; {where}") from None
        raise error(f"{env_id}: importing {name} failed: {err}") from err
    except (Exception, SystemExit) as err:
        raise error(f"{env_id}: importing {name} raised {type(err).__name__}: {err}") from err


@contextlib.contextmanager
def current_directory_importable(search_cwd: bool) -> Iterator[None]:
    """The current directory last on ``sys.path`` while a module is imported, and off it again
    afterwards: whatever directory happens to be current never stays importable for the rest of
    the process."""
    cwd = os.getcwd()
    added = search_cwd and cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.append(cwd)
    try:
        yield
    finally:
        if added and cwd in sys.path:
            del sys.path[len(sys.path) - 1 - sys.path[::-1].index(cwd)]


def factory_builder(env_id: str) -> Callable[..., Environment]:
    """``build(env_id, num_envs, **options)`` for a factory string, its factory imported now."""
    return functools.partial(build_from_factory, load_factory(env_id))


def build_from_factory(
    factory: Callable[[], Any], env_id: str, num_envs: int | None, **options: Any
) -> Environment:
    """Calls ``factory()`` and adapts what it returns."""
    try:
        made = factory()
    except InvalidEnvError:
        raise
    except SystemExit as err:  # sys.exit inside a factory must not end the command silently
        raise InvalidEnvError(
            f"{env_id}() called sys.exit({err.code!r}) instead of returning an environment"
        ) from err
    except Exception as err:
        raise InvalidEnvError(f"{env_id}() raised {type(err).__name__}: {err}") from err
    return adapt(made, env_id, **options)


def build_from_object(source: Any, env_id: str, num_envs: int | None, **options: Any):
    return adapt(source, env_id, **options)


def adapt(source: Any, env_id: str, **options: Any) -> Environment:
    """A single auto-resetting environment of purerl's interface from ``source``.

    Raises:
        InvalidEnvError: ``source`` follows neither interface, or its functions return values
            purerl cannot use (found by tracing them, nothing runs).
        ValueError: ``options`` that its parameters do not take.
    """
    from purerl.envs import timestep
    from purerl.envs.gymnax import adapt_gymnax
    from purerl.envs.wrappers import AutoReset

    env, params = split(source)
    if is_purerl_env(env) or timestep.is_timestep_env(env):
        kind = "purerl Environment" if is_purerl_env(env) else "timestep environment"
        if params is not None or options:
            raise InvalidEnvError(
                f"{env_id}: a {kind} keeps its own parameters; give it alone, without params or "
                "--env-options"
            )
        if timestep.is_timestep_env(env):
            return AutoReset(timestep.adapt_own(env, env_id))
        check_purerl_env(env, env_id)
        return env
    missing = [name for name in INTERFACE if not callable(getattr(env, name, None))]
    if params is None and not hasattr(env, "default_params"):
        missing.append("default_params")
    if missing:
        raise InvalidEnvError(
            f"{env_id}: {type(env).__name__} has no {', '.join(missing)}; an environment follows "
            "the gymnax interface (reset, step, observation_space, action_space, default_params),"
            " Jumanji's (reset, step, action_spec) or purerl's Environment (spec, pure, reset, "
            "step, default_params)"
        )
    return adapt_gymnax(env, env.default_params if params is None else params, env_id, **options)


def is_purerl_env(env: Any) -> bool:
    return isinstance(getattr(env, "spec", None), EnvSpec) and hasattr(env, "pure")


def check_purerl_env(env: Any, env_id: str) -> None:
    """Checks an environment of purerl's own interface by tracing ``reset`` and ``step``."""
    from purerl.core.env import Discrete, action_dtype
    from purerl.envs.gymnax import check_obs, traced

    spec, name = env.spec, f"{env_id}: {type(env).__name__}"
    if spec.num_envs is not None or not env.pure:
        raise InvalidEnvError(
            f"{name} must be one pure environment (spec.num_envs None, pure True): purerl "
            "vectorises it with jax.vmap"
        )
    params = env.default_params
    key = jax.eval_shape(jax.random.key, 0)
    reset = traced(name + ".reset", lambda k: env.reset(k, params), key)
    if not isinstance(reset, tuple | list) or len(reset) != 2:
        raise InvalidEnvError(f"{name}.reset must return (state, obs)")
    check_obs(name + ".reset", reset[1], spec)
    space = spec.action_space
    shape = () if isinstance(space, Discrete) else space.shape
    action = jax.ShapeDtypeStruct(shape, action_dtype(space))
    out = traced(name + ".step", lambda k, s, a: env.step(k, s, a, params), key, reset[0], action)
    if not isinstance(out, tuple | list) or len(out) != 2 or not isinstance(out[1], Step):
        raise InvalidEnvError(f"{name}.step must return (state, purerl.envs.Step)")
    check_obs(name + ".step", out[1].obs, spec)
