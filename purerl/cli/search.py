"""``purerl search``: hyperparameter search from flags or a YAML/JSON spec.

    purerl search --env CartPole-v1 --param lr=loguniform:1e-4,1e-2 \\
        --param num_envs=grid:4,8 --samples 8 --num-seeds 2 \\
        --total-timesteps 100000
    purerl search --spec search.yaml --backend ray --gpus-per-trial 0.125

Configurations that differ only in traced hyperparameters train as one vmapped program; each
distinct value of a grouped field is another program. Writes a search directory
(``runs/search-<algo>-<env>-<timestamp>/`` unless ``--search-dir``) with spec.json,
results.csv, results.md, best_config.json and returns_vs_params.png.

Exit codes: 0 done, 1 a trial failed (the others' results are written), 2 invalid input.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from purerl import algos
from purerl.cli.parsing import UsageError, parse
from purerl.config import ConfigError
from purerl.core import parallel
from purerl.core.parallel import Placement
from purerl.core.report import Sink
from purerl.extras import import_extra
from purerl.options import hint
from purerl.run.rundir import create_run_dir, default_run_dir, write_json
from purerl.run.sinks import ProgressSink
from purerl.runtime import enable_compilation_cache
from purerl.search.plan import SearchPlan, describe, make_plan, spec_record
from purerl.search.results import DONE, Row, SearchProgress, results_table, write_results
from purerl.search.spec import RENAMED_KEYS, SPEC_KEYS, SpecError, parse_param_flag, parse_spec
from purerl.search.sweep import BatchResult, sweep


@dataclasses.dataclass(frozen=True)
class SearchArgs:
    """Flags override the keys of --spec one by one; --param adds or replaces parameters."""

    spec: Annotated[str | None, hint("none", "PATH")] = None
    """YAML or JSON spec file (keys: algo, env, preset, num_seeds, seed, total_timesteps, samples,
    sample_seed, params)."""
    algo: Annotated[str | None, hint("ppo", "NAME")] = None
    """Algorithm (purerl train --help lists them)."""
    env: Annotated[str | None, hint("CartPole-v1", "ID")] = None
    """Environment id."""
    preset: Annotated[
        str | None, hint("the env's preset, else the algorithm's defaults", "NAME")
    ] = None
    """Base preset."""
    param: Annotated[tuple[str, ...], tyro.conf.UseAppendAction] = ()
    """One parameter per --param: NAME=grid:V1,V2  NAME=choice:V1,V2  NAME=uniform:LOW,HIGH
    NAME=loguniform:LOW,HIGH  or NAME=VALUE (fixed); lists of lists as JSON
    (hidden_sizes=grid:[[32],[64,64]])."""
    num_seeds: Annotated[int | None, hint("1", "INT")] = None
    """Independent agents (seeds) per configuration."""
    seed: Annotated[int | None, hint("the preset's", "INT")] = None
    """Seed of each configuration's first agent; agent i uses seed + i."""
    samples: Annotated[int | None, hint("1", "INT")] = None
    """Draws of the choice/uniform/loguniform parameters per grid point."""
    sample_seed: Annotated[int | None, hint("0", "INT")] = None
    """Seed of the numpy Generator that draws them."""
    total_timesteps: Annotated[int | None, hint("the preset's", "INT")] = None
    """Training budget in agent steps of every configuration."""
    search_dir: Annotated[str | None, hint("runs/search-<algo>-<env>-<time>", "DIR")] = None
    """Output directory; must not hold files."""
    backend: Literal["local", "ray"] = "local"
    """local: batches one after another in this process; ray: one Ray Tune trial per batch."""
    configs_per_trial: Annotated[int | None, hint("a whole group", "INT")] = None
    """Most configurations vmapped in one program."""
    cpus_per_trial: Annotated[float | None, hint("1", "FLOAT")] = None
    """Ray: CPUs each trial reserves."""
    gpus_per_trial: Annotated[float | None, hint("0", "FLOAT")] = None
    """Ray: GPUs each trial reserves; fractions pack trials on one GPU."""
    ray_address: Annotated[str | None, hint("start a local instance", "ADDRESS")] = None
    """Ray: cluster address from `ray start --head`."""
    asha: bool = False
    """Ray: stop lagging trials early with ASHA (rungs at 1/9 and 1/3 of the budget)."""
    updates_per_chunk: Annotated[int | None, hint("about 20 chunks", "INT")] = None
    """Updates per compiled chunk, i.e. between progress reports."""
    num_devices: Annotated[int | None, hint("1", "INT")] = None
    """Local: split each program's agents over up to this many devices (as many as divide
    them); on a CPU purerl starts that many CPU devices, one per core being fastest."""
    progress: bool = True
    """Local: print each batch's progress per chunk."""

    def __post_init__(self):
        for name in ("configs_per_trial", "updates_per_chunk", "num_devices"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
        for name, low in (("cpus_per_trial", 0.0), ("gpus_per_trial", 0.0)):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= low):
                raise ConfigError(
                    f"--{name.replace('_', '-')} must be a number >= {low}, got {value}"
                )
        if self.cpus_per_trial is not None and self.cpus_per_trial == 0:
            raise ConfigError("--cpus-per-trial must be positive")


def load_spec_file(path: str) -> dict[str, Any]:
    """The mapping in a .yaml/.yml (needs pyyaml) or .json spec file."""
    source = Path(path)
    if not source.is_file():
        raise SpecError(f"spec file {path} does not exist")
    try:
        text = source.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise SpecError(
            f"spec file {path} is not UTF-8 text (byte {err.object[err.start]:#04x} at offset "
            f"{err.start}); save it as UTF-8"
        ) from None
    if source.suffix in (".yaml", ".yml"):
        yaml = import_extra("yaml", "'purerl[search]'", "a YAML spec")
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise SpecError(f"{path} is not valid YAML: {' '.join(str(err).split())}") from None
    elif source.suffix == ".json":
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as err:
            raise SpecError(f"{path} is not valid JSON: {err}") from None
    else:
        raise SpecError(f"spec file {path} must end in .yaml, .yml or .json")
    if not isinstance(data, dict):
        raise SpecError(f"{path} must hold a mapping of spec keys")
    return data


def spec_data(args: SearchArgs) -> dict[str, Any]:
    """The spec file's mapping with the flags given applied over it."""
    data = load_spec_file(args.spec) if args.spec else {}
    data.update({k: getattr(args, k) for k in SPEC_KEYS if getattr(args, k) is not None})
    params = data.get("params") or {}
    if not isinstance(params, Mapping):
        raise SpecError("params must map parameter names to a value or {kind: values}")
    data["params"] = {**params, **dict(parse_param_flag(text) for text in args.param)}
    return data


def check_backend_flags(args: SearchArgs) -> None:
    if args.backend != "ray":
        given = [
            flag
            for flag, value in [
                ("--cpus-per-trial", args.cpus_per_trial),
                ("--gpus-per-trial", args.gpus_per_trial),
                ("--ray-address", args.ray_address),
                ("--asha", args.asha or None),
            ]
            if value is not None
        ]
        if given:
            verb = "needs" if len(given) == 1 else "need"
            raise ConfigError(f"{', '.join(given)} {verb} --backend ray")
    else:
        if args.num_devices is not None:
            raise ConfigError("--num-devices needs --backend local (Ray places each trial)")
        # Before anything is written: a missing Ray is invalid input, with the pip hint.
        import_extra("ray.tune", "'purerl[search]'", "--backend ray")
    if args.configs_per_trial is not None and args.configs_per_trial < 1:
        raise ConfigError(f"--configs-per-trial must be at least 1, got {args.configs_per_trial}")
    if args.cpus_per_trial is not None and args.cpus_per_trial <= 0:
        raise ConfigError(f"--cpus-per-trial must be positive, got {args.cpus_per_trial}")
    if args.gpus_per_trial is not None and args.gpus_per_trial < 0:
        raise ConfigError(f"--gpus-per-trial must not be negative, got {args.gpus_per_trial}")
    if args.updates_per_chunk is not None and args.updates_per_chunk < 1:
        raise ConfigError(f"--updates-per-chunk must be at least 1, got {args.updates_per_chunk}")


def grouped_values(plan: SearchPlan, indices: list[int]) -> str:
    """The grouped (shape-changing) searched values a batch shares, for progress lines."""
    traced = algos.get(plan.algo).traced
    shared = {k: v for k, v in plan.assignments[indices[0]].items() if k not in traced}
    return describe(shared) if shared else "base shapes"


def run_local(plan: SearchPlan, args: SearchArgs, progress: SearchProgress) -> list[Row]:
    """Trains the batches one after another in this process (``purerl.search.sweep.sweep``)."""
    rows: list[Row] = []

    def before_batch(number: int, indices: list[int], placement: Placement | None) -> list[Sink]:
        base = plan.configs[indices[0]]
        progress.started(number, len(indices), grouped_values(plan, indices))
        sinks: list[Sink] = []
        if args.progress:
            agents = len(indices) * base.num_seeds
            sinks.append(ProgressSink(base.num_updates, base.env_steps_per_update, agents))
        if placement is not None:
            print(f"  devices: {placement.describe()}", flush=True)
        return sinks

    def after_batch(number: int, indices: list[int], batch: BatchResult) -> None:
        new = [
            Row(i, number, plan.assignments[i], result, plan.configs[i].num_updates, DONE)
            for i, result in zip(indices, batch.configs, strict=True)
        ]
        progress.finished(number, new)
        rows.extend(new)

    sweep(
        plan.algo,
        plan.configs,
        args.updates_per_chunk,
        max_configs_per_batch=args.configs_per_trial,
        on_batch=after_batch,
        num_devices=args.num_devices,
        before_batch=before_batch,
    )
    return rows


def run_search(args: SearchArgs) -> int:
    """Validates everything, writes spec.json, trains, writes the results; the exit code."""
    check_backend_flags(args)
    if args.num_devices is not None:
        # Before anything builds an environment or writes: the devices must exist.
        parallel.select_devices("auto", args.num_devices)
    spec = parse_spec(spec_data(args))
    plan = make_plan(spec, args.configs_per_trial)
    default = default_run_dir(f"search-{spec.algo}", spec.env)
    search_dir = create_run_dir(
        Path(args.search_dir) if args.search_dir else default, "search directory", "--search-dir"
    )
    write_json(search_dir / "spec.json", spec_record(spec, plan.assignments))
    print(
        f"search: {spec.algo} on {spec.env}, {len(plan.configs)} configurations x {spec.num_seeds} "
        f"seed(s) in {len(plan.batches)} program(s), backend {args.backend} -> {search_dir}",
        flush=True,
    )
    progress = SearchProgress(len(plan.configs), len(plan.batches))
    if args.backend == "ray":
        from purerl.search.ray_backend import RayOptions, run_ray

        options = RayOptions(
            args.ray_address,
            args.cpus_per_trial or 1.0,
            args.gpus_per_trial or 0.0,
            args.asha,
            args.updates_per_chunk,
        )
        rows = run_ray(plan, options, search_dir, progress)
    else:
        rows = run_local(plan, args, progress)
    best = write_results(search_dir, spec, rows)
    print(results_table(spec, rows, limit=10), flush=True)
    if best is None:
        print("no configuration finished an episode: no best_config.json", flush=True)
    else:
        print(
            f"best: config {best.index} ({describe(best.values)}); re-run it with: "
            f"purerl train {spec.algo} --config {search_dir / 'best_config.json'}",
            flush=True,
        )
    return 1 if any(row.status.startswith("error") for row in rows) else 0


RENAMED_FLAGS = {
    f"--{old.replace('_', '-')}": f"--{new.replace('_', '-')}" for old, new in RENAMED_KEYS.items()
}
"""Flags of earlier versions -> the ``purerl train`` names that replaced them."""


def refuse_renamed_flags(argv: Sequence[str], prog: str) -> None:
    """Raises ``UsageError`` naming the new flag for each old one in ``argv``."""
    given = []
    for arg in argv:
        name = arg.partition("=")[0].replace("_", "-")
        if name in RENAMED_FLAGS and name not in given:
            given.append(name)
    if given:
        new = ", ".join(f"{old} is now {RENAMED_FLAGS[old]}" for old in given)
        raise UsageError(f"{prog} takes purerl train's flag names: {new}")


def main(argv: Sequence[str], prog: str) -> int:
    """``purerl search ARGV``; returns the exit code (1 if a trial failed)."""
    refuse_renamed_flags(argv, prog)
    args = parse(SearchArgs, argv, prog, __doc__)
    enable_compilation_cache()
    return run_search(args)
