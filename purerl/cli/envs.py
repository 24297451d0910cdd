"""``purerl envs [PATTERN...]``: environment ids with their observation and action spaces.

Patterns filter ids and families by case-insensitive substring (``purerl envs minatar
snake``, ``purerl envs mujoco``). Spaces are
read from each environment as it is built; an EnvPool Atari game's action count is read from
its ROM, so it is shown when at most ``--atari-detail`` games are listed.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import textwrap
import warnings
from collections.abc import Sequence
from typing import Annotated

import tyro

from purerl.cli.parsing import parse
from purerl.config import ConfigError


@dataclasses.dataclass(frozen=True)
class EnvsArgs:
    patterns: Annotated[
        tuple[str, ...], tyro.conf.Positional, tyro.conf.arg(metavar="PATTERN")
    ] = ()
    """Show only ids (or families) containing one of these (case-insensitive)."""
    atari_detail: int = 10
    """Read the action counts of Atari games when at most this many are listed."""

    def __post_init__(self):
        if self.atari_detail < 0:
            raise ConfigError(f"--atari-detail must be non-negative, got {self.atari_detail}")


def describe_space(space) -> str:
    from purerl.core.env import Discrete

    if isinstance(space, Discrete):
        return f"Discrete({space.num_actions})"
    low, high = min(space.low), max(space.high)
    return f"Box({'x'.join(map(str, space.shape))}, [{low:g}, {high:g}])"


def describe_env(env_id: str, detail: bool) -> tuple[str, str]:
    """``(observation, actions)`` of one id, or why they could not be read."""
    from purerl import envs
    from purerl.envs import InvalidEnvError
    from purerl.envs.envpool import PREFIX, is_atari

    name = env_id.removeprefix(PREFIX)
    if is_atari(name) and importlib.util.find_spec("envpool") is None:
        return "-", "unavailable: needs pip install 'purerl[atari]'"
    if is_atari(name):
        obs = "4x84x84 uint8 (frame stack)"
        if not detail:
            return obs, "Discrete (per game: list fewer games)"
        try:
            import envpool
        except ImportError:
            return obs, "needs pip install 'purerl[atari]'"
        return obs, f"Discrete({int(envpool.make_spec(name).action_space.n)})"
    try:
        # A listing is no place for a library's notices (Gymnasium's "out of date" ids).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = envs.make(env_id, 1)
    except ImportError as err:
        return "-", f"unavailable: {shorten(str(err).splitlines()[0])}"
    except InvalidEnvError as err:  # purerl's own reason, without the id it starts with
        reason = str(err).removeprefix(f"{env_id}: ").splitlines()[0]
        return "-", f"unavailable: {shorten(reason)}"
    except ConfigError as err:  # one it cannot drive: the reason, shortened
        return "-", f"unavailable: {shorten(str(err).partition(': ')[2] or str(err))}"
    except Exception as err:  # a backend that cannot build here (e.g. a missing data set)
        detail = f"{type(err).__name__}: {str(err).splitlines()[0]}" if str(err) else ""
        return "-", f"unavailable: {shorten(detail or type(err).__name__)}"
    if hasattr(env, "close"):
        env.close()
    spec = env.spec
    obs = f"{'x'.join(map(str, spec.obs_shape)) or 'scalar'} {spec.obs_dtype}"
    if spec.structure is not None:
        obs = spec.structure.describe()
    return obs, describe_space(spec.action_space)


def shorten(text: str, width: int = 90) -> str:
    """``text`` cut at a word boundary to at most ``width`` characters, marked where cut."""
    return textwrap.shorten(text, width, placeholder=" ...")


def main(argv: Sequence[str], prog: str) -> int:
    args = parse(EnvsArgs, argv, prog, __doc__)
    from purerl import envs
    from purerl.envs.envpool import PREFIX, is_atari
    from purerl.envs.mujoco import is_mujoco

    def short_id_exists(name: str) -> bool:
        return is_atari(name) or is_mujoco(name)

    patterns = [p.lower() for p in args.patterns]

    def wanted(env_id: str) -> bool:
        described = f"{env_id} {envs.lookup(env_id).family}".lower()
        return not patterns or any(p in described for p in patterns)

    # EnvPool's Atari games and MuJoCo tasks answer to <id> and envpool/<id>: list the short ids.
    ids = [
        env_id
        for env_id in envs.list_envs()
        if not (env_id.startswith(PREFIX) and short_id_exists(env_id.removeprefix(PREFIX)))
        and wanted(env_id)
    ]
    if not ids:
        raise ConfigError(f"no environment id or family contains {' or '.join(args.patterns)}")
    detail = sum(is_atari(i) for i in ids) <= args.atari_detail
    print("| id | family | observation | actions |\n|---|---|---|---|")
    for env_id in ids:
        obs, actions = describe_env(env_id, detail)
        print(f"| {env_id} | {envs.lookup(env_id).family} | {obs} | {actions} |", flush=True)
    print(f"\n{len(ids)} ids; Atari games and MuJoCo tasks also answer to {PREFIX}<id>.")
    return 0
