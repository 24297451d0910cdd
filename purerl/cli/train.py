"""``purerl train <algorithm>``: parse and check a run's configuration, then carry it out.

The configuration flags apply to starts in this order: ``--resume DIR`` (the run's saved
configuration and run options), ``--config FILE`` (a saved configuration, for a new run),
``--preset NAME``, the preset of ``--env``, the algorithm's defaults. Flags override single
fields. A resumed run keeps its configuration; of its run options only those in
``purerl.options.RESUMABLE`` may be given again, and the change is recorded in
``resumes.jsonl``. A saved configuration on a ``module:factory`` environment runs that code only
when ``--env`` names the factory again or ``--trust-run-code`` is given, and one with a
``module:attr`` network only when ``--network`` names it again or ``--trust-run-code`` is given
(``purerl.run.trust``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import tyro

from purerl import algos
from purerl.algos import AlgoSpec, preset_names
from purerl.algos.torso import network_of
from purerl.cli.parsing import UsageError, parse, peek, wrap_lines
from purerl.config import ConfigError, flag
from purerl.options import hint, options_for
from purerl.run import rundir
from purerl.run.session import run as run_session
from purerl.run.setup import TrainRequest, cpu_split_hint, merge_resume_options, prepare
from purerl.run.setup import describe as describe_setup
from purerl.run.signals import StopOnSignal
from purerl.run.sinks import ConsoleSink
from purerl.run.trust import TRUST_HELP, recorded_env, recorded_network
from purerl.runtime import enable_compilation_cache


@dataclasses.dataclass(frozen=True, kw_only=True)
class Sources:
    """Where a run's configuration comes from, besides the flags."""

    preset: Annotated[str | None, hint("the preset of --env, if it has one", "NAME")] = None
    """Named preset to start from."""
    config: Annotated[str | None, hint("none", "PATH")] = None
    """Start a new run from a saved config.json (or a run directory holding one); flags beside
    it override single fields. A configuration on a module:factory environment needs --env
    naming the factory again, one with a module:attr network --network naming it again, or
    --trust-run-code."""
    resume: Annotated[str | None, hint("none", "DIR")] = None
    """Continue the run in this directory from its newest readable checkpoint, with its saved
    configuration and run options; --total-timesteps may extend it, a finished run too. A
    simulator outside JAX (EnvPool, Gymnasium) cannot be saved: it starts fresh episodes. A run
    on a module:factory environment needs --env naming the factory again, one with a
    module:attr network --network naming it again, or --trust-run-code."""
    resume_from: Annotated[int | None, hint("the newest readable", "UPDATE")] = None
    """With --resume: the checkpoint (its update count) to continue from."""
    trust_run_code: Annotated[
        bool, tyro.conf.arg(help="With --resume or --config. " + TRUST_HELP)
    ] = False
    dry_run: bool = False
    """Check the configuration, devices and environment, print what the run would do and the
    resolved configuration, and write nothing."""


@functools.cache
def args_class(spec: AlgoSpec, header: str) -> type:
    """The parsed arguments of ``purerl train <spec.name>``: sources, algorithm configuration
    and run options, all flags at the top level."""
    return dataclasses.make_dataclass(
        f"{spec.name.upper()}TrainArgs",
        [
            (
                "algo",
                Annotated[spec.config_cls, tyro.conf.OmitArgPrefixes, tyro.conf.arg(help=header)],
                dataclasses.field(default=spec.config_cls()),
            ),
            (
                "run",
                Annotated[options_for(spec), tyro.conf.OmitArgPrefixes],
                dataclasses.field(default=options_for(spec)()),
            ),
        ],
        bases=(Sources,),
        frozen=True,
        kw_only=True,
    )


def base(spec: AlgoSpec, argv: Sequence[str]) -> tuple[Any, Any, str]:
    """The configuration and run options flags apply to, and the help header naming them."""
    resume, config = peek(argv, "--resume"), peek(argv, "--config")
    if resume is not None and config is not None:
        raise ConfigError("--resume and --config exclude each other: a resumed run keeps its own")
    source = resume or config
    if source is not None:
        record = rundir.read_config(Path(source))
        if record.algo != spec.name:
            raise ConfigError(
                f"{source} holds a {record.algo} run, not {spec.name}; use: purerl train "
                f"{record.algo} {'--resume' if resume else '--config'} {source}"
            )
        cfg = record.make_config(spec.config_cls, Path(source))
        options = (
            record.make_options(options_for(spec), Path(source)) if resume else options_for(spec)()
        )
        what = "the resumed run" if resume else f"the configuration saved in {source}"
        return cfg, options, f"{spec.summary}. Defaults: {what}."
    preset = peek(argv, "--preset")
    env_id = peek(argv, "--env")
    cfg = spec.base_config(env_id, preset)
    if preset is not None:
        start = f"preset {preset}"
    elif cfg.env in spec.presets:
        start = f"preset {cfg.env}"
    else:
        start = f"the defaults on {cfg.env} (no preset for it)"
    return cfg, options_for(spec)(), f"{spec.summary}. Defaults: {start}."


def description(spec: AlgoSpec, prog: str) -> str:
    return (
        f"Train {spec.name.upper()} ({spec.summary}).\n\n"
        f"--env picks that environment's preset, --preset a named one, --config a saved run's "
        f"configuration; every other flag overrides one field. --resume DIR continues a run. "
        f"Writes runs/{spec.name}-<env>-<time>/ with config.json, metrics.jsonl, summary.json, "
        f"learning curves and checkpoints/.\n\nPresets: {preset_names(spec.presets)}.\n\n"
        f"Run options --resume may change: {', '.join(resumable_flags())}."
    )


def resumable_flags() -> list[str]:
    from purerl.options import RESUMABLE

    return [flag(name) for name in sorted(RESUMABLE)]


def request_from(spec: AlgoSpec, argv: Sequence[str], prog: str) -> tuple[TrainRequest, Any]:
    """Parses ``argv`` into a checked ``TrainRequest`` (raises ``ConfigError`` otherwise)."""
    cfg, options, header = base(spec, argv)
    cls = args_class(spec, header)
    args = parse(cls, argv, prog, description(spec, prog), default=cls(algo=cfg, run=options))
    env, network = saved_env(args, cfg, argv), saved_network(args, cfg, argv)
    if args.resume is None:
        if args.resume_from is not None:
            raise UsageError("--resume-from goes with --resume")
        request = TrainRequest(spec, args.algo, args.run, command=prog, env=env, network=network)
        return request, args
    fields = dataclasses.fields(cfg)
    changed = [f.name for f in fields if getattr(cfg, f.name) != getattr(args.algo, f.name)]
    fixed = [name for name in changed if name != "total_timesteps"]
    if fixed:
        raise ConfigError(
            f"{', '.join(flag(n) for n in fixed)} cannot change when resuming: a resumed run "
            "keeps its configuration but for --total-timesteps (start a new run from it with "
            "--config instead)"
        )
    budget_from = cfg.total_timesteps if changed else None
    cfg = args.algo
    changes = merge_resume_options(options, args.run)
    return (
        TrainRequest(
            spec,
            cfg,
            args.run,
            resume=Path(args.resume),
            resume_from=args.resume_from,
            option_changes=changes,
            budget_from=budget_from,
            command=prog,
            env=env,
            network=network,
        ),
        args,
    )


def saved_env(args: Any, saved: Any, argv: Sequence[str]) -> Any:
    """What builds the environment of a run from ``--resume`` or ``--config``, where the saved
    configuration's environment is kept (``trust.recorded_env``); None otherwise.

    Raises:
        UntrustedCodeError: a saved factory that ``--env`` does not name again, without
            ``--trust-run-code``; nothing of it was imported.
    """
    source = args.resume or args.config
    if source is None:
        if args.trust_run_code:
            raise UsageError(
                "--trust-run-code goes with --resume or --config: it trusts the code that the "
                "run's config.json names"
            )
        return None
    if args.algo.env != saved.env:  # --config with --env: a new run on the environment named
        return None
    return recorded_env(Path(source), saved.env, peek(argv, "--env"), args.trust_run_code)


def saved_network(args: Any, saved: Any, argv: Sequence[str]) -> Any:
    """The module of a network of the user's that a configuration from ``--resume`` or
    ``--config`` keeps (``trust.recorded_network``); None otherwise (one named by ``--network``
    now is found where the algorithm is built).

    Raises:
        UntrustedCodeError: a saved ``module:attr`` that ``--network`` does not name again,
            without ``--trust-run-code``; nothing of it was imported.
    """
    source = args.resume or args.config
    recorded = network_of(saved)
    if source is None or network_of(args.algo) != recorded:
        return None
    named = peek(argv, "--network")
    return recorded_network(Path(source), recorded, named, args.trust_run_code)


def format_config(cfg: Any) -> str:
    """The resolved configuration as the flags that give it, one per line."""

    def text(value: Any) -> str:
        if isinstance(value, tuple):
            return " ".join(map(str, value)) if value else "(none)"
        return str(value)

    def line(name: str, value: Any) -> str:
        if isinstance(value, bool):
            return flag(name) if value else "--no-" + flag(name)[2:]
        return f"{flag(name)} {text(value)}"

    lines = [f"  {line(f.name, getattr(cfg, f.name))}" for f in dataclasses.fields(cfg)]
    return "\n".join(["configuration:", *lines])


def train_algo(name: str, argv: Sequence[str], prog: str) -> int:
    """``purerl train <name> ARGV`` under the program name ``prog`` (which names the
    algorithm already: ``purerl train ppo``, or an ``experiments/`` script)."""
    with StopOnSignal() as stop:
        spec = algos.get(name)
        request, args = request_from(spec, argv, prog)
        if args.dry_run:
            setup = prepare(request)
            print(describe_setup(setup))
            if hint := cpu_split_hint(setup):
                print(hint)
            print(format_config(request.cfg))
            print("dry run: the configuration is valid; nothing was written")
            return 0
        enable_compilation_cache(request.options.compilation_cache)
        outcome = run_session(request, stop, [ConsoleSink()])
    if outcome.interrupted_by is not None:
        return 128 + outcome.interrupted_by
    return 0


def main(argv: Sequence[str], prog: str) -> int:
    """``purerl train ALGORITHM [FLAGS]``, or ``purerl train --resume DIR`` (the algorithm is
    read from the run)."""
    if not argv:
        raise UsageError(
            f"name the algorithm: {prog} ALGORITHM [FLAGS], with ALGORITHM one of "
            f"{', '.join(algos.names())} (see {prog} --help)"
        )
    if argv[0] in ("-h", "--help"):
        print(train_usage(prog))
        return 0
    if argv[0].startswith("-"):
        source = peek(argv, "--resume") or peek(argv, "--config")
        if source is None:
            raise UsageError(
                f"name the algorithm first: {prog} ALGORITHM [FLAGS] (see {prog} --help)"
            )
        resume = peek(argv, "--resume")
        if resume is not None and Path(resume).is_file():
            raise ConfigError(f"--resume {resume} is a file, not a run directory")
        name = rundir.read_config(Path(source)).algo
        return train_algo(name, argv, f"{prog} {name}")
    if argv[0] not in algos.names():
        raise UsageError(f"unknown algorithm {argv[0]!r}; choose one of {', '.join(algos.names())}")
    return train_algo(argv[0], argv[1:], f"{prog} {argv[0]}")


def train_usage(prog: str) -> str:
    lines = [f"usage: {prog} ALGORITHM [FLAGS]", f"   or: {prog} --resume DIR [FLAGS]", ""]
    lines.append("algorithms:")
    lines += [f"  {name:<6}  {algos.get(name).summary}" for name in algos.names()]
    lines += ["", f"{prog} ALGORITHM --help lists an algorithm's flags and presets."]
    return wrap_lines(lines, indent=10)
