"""The command line shared by ``experiments/*.py``: parse, validate, train, write the run.

Exit codes: 0 done, 1 training failed (non-finite loss), 2 invalid arguments or an unusable
run directory or checkpoint, 130 / 143 stopped by SIGINT / SIGTERM after saving a checkpoint.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Generic, TypeVar

import jax
import numpy as np
import tyro

from purerl import checkpoint, envs, parallel
from purerl.algos import Algo
from purerl.config import CommonConfig, ConfigError
from purerl.envs.base import Environment
from purerl.extras import import_extra
from purerl.logging import JsonlSink, ProgressSink
from purerl.plots import write_trial_graphs
from purerl.rundir import (
    config_record,
    create_run_dir,
    default_run_dir,
    load_config,
    truncate_metrics,
    write_json,
)
from purerl.runtime import configure_jax, initialize_distributed, quiet_libraries
from purerl.tensorboard import TENSORBOARD_EXTRA, TensorBoardSink
from purerl.train import NonFiniteLossError, RunOptions, TrainResult, init_agents, train

C = TypeVar("C", bound=CommonConfig)

BuildAlgo = Callable[[Any, Environment], Algo]


@dataclasses.dataclass(frozen=True)
class Experiment(Generic[C]):
    """Algorithm configuration plus run options; all flags are top level."""

    algo: Annotated[C, tyro.conf.OmitArgPrefixes]
    run: Annotated[RunOptions, tyro.conf.OmitArgPrefixes] = RunOptions()
    preset: str | None = None
    """Named preset to start from (default: the preset of --env, if it has one)."""
    config: str | None = None
    """Start a new run from a saved config.json (or a run directory holding one); flags given
    beside it override single fields."""
    resume: str | None = None
    """Continue the run in this directory from its latest checkpoint, with its saved
    configuration. A live EnvPool simulator cannot be saved: it is reset on resume."""


@dataclasses.dataclass(frozen=True)
class Command:
    """What one experiment script trains."""

    algo_name: str
    config_cls: type
    build: BuildAlgo
    presets: dict[str, Any]
    description: str


def peek(argv: Sequence[str], flag: str) -> str | None:
    """The value given to ``flag`` in ``argv`` (``--flag value`` or ``--flag=value``)."""
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def base_config(command: Command, argv: Sequence[str]) -> Any:
    """The configuration flags apply to: a resumed or saved run's, a preset, or the defaults."""
    source = peek(argv, "--resume") or peek(argv, "--config")
    if source is not None:
        return load_config(Path(source), command.algo_name, command.config_cls)
    name = peek(argv, "--preset")
    if name is not None:
        if name not in command.presets:
            raise ConfigError(
                f"unknown preset {name!r}; presets: {', '.join(sorted(command.presets))}"
            )
        return command.presets[name]
    env_id = peek(argv, "--env") or command.config_cls().env
    return command.presets.get(env_id) or dataclasses.replace(command.config_cls(), env=env_id)


def preset_names(presets: dict[str, Any]) -> str:
    """Preset names for ``--help``, with the per-game Atari presets folded into one entry."""
    atari = [name for name in presets if name.endswith("-v5")]
    others = sorted(name for name in presets if not name.endswith("-v5"))
    return ", ".join(others + ([f"<Game>-v5 (all {len(atari)} Atari games)"] if atari else []))


def parse(command: Command, argv: Sequence[str]) -> Experiment:
    """Parses ``argv`` over the base configuration it selects."""
    base = base_config(command, argv)
    description = f"{command.description}\nPresets: {preset_names(command.presets)}."
    exp = tyro.cli(
        Experiment[command.config_cls],
        default=Experiment(base),
        args=list(argv),
        description=description,
    )
    if exp.resume is not None and exp.algo != base:
        changed = [
            f.name
            for f in dataclasses.fields(base)
            if getattr(base, f.name) != getattr(exp.algo, f.name)
        ]
        flags = ", ".join("--" + name.replace("_", "-") for name in changed)
        raise ConfigError(
            f"{flags} cannot change when resuming: a resumed run keeps its configuration "
            "(use --config to start a new run from it instead)"
        )
    return exp


def make_env(cfg: CommonConfig, num_envs: int | None = None) -> Environment:
    """The environment of ``cfg`` (``num_envs`` per agent, default ``cfg.num_envs``).

    Raises:
        ConfigError: an ``--env-options`` entry the environment does not take.
    """
    options = cfg.env_kwargs
    try:
        return envs.make(
            cfg.env,
            cfg.num_envs if num_envs is None else num_envs,
            normalize_obs=cfg.normalize_obs,
            seed=cfg.seed,
            num_seeds=cfg.num_seeds,
            **options,
        )
    except TypeError as err:
        if not options:
            raise
        raise ConfigError(f"--env-options {' '.join(cfg.env_options)}: {err}") from err
    except ValueError as err:
        if not options or isinstance(err, envs.UnknownEnvError):
            raise
        raise ConfigError(f"--env-options {' '.join(cfg.env_options)}: {err}") from err


def transient_fields(state_fields: Sequence[str], env: Environment, options: RunOptions):
    """State fields checkpoints leave out (see ``purerl.checkpoint``)."""
    transient = () if env.pure else ("env_state", "obs")
    if not options.checkpoint_buffer and "buffer" in state_fields:
        transient += ("buffer",)
    return transient


class StopOnSignal:
    """Turns the first SIGINT or SIGTERM into a stop request; a second SIGINT aborts at once."""

    def __init__(self):
        self.signum: int | None = None
        self.previous: dict[int, Any] = {}

    def __enter__(self) -> StopOnSignal:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.previous[signum] = signal.signal(signum, self.handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def handle(self, signum: int, frame: Any) -> None:
        if self.signum is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signum = signum
        print(
            f"\n{signal.Signals(signum).name}: saving a checkpoint after the current chunk "
            "(Ctrl-C again aborts without saving)",
            file=sys.stderr,
            flush=True,
        )

    def requested(self) -> bool:
        return self.signum is not None


@dataclasses.dataclass(frozen=True)
class Setup:
    """Everything a run needs, built and checked before anything is written."""

    cfg: Any
    options: RunOptions
    env: Environment
    algo: Algo
    devices: list
    placement: parallel.Placement | None
    identity: dict[str, Any]
    transient: tuple[str, ...]
    """State fields checkpoints leave out."""


def setup(algo_name: str, exp: Experiment, build: BuildAlgo) -> Setup:
    """Devices, environment and algorithm of a run; raises on bad input, writes nothing."""
    cfg, options = exp.algo, exp.run
    if options.distributed:
        initialize_distributed(
            options.coordinator_address, options.num_processes, options.process_id
        )
        if options.run_dir is None and exp.resume is None:
            raise ConfigError("--distributed needs --run-dir: every process must agree on it")
    devices = parallel.select_devices(options.device, options.num_devices)
    placement = None
    if len(devices) > 1 or options.distributed:
        placement = parallel.make_placement(devices, options.parallel, cfg.num_seeds, cfg.num_envs)
    data_parallel = placement is not None and placement.mode == "data"
    env = make_env(cfg, cfg.num_envs // placement.num_devices if data_parallel else None)
    if placement is not None and not env.pure:
        raise ConfigError(
            f"{cfg.env} runs on EnvPool, whose simulators live in this process: use one device "
            "(--num-devices 1), several seeds share its pool"
        )
    algo = build(cfg, env, axis_name=placement.axis_name if placement else None)
    # Field names only: traced without the device axis, which exists only inside shard_map.
    state_fields = jax.eval_shape(build(cfg, env).init, jax.random.key(0))._fields
    # Optional packages are checked before anything is written.
    if options.tensorboard:
        import_extra("tensorboardX", TENSORBOARD_EXTRA, "--tensorboard")
    if options.wandb_project:
        import_extra("wandb", "wandb", "--wandb-project")
    layout = {"mode": placement.mode, "devices": placement.num_devices} if placement else None
    identity = {"algo": algo_name, "config": checkpoint.config_dict(cfg), "placement": layout}
    print(f"devices: {placement.describe() if placement else devices[0]}", flush=True)
    transient = transient_fields(state_fields, env, options)
    return Setup(cfg, options, env, algo, devices, placement, identity, transient)


def open_run(
    algo_name: str, exp: Experiment, run: Setup
) -> tuple[Path, checkpoint.Snapshot | None]:
    """The run directory, created for a new run or restored from for a resumed one."""
    cfg, options = run.cfg, run.options
    if exp.resume is None:
        run_dir = Path(options.run_dir) if options.run_dir else default_run_dir(algo_name, cfg.env)
        if parallel.is_main_process():
            create_run_dir(run_dir)
            write_json(run_dir / "config.json", config_record(algo_name, cfg, options))
        return run_dir, None
    run_dir = Path(exp.resume)
    step = checkpoint.resolve_step(run_dir, "latest")
    fresh = init_agents(run.algo, [cfg.seed + i for i in range(cfg.num_seeds)], run.placement)
    start = checkpoint.restore(run_dir, step, fresh, run.identity)
    if start.updates_done < cfg.num_updates and parallel.is_main_process():
        truncate_metrics(run_dir / "metrics.jsonl", start.updates_done)
    return run_dir, start


def run_experiment(
    algo_name: str,
    exp: Experiment,
    build: BuildAlgo,
    stop: StopOnSignal | None = None,
    script: str | None = None,
) -> TrainResult:
    """Builds everything first (so bad input fails before anything is written), then trains."""
    run = setup(algo_name, exp, build)
    cfg = run.cfg
    with jax.default_device(None if run.placement else run.devices[0]):
        run_dir, start = open_run(algo_name, exp, run)
        if start is not None and start.updates_done >= cfg.num_updates:
            print(f"{run_dir} is already complete ({start.updates_done} updates); nothing to do")
            path = run_dir / "summary.json"
            summary = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
            final = np.asarray(summary.get("per_seed_final_return", []), dtype=float)
            return TrainResult(start.agents, summary, final)
        verb = (
            f"{cfg.total_timesteps:,} steps ({cfg.num_updates} updates)"
            if start is None
            else f"resuming at update {start.updates_done}"
        )
        print(f"{algo_name} on {cfg.env}: {cfg.num_seeds} seed(s), {verb} -> {run_dir}", flush=True)
        result = train_run(algo_name, run, run_dir, start, stop)
    finish(algo_name, run, run_dir, result, script)
    return result


def train_run(
    algo_name: str,
    run: Setup,
    run_dir: Path,
    start: checkpoint.Snapshot | None,
    stop: StopOnSignal | None,
) -> TrainResult:
    """Trains with the run's sinks (process 0 only) and checkpoints (every process)."""
    cfg, options = run.cfg, run.options
    frame_skip = run.env.spec.frame_skip
    sinks, progress = [], None
    if parallel.is_main_process():
        sinks = make_sinks(algo_name, cfg, options, run_dir, frame_skip, start)
        if options.progress:
            progress = ProgressSink(
                cfg.num_updates,
                cfg.env_steps_per_update,
                cfg.num_seeds,
                frame_skip,
                cfg.seed,
                history=None if start is None else start.history,
            )
            sinks.append(progress)
    checkpointer = None
    if options.checkpoints:
        checkpointer = checkpoint.Checkpointer(
            checkpoint.checkpoint_dir(run_dir),
            run.identity,
            options.keep_checkpoints,
            options.keep_best,
            run.transient,
        )
    stream = progress.on_stream if (progress is not None and options.stream) else None
    try:
        return train(
            run.algo,
            cfg,
            options,
            sinks,
            frame_skip,
            stream,
            checkpointer=checkpointer,
            start=start,
            should_stop=stop.requested if stop is not None else (lambda: False),
            placement=run.placement,
        )
    except jax.errors.JaxRuntimeError as err:
        if "RESOURCE_EXHAUSTED" in str(err) or "out of memory" in str(err).lower():
            raise ConfigError(out_of_memory_message(cfg, run.placement)) from err
        raise
    finally:
        if checkpointer is not None:
            checkpointer.close()


def out_of_memory_message(cfg: Any, placement: parallel.Placement | None) -> str:
    devices = placement.num_devices if placement else 1
    return (
        f"the device ran out of memory ({cfg.num_seeds} seed(s) x {cfg.num_envs} envs on "
        f"{devices} device(s)); lower --num-envs, --num-seeds or the minibatch size (raise "
        "--num-minibatches), or spread the work over more devices with --num-devices"
    )


def finish(
    algo_name: str, run: Setup, run_dir: Path, result: TrainResult, script: str | None
) -> None:
    """Writes the summary and learning curves (process 0) and says how a stopped run goes on."""
    cfg = run.cfg
    summary = {
        "algo": algo_name,
        "env": cfg.env,
        **result.summary,
        **parallel.memory_report(run.placement),
    }
    if result.interrupted:
        summary["interrupted"] = True
    if not parallel.is_main_process():
        return
    write_json(run_dir / "summary.json", summary)
    graphs = write_trial_graphs(run_dir, run.options.plot_window)
    print(final_line(summary, run_dir), flush=True)
    print("learning curves: " + ", ".join(str(path) for path in graphs), flush=True)
    if result.interrupted:
        how = f"python {script} --resume {run_dir}" if script else f"--resume {run_dir}"
        saved = (
            "checkpoint saved" if run.options.checkpoints else "no checkpoint (--no-checkpoints)"
        )
        print(
            f"stopped at update {summary['num_updates']} of {cfg.num_updates}; {saved}; "
            f"continue with: {how}",
            flush=True,
        )


def make_sinks(
    algo_name: str,
    cfg: Any,
    options: RunOptions,
    run_dir: Path,
    frame_skip: int,
    start: checkpoint.Snapshot | None,
) -> list:
    """The metrics file, and TensorBoard and W&B when asked for (the progress bar comes later)."""
    steps = cfg.env_steps_per_update
    sinks: list = [JsonlSink(run_dir / "metrics.jsonl", steps, frame_skip)]
    if options.tensorboard:
        first = 0 if start is None else start.updates_done
        sinks.append(TensorBoardSink(run_dir / "tensorboard", steps, frame_skip, first))
    if options.wandb_project:
        from purerl.wandb_sink import WandbSink

        record = config_record(algo_name, cfg, options)
        sinks.append(
            WandbSink(options.wandb_project, run_dir.name, record, steps, frame_skip, str(run_dir))
        )
    return sinks


def final_line(summary: dict[str, Any], run_dir: Path) -> str:
    mean, std = summary["final_mean_return"], summary["final_std_return"]
    ret = "no finished episode" if mean is None else f"{mean:.1f} +- {std:.1f}"
    return (
        f"final mean return {ret} over {summary['num_seeds']} seed(s) | "
        f"{summary['total_env_steps']:,} steps in {summary['wall_time_s']:.1f} s "
        f"(compile {summary['compile_time_s']:.1f} s, "
        f"{summary['steps_per_second']:,.0f} steps/s) | {run_dir}"
    )


def main(command: Command, argv: Sequence[str] | None = None, script: str | None = None) -> int:
    """Runs one experiment from the command line and returns the process exit code."""
    argv = sys.argv[1:] if argv is None else argv
    configure_jax()
    quiet_libraries()
    try:
        with StopOnSignal() as stop:
            exp = parse(command, argv)
            result = run_experiment(command.algo_name, exp, command.build, stop, script)
    except (ConfigError, envs.UnknownEnvError, checkpoint.CheckpointError, ImportError) as err:
        # ImportError: an optional backend that is not installed; its message names the extra.
        print(f"error: {err}", file=sys.stderr)
        return 2
    except NonFiniteLossError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if result.interrupted:
        return 128 + (stop.signum or signal.SIGINT)
    return 0
