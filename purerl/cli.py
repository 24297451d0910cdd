"""The command line shared by ``experiments/*.py``: parse, validate, train, write the run.

Exit codes: 0 done, 1 training failed (non-finite loss), 2 invalid arguments.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Generic, TypeVar

import tyro

from purerl import envs
from purerl.algos import Algo
from purerl.config import CommonConfig, ConfigError
from purerl.envs.base import Environment
from purerl.logging import JsonlSink, ProgressSink
from purerl.rundir import config_record, create_run_dir, default_run_dir, write_json
from purerl.runtime import configure_jax
from purerl.train import NonFiniteLossError, RunOptions, TrainResult, train

C = TypeVar("C", bound=CommonConfig)

BuildAlgo = Callable[[Any, Environment], Algo]


@dataclasses.dataclass(frozen=True)
class Experiment(Generic[C]):
    """Algorithm configuration plus run options; all flags are top level."""

    algo: Annotated[C, tyro.conf.OmitArgPrefixes]
    run: Annotated[RunOptions, tyro.conf.OmitArgPrefixes] = RunOptions()


def peek_env(argv: Sequence[str], default: str) -> str:
    """The value of ``--env`` in ``argv`` (before full parsing picks the preset)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--env", default=default)
    known, _ = parser.parse_known_args(list(argv))
    return known.env


def parse(
    config_cls: type[C], presets: dict[str, C], argv: Sequence[str], description: str
) -> Experiment[C]:
    """Parses ``argv`` over the preset for its ``--env`` (generic defaults without one)."""
    env_id = peek_env(argv, config_cls().env)
    default = presets.get(env_id) or dataclasses.replace(config_cls(), env=env_id)
    return tyro.cli(
        Experiment[config_cls],
        default=Experiment(default),
        args=list(argv),
        description=description,
    )


def make_env(cfg: CommonConfig) -> Environment:
    return envs.make(cfg.env, cfg.num_envs, normalize_obs=cfg.normalize_obs)


def run_experiment(algo_name: str, exp: Experiment, build: BuildAlgo) -> TrainResult:
    """Builds everything first (so bad input fails before anything is written), then trains."""
    cfg, options = exp.algo, exp.run
    env = make_env(cfg)
    algo = build(cfg, env)
    run_dir = create_run_dir(
        Path(options.run_dir) if options.run_dir else default_run_dir(algo_name, cfg.env)
    )
    write_json(run_dir / "config.json", config_record(algo_name, cfg, options))
    frame_skip = env.spec.frame_skip
    sinks: list = [JsonlSink(run_dir / "metrics.jsonl", cfg.env_steps_per_update, frame_skip)]
    progress = None
    if options.progress:
        progress = ProgressSink(
            cfg.num_updates, cfg.env_steps_per_update, cfg.num_seeds, frame_skip, cfg.seed
        )
        sinks.append(progress)
    print(
        f"{algo_name} on {cfg.env}: {cfg.num_seeds} seed(s) x {cfg.total_timesteps:,} steps "
        f"({cfg.num_updates} updates) -> {run_dir}",
        flush=True,
    )
    stream = progress.on_stream if (progress is not None and options.stream) else None
    result = train(algo, cfg, options, sinks, frame_skip, stream)
    summary = {"algo": algo_name, "env": cfg.env, **result.summary}
    write_json(run_dir / "summary.json", summary)
    print(final_line(summary, run_dir), flush=True)
    return result


def final_line(summary: dict[str, Any], run_dir: Path) -> str:
    mean, std = summary["final_mean_return"], summary["final_std_return"]
    ret = "no finished episode" if mean is None else f"{mean:.1f} +- {std:.1f}"
    return (
        f"final mean return {ret} over {summary['num_seeds']} seed(s) | "
        f"{summary['total_env_steps']:,} steps in {summary['wall_time_s']:.1f} s "
        f"(compile {summary['compile_time_s']:.1f} s, "
        f"{summary['steps_per_second']:,.0f} steps/s) | {run_dir}"
    )


def main(
    algo_name: str,
    config_cls: type[C],
    build: BuildAlgo,
    presets: dict[str, C],
    description: str,
    argv: Sequence[str] | None = None,
) -> int:
    """Runs one experiment from the command line and returns the process exit code."""
    argv = sys.argv[1:] if argv is None else argv
    configure_jax()
    try:
        exp = parse(config_cls, presets, argv, description)
        run_experiment(algo_name, exp, build)
    except (ConfigError, envs.UnknownEnvError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except NonFiniteLossError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0
