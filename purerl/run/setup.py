"""A run's set-up: what it asks for (``TrainRequest``) and everything built and checked from
that before anything is written (``prepare`` -> ``Setup``): the devices, the environment and the
algorithm, the state's size against the memory, optional packages, the identity its checkpoints
carry, and the evaluation ``--eval-every`` asks for.

Errors the user can cause raise ``ConfigError`` (or a subclass) with one line saying what to do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax

from purerl import envs
from purerl.algos import Algo, AlgoSpec
from purerl.config import ConfigError, flag
from purerl.core import parallel
from purerl.core.env import Environment
from purerl.core.loop import Evaluation
from purerl.core.program import init_inputs, init_program
from purerl.core.report import Sink
from purerl.extras import import_extra
from purerl.options import RESUMABLE, RunOptions
from purerl.run import rundir
from purerl.run.capacity import check_memory, tree_bytes
from purerl.run.sinks import warn
from purerl.runtime import initialize_distributed


@dataclasses.dataclass(frozen=True)
class TrainRequest:
    """A run to carry out: a new one, or the continuation of ``resume``."""

    spec: AlgoSpec
    cfg: Any
    options: RunOptions
    resume: Path | None = None
    resume_from: int | None = None
    """Continue from this checkpoint instead of the newest readable one."""
    option_changes: dict[str, tuple[Any, Any]] = dataclasses.field(default_factory=dict)
    """Run options a resume changes: ``{field: (saved, given)}``."""
    callbacks: tuple[Any, ...] = ()
    """Functions called with a ``purerl.run.control.Report`` after every chunk; True stops."""
    budget_from: int | None = None
    """The run's ``total_timesteps`` before this resume changed it to ``cfg.total_timesteps``
    (None: unchanged). Budget-dependent schedules follow the new budget."""
    command: str | None = None
    """The command that trains this algorithm (``purerl train ppo``), for the messages that
    say how to resume."""
    in_memory: bool = False
    """Train without a run directory: nothing is written, nothing can be resumed."""
    env: Any = None
    """An environment object (or ``(env, params)``) to train on, built instead of ``cfg.env``
    (which names it, ``object:<module>.<class>``), or the factory ``cfg.env`` names, imported
    because the user vouched for it (``purerl.run.trust``)."""
    network: Any = None
    """The user's flax module ``cfg.network`` names: given as an object (``object:<module>.
    <class>``), or a recorded ``module:attr`` imported because the user vouched for it; None:
    ``AlgoSpec.make`` finds it (``purerl.algos.torso``)."""

    def resume_hint(self, run_dir: Path) -> str:
        return f"{self.command or 'purerl train ' + self.spec.name} --resume {run_dir}"


@dataclasses.dataclass(frozen=True)
class Setup:
    """Everything a run needs, built and checked before anything is written."""

    request: TrainRequest
    env: Environment
    algo: Algo
    local_algo: Algo
    """``algo`` built without the device axis (``algo`` itself unless data-parallel): what the
    state's shapes and the evaluation's policy are taken from."""
    devices: list
    placement: parallel.Placement | None
    identity: rundir.RunIdentity
    """What a checkpoint must carry to be this run's: algorithm, configuration, device layout."""
    transient: tuple[str, ...]
    """State fields checkpoints leave out."""
    state_bytes: dict[str, int]
    """Bytes of one seed's state, by state field (as ``init`` builds it)."""

    @property
    def cfg(self) -> Any:
        return self.request.cfg

    @property
    def options(self) -> RunOptions:
        return self.request.options


def merge_resume_options(saved: RunOptions, given: RunOptions) -> dict[str, tuple[Any, Any]]:
    """The run options a resume changes, checked: only ``RESUMABLE`` ones may.

    Raises:
        ConfigError: naming the options that cannot change.
    """
    changes = {
        f.name: (getattr(saved, f.name), getattr(given, f.name))
        for f in dataclasses.fields(saved)
        if getattr(saved, f.name) != getattr(given, f.name)
    }
    fixed = sorted(name for name in changes if name not in RESUMABLE)
    if fixed:
        raise ConfigError(
            f"{', '.join(flag(n) for n in fixed)} cannot change when resuming: the run keeps "
            f"them (they may: {', '.join(flag(n) for n in sorted(RESUMABLE))})"
        )
    return changes


def prepare(request: TrainRequest) -> Setup:
    """Devices, environment and algorithm of a run; raises on bad input, writes nothing."""
    cfg, options, spec = request.cfg, request.options, request.spec
    if options.distributed:
        initialize_distributed(
            options.coordinator_address, options.num_processes, options.process_id
        )
        if options.run_dir is None and request.resume is None:
            raise ConfigError("--distributed needs --run-dir: every process must agree on it")
    devices = parallel.select_devices(options.device, options.num_devices)
    placement = None
    if len(devices) > 1 or options.distributed:
        placement = parallel.make_placement(devices, options.parallel, cfg.num_seeds, cfg.num_envs)
    data_parallel = placement is not None and placement.mode == "data"
    num_envs = cfg.num_envs // placement.num_devices if data_parallel else None
    axis_name = placement.axis_name if placement else None
    env, algo = spec.make(cfg, request.env, num_envs, axis_name, request.network)
    if placement is not None and not env.pure:
        raise ConfigError(
            f"{cfg.env} runs on EnvPool, whose simulators live in this process: use one device "
            "(--num-devices 1), several seeds share its pool"
        )
    # The device axis exists only inside shard_map: the state's shapes are traced, and the
    # evaluation's policy acts, without it.
    local_algo = algo
    if axis_name is not None:
        local_algo = spec.make(cfg, request.env, num_envs, network=request.network).algo
    shapes = agent_state_shapes(local_algo, cfg, placement)
    state_bytes = {name: tree_bytes(getattr(shapes, name)) for name in shapes._fields}
    check_memory(cfg, devices[0], placement, state_bytes)
    if options.tensorboard:
        import_extra("tensorboardX", "'purerl[tensorboard]'", "--tensorboard")
    if options.wandb_project:
        import_extra("wandb", "'purerl[wandb]'", "--wandb-project")
    layout = {"mode": placement.mode, "devices": placement.num_devices} if placement else None
    identity = rundir.run_identity(spec.name, cfg, layout)
    transient = () if env.pure else ("env_state", "obs")
    transient += tuple(f for f in options.excluded_state() if f in state_bytes)
    return Setup(
        request, env, algo, local_algo, devices, placement, identity, transient, state_bytes
    )


def agent_state_shapes(algo: Algo, cfg: Any, placement: parallel.Placement | None) -> Any:
    """The shapes of one agent's state. On one device they come from tracing the run's own
    initialisation program, which the loop then finds traced already."""
    if placement is not None:
        return jax.eval_shape(algo.init, jax.random.key(0))
    seeds = [cfg.seed + i for i in range(cfg.num_seeds)]
    stacked = init_program(algo, None).trace(init_inputs(algo, seeds, None)).out_info.state
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), stacked)


def cpu_split_hint(setup: Setup) -> str | None:
    """A tip for several seeds on one CPU device of a many-core CPU, the user not having chosen
    the devices: one device per core runs their programs side by side."""
    cfg, options = setup.cfg, setup.request.options
    if setup.placement or setup.devices[0].platform != "cpu" or not setup.env.pure:
        return None
    if options.num_devices is not None or options.device != "auto":
        return None
    split = parallel.cpu_seed_split(cfg.num_seeds)
    if split == 1:
        return None
    return (
        f"tip: --num-devices {split} splits the {cfg.num_seeds} seeds over {split} CPU devices, "
        "one per core, so that their programs run side by side (docs/performance.md)"
    )


def describe(setup: Setup) -> str:
    """What a run will do, in one line (``--dry-run`` prints it)."""
    cfg = setup.cfg
    where = setup.placement.describe() if setup.placement else str(setup.devices[0])
    frames = setup.env.spec.frame_skip
    budget = f"{cfg.num_updates * cfg.env_steps_per_update:,} steps per seed"
    if frames > 1:
        budget += f" ({cfg.num_updates * cfg.env_steps_per_update * frames:,} frames)"
    return (
        f"{setup.request.spec.name} on {cfg.env}: {cfg.num_seeds} seed(s), {budget} in "
        f"{cfg.num_updates} updates, on {where}"
    )


def make_evaluation(setup: Setup, sinks: Sequence[Sink] = ()) -> Evaluation | None:
    """The evaluation ``--eval-every`` asks for: ``--eval-episodes`` fresh environments per seed,
    built as the training ones are, played by the greedy policy (``run.evaluate``)."""
    options, cfg = setup.options, setup.cfg
    if not options.eval_every:
        return None
    from purerl.run.evaluate import make_evaluation as evaluation_program

    if options.eval_every > cfg.num_updates:
        warn(
            sinks,
            f"--eval-every {options.eval_every} is more than the run's {cfg.num_updates} "
            "updates: it will not evaluate",
        )
    env = envs.from_config(cfg, options.eval_episodes, env=setup.request.env)
    # The policy of the algorithm built without the device axis: the evaluation runs outside
    # the data-parallel program, on the first replica's agents.
    replicated = setup.placement is not None and setup.placement.mode == "data"
    program = evaluation_program(setup.local_algo, env, replicated=replicated)
    return Evaluation(options.eval_every, program)
