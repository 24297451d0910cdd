"""The device check's groups of checks, each run in its own process by ``benchmarks.device``.

    python -m benchmarks.device.checks GROUP --out DIR [--quick]

A group appends one JSON row per check to ``DIR/rows/GROUP.jsonl`` as soon as the check ends,
so that rows written before a crash or a time limit survive it; a check that raises becomes a
``fail`` row with its error and the group goes on. ``plan(group, quick)`` names every row a
group means to write, so the parent can report rows that never came.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from benchmarks.device.report import Row, append_row, last_line

ROOT = Path(__file__).resolve().parents[2]


class Throughput(NamedTuple):
    algo: str
    env: str
    num_envs: int
    seeds: int
    updates: int
    """PPO/PQN updates (DQN, SAC, TD3: updates of rollout_len iterations) per timed call, per
    agent."""
    rollout_len: int = 0
    """Steps per environment per update (0: the preset's)."""

    @property
    def name(self) -> str:
        seeds = "seed" if self.seeds == 1 else "seeds"
        return f"throughput {self.algo} {self.env} {self.num_envs} envs {self.seeds} {seeds}"


THROUGHPUT_FULL = {
    "throughput": (
        Throughput("ppo", "CartPole-v1", 2048, 1, 8),
        Throughput("ppo", "CartPole-v1", 2048, 16, 2),
        Throughput("ppo", "CartPole-v1", 8192, 1, 4),
        Throughput("dqn", "CartPole-v1", 4096, 1, 4),
        Throughput("dqn", "CartPole-v1", 4096, 16, 1),
        Throughput("pqn", "CartPole-v1", 4096, 1, 8),
        Throughput("pqn", "CartPole-v1", 4096, 16, 2),
    ),
    "throughput-minatar": (
        Throughput("ppo", "Breakout-MinAtar", 2048, 1, 4),
        Throughput("ppo", "Breakout-MinAtar", 2048, 16, 1),
        Throughput("pqn", "Breakout-MinAtar", 2048, 1, 4),
        Throughput("ppo", "Pendulum-v1", 2048, 1, 4),
    ),
    # The Pendulum presets at 1,024 envs: 125 vector steps an update, each with the preset's 4
    # gradient steps of 256.
    "throughput-sac-td3": (
        Throughput("sac", "Pendulum-v1", 1024, 1, 2),
        Throughput("sac", "Pendulum-v1", 1024, 16, 1),
        Throughput("td3", "Pendulum-v1", 1024, 1, 2),
        Throughput("td3", "Pendulum-v1", 1024, 16, 1),
    ),
    # The GRU presets (sequences replayed from their recorded start states) at 2,048 envs.
    "throughput-recurrent": (
        Throughput("ppo", "CartPole-NoVelocity-v1", 2048, 1, 2),
        Throughput("ppo", "CartPole-NoVelocity-v1", 2048, 16, 1),
        Throughput("ppo", "MemoryChain-bsuite", 2048, 1, 8),
    ),
    # The CPU preset of inverted_double_pendulum at 2,048 envs, and Brax's published Ant setting
    # (4,096 envs, 327,680 steps an update).
    "throughput-brax": (
        Throughput("ppo", "brax/inverted_double_pendulum", 2048, 1, 4),
        Throughput("ppo", "brax/ant", 4096, 1, 1),
    ),
}
# Quick: each distinct path once, at 8 envs and 2 seeds (the vmapped path), one update of 16
# steps per env per call: PPO and DQN beside their references (discrete actions, flat and
# MinAtar-grid observations), PQN, PPO on continuous actions, SAC beside its reference
# (continuous actions; TD3 takes the same path without one, and the doctor trains it), the
# GRU beside its reference, Brax.
THROUGHPUT_QUICK = {
    "throughput": (("ppo", "CartPole-v1"), ("dqn", "CartPole-v1")),
    "throughput-minatar": (("pqn", "Breakout-MinAtar"), ("ppo", "Pendulum-v1")),
    "throughput-sac-td3": (("sac", "Pendulum-v1"),),
    "throughput-recurrent": (("ppo", "CartPole-NoVelocity-v1"),),
    "throughput-brax": (("ppo", "brax/inverted_double_pendulum"),),
}


def throughput_rows(group: str, quick: bool) -> list[Throughput]:
    """GPU-sized batches, 1 and 16 vmapped seeds (``THROUGHPUT_FULL``); ``quick``: each distinct
    path once at 8 envs and 2 seeds, one short update per call (``THROUGHPUT_QUICK``)."""
    if not quick:
        return list(THROUGHPUT_FULL[group])
    return [Throughput(algo, env, 8, 2, 1, 16) for algo, env in THROUGHPUT_QUICK[group]]


ATARI_ENVS_FULL = (16, 64)
ATARI_ENVS_QUICK = (4,)
SNAKE_GAMES_FULL = (4096, 16384, 65536)
SNAKE_GAMES_QUICK = (256,)


class CommandRun(NamedTuple):
    """A training command of ``updates`` updates of ``rollout_len`` steps per env."""

    algo: str
    env: str
    num_envs: int
    rollout_len: int
    updates: int

    @property
    def total_timesteps(self) -> int:
        return self.updates * self.rollout_len * self.num_envs


def mujoco_runs(quick: bool) -> list[CommandRun]:
    """PPO on HalfCheetah-v4 through EnvPool at 16 and 64 envs, 4 updates of 256 steps per
    env (the preset's 10 epochs x 32 minibatches of 128 and 512)."""
    if quick:
        return [CommandRun("ppo", "HalfCheetah-v4", 2, 16, 2)]
    return [CommandRun("ppo", "HalfCheetah-v4", n, 256, 4) for n in (16, 64)]


class EvaluationRun(NamedTuple):
    """A training command that evaluates as it trains: ``--eval-every``, ``--eval-episodes``."""

    run: CommandRun
    eval_every: int
    eval_episodes: int


def evaluation_run(quick: bool) -> EvaluationRun:
    """PPO on CartPole-v1 at 2,048 envs (262,144 steps an update), 16 updates, 1,024 greedy
    episodes per seed every 4 updates."""
    if quick:
        return EvaluationRun(CommandRun("ppo", "CartPole-v1", 8, 16, 4), 2, 4)
    return EvaluationRun(CommandRun("ppo", "CartPole-v1", 2048, 128, 16), 4, 1024)


def command_name(group: str, run: CommandRun) -> str:
    return f"{group} {run.algo} {run.env} {run.num_envs} envs"


def plan(group: str, quick: bool) -> list[str]:
    """The rows ``group`` writes, in order (the doctor's depend on its own checks: one name)."""
    sizes = ATARI_ENVS_QUICK if quick else ATARI_ENVS_FULL
    if group in ("devices", "doctor"):
        return [group]
    if group in THROUGHPUT_FULL:
        return [row.name for row in throughput_rows(group, quick)]
    if group == "atari":
        return [f"atari bench {num_envs} envs" for num_envs in sizes]
    if group == "atari-command":
        return [f"atari command {num_envs} envs" for num_envs in sizes]
    if group == "snake":
        return [f"snake {n} games" for n in (SNAKE_GAMES_QUICK if quick else SNAKE_GAMES_FULL)]
    if group == "learning":
        return ["learning ppo Breakout-MinAtar"]
    if group == "mujoco":
        return [command_name("mujoco", run) for run in mujoco_runs(quick)]
    if group == "evaluation":
        return [command_name("evaluation", evaluation_run(quick).run)]
    raise ValueError(f"unknown group {group!r}")


# In the order they run: a group that would start after the check's budget is spent is
# reported as not run, so the later groups are the ones a short allocation can spare.
GROUPS = (
    "devices",
    "doctor",
    "throughput",
    "atari",
    "atari-command",
    "snake",
    "learning",
    "throughput-minatar",
    "throughput-sac-td3",
    "throughput-recurrent",
    "mujoco",
    "evaluation",
    "throughput-brax",
)

READS = {"atari-command": "atari"}
"""Groups that read another group's rows, and the group they read: they start after it ends."""


# ---------------------------------------------------------------- helpers


def error_text(err: BaseException) -> str:
    first = (str(err).strip().splitlines() or [""])[0]
    return f"{type(err).__name__}: {first}"[:300]


def device_memory() -> dict[str, Any]:
    """The process's peak device memory so far, over every check it ran (GPUs report it; CPUs
    do not)."""
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    peak = stats.get("peak_bytes_in_use")
    return {"peak_device_mib": round(peak / 2**20)} if peak else {}


def purerl_command() -> list[str]:
    """The ``purerl`` console script beside this Python, else the first on ``PATH`` (where the
    install step puts its folder first), else the same entry point through this Python."""
    for candidate in [
        Path(sys.executable).parent / "purerl",
        *(Path(p) / "purerl" for p in os.environ.get("PATH", "").split(os.pathsep) if p),
    ]:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return [str(candidate)]
    return [sys.executable, "-c", "import sys; from purerl.cli import main; sys.exit(main())"]


def run_command(
    command: list[str],
    limit_s: float,
    env: dict[str, str] | None = None,
    stop_signal: int = signal.SIGTERM,
    grace_s: float = 20.0,
    tail_chars: int | None = 4000,
) -> tuple[int, str, float]:
    """Runs ``command``; at ``limit_s`` it gets ``stop_signal`` (SIGTERM or SIGINT: purerl saves
    and stops), ``grace_s`` later SIGKILL. It stays in this group's process group, which the
    parent kills once the group ends, so nothing it started outlives the group. Returns the exit
    code, the output (its last ``tail_chars``; None: all of it) and the seconds."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        output, _ = proc.communicate(timeout=max(1.0, limit_s))
    except subprocess.TimeoutExpired:
        proc.send_signal(stop_signal)
        try:
            output, _ = proc.communicate(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            output, _ = proc.communicate()
    output = output if tail_chars is None else output[-tail_chars:]
    return proc.returncode, output, time.perf_counter() - start


# ---------------------------------------------------------------- groups


def devices_group(quick: bool, out: Path, limit: float) -> Iterator[Row]:
    import platform
    from importlib import metadata

    import jax

    devices = jax.devices()
    versions = {}
    for name in ("purerl", "jax", "jaxlib", "flax", "optax", "gymnax", "tyro", "envpool"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    figures = {
        "backend": jax.default_backend(),
        "devices": [f"{d} ({d.device_kind})" for d in devices],
        "python": platform.python_version(),
        "cpu_cores": os.cpu_count(),
        **versions,
    }
    yield Row("devices", "pass", figures)


def doctor_group(quick: bool, out: Path, limit: float) -> Iterator[Row]:
    """``purerl doctor``: one row per doctor check, its own pass/FAIL/skipped carried over."""
    report = out / "doctor.json"
    command = [*purerl_command(), "doctor", "--json", str(report)]
    # Its one-update Atari check is left to the atari groups, which time that path in full.
    command += ["--no-atari"]
    command += ["--quick", "--seconds", "0.2"] if quick else ["--seconds", "1"]
    env = dict(os.environ)
    if quick:
        # Seeds over devices runs even where this process may use one core (the doctor starts
        # one CPU device per usable core; on a GPU this leaves the GPUs as they are).
        env["JAX_NUM_CPU_DEVICES"] = str(max(2, int(env.get("JAX_NUM_CPU_DEVICES", "0") or 0)))
    code, output, seconds = run_command(command, limit_s=limit - 25, env=env)
    (out / "doctor.txt").write_text(output)
    if not report.exists():
        yield Row(
            "doctor",
            "fail",
            error=f"exit code {code}, no report: {last_line(output)}",
            seconds=seconds,
        )
        return
    found = json.loads(report.read_text())
    for check in found["checks"]:
        name = f"doctor {check['name']}"
        figures = {"rate": round(check["rate"])} if check.get("rate") else {}
        if check["ok"] is True:
            yield Row(name, "pass", figures)
        elif check["ok"] is False:
            yield Row(name, "fail", figures, error=check["note"] or "failed")
        else:
            yield Row(name, "skip", why=check["note"] or "skipped by the doctor")
    yield Row(
        "doctor",
        "pass" if code == 0 else "fail",
        {"exit_code": code},
        error=None if code == 0 else f"exit code {code}: a doctor check failed",
        seconds=seconds,
    )


def throughput_group(group: str):
    def run(quick: bool, out: Path, limit: float) -> Iterator[Row]:
        """purerl beside the reference of benchmarks/reference.py (PPO, DQN on discrete
        actions; SAC on continuous ones) in the same process, calls alternating; PQN, TD3 and
        PPO on continuous actions have no reference there. A row whose environment needs an
        optional package that is not installed (Brax) is skipped, saying which."""
        from benchmarks import throughput
        from benchmarks.timing import measure
        from purerl.extras import MissingExtraError

        for spec in throughput_rows(group, quick):
            start = time.perf_counter()
            try:
                figures = throughput_figures(spec, 3, throughput, measure)
                yield Row(spec.name, "pass", figures, seconds=time.perf_counter() - start)
            except MissingExtraError as err:
                yield Row(spec.name, "skip", why=missing_extra_why(err))
            except Exception as err:  # a failing configuration is a result; the next one runs
                yield Row(
                    spec.name, "fail", error=error_text(err), seconds=time.perf_counter() - start
                )

    return run


NOT_BUNDLED = {
    "brax": "the device bundle cannot carry it: brax and what it needs are 34 MiB of wheels, "
    "beyond the 64 MiB a device run carries with the rest (docs/cluster.md)"
}


def missing_extra_why(err: BaseException) -> str:
    """purerl's one line on the missing package, and why the bundle did not bring it."""
    why = str(err).strip().splitlines()[0]
    for package, note in NOT_BUNDLED.items():
        if f"package {package}," in why:
            return f"{why}; {note}"
    return why


# The action spaces benchmarks/reference.py and reference_sac.py were written for.
REFERENCE_ACTIONS = {"ppo": "discrete", "dqn": "discrete", "sac": "continuous"}


def throughput_config(spec: Throughput, peer_algos) -> tuple[Any, tuple[str, ...]]:
    """The configuration a throughput row trains (``row_config``) and the peers timed beside
    it: the reference, for the algorithms it has, on the action space it was written for.
    Builds the environment (raises ``MissingExtraError`` where it needs a missing package)."""
    from purerl import envs
    from purerl.core.env import Discrete

    cfg = row_config(spec)
    discrete = isinstance(envs.from_config(cfg).spec.action_space, Discrete)
    actions = "discrete" if discrete else "continuous"
    has_reference = spec.algo in peer_algos and REFERENCE_ACTIONS.get(spec.algo) == actions
    return cfg, ("reference",) if has_reference else ()


def row_config(spec: Throughput) -> Any:
    """The env's preset at the row's size and budget, checked as a configuration (the
    environment is not built)."""
    from purerl import algos

    base = algos.get(spec.algo).base_config(spec.env)
    rollout_len = spec.rollout_len or base.env_steps_per_update // base.num_envs
    overrides: dict[str, Any] = {
        "env": spec.env,
        "num_envs": spec.num_envs,
        "num_seeds": 1,
        "rollout_len": rollout_len,
        "total_timesteps": rollout_len * spec.num_envs * spec.updates,
    }
    if hasattr(base, "buffer_size"):
        # Replay (DQN, SAC, TD3): learning from the second vector step on, from a buffer of 64
        # steps per environment.
        overrides.update(buffer_size=64 * spec.num_envs, learning_starts=spec.num_envs)
    return dataclasses.replace(base, **overrides)


def throughput_figures(spec: Throughput, repeats: int, throughput, measure) -> dict[str, Any]:
    cfg, peers = throughput_config(spec, throughput.PEERS["reference"])
    runners, compiles = {}, {}
    runners["purerl"], compiles["purerl"] = throughput.purerl_runner(spec.algo, cfg, spec.seeds)
    for peer in peers:
        runners[peer], compiles[peer] = throughput.peer_runner(peer, spec.algo, cfg, spec.seeds)
    times = measure(runners, repeats)
    steps = cfg.num_updates * cfg.env_steps_per_update * spec.seeds
    figures: dict[str, Any] = {
        "steps_per_s": round(steps / statistics.median(times["purerl"])),
        "compile_s": round(compiles["purerl"], 2),
        "steps_per_call": steps,
    }
    if getattr(cfg, "network", "mlp") != "mlp":
        figures["network"] = cfg.network
    for peer in peers:
        ratios = [b / a for a, b in zip(times["purerl"], times[peer], strict=True)]
        figures[f"{peer}_steps_per_s"] = round(steps / statistics.median(times[peer]))
        figures[f"{peer}_compile_s"] = round(compiles[peer], 2)
        figures[f"speedup_vs_{peer}"] = round(statistics.median(ratios), 3)
    if not peers:
        figures["reference"] = "none for this algorithm and action space"
    return {**figures, **device_memory()}


def atari_group(quick: bool, out: Path, limit: float) -> Iterator[Row]:
    """benchmarks.atari at each pool size: raw EnvPool stepped from the host (the ceiling), its
    XLA step and its host callback in a compiled scan, PPO's rollout and whole updates."""
    from benchmarks import atari

    for num_envs in ATARI_ENVS_QUICK if quick else ATARI_ENVS_FULL:
        name = f"atari bench {num_envs} envs"
        start = time.perf_counter()
        try:
            args = atari.AtariBenchArgs(
                num_envs=num_envs, updates=1, repeats=3, rollout_len=16 if quick else 128
            )
            result = atari.measure(args)
            figures: dict[str, Any] = {
                f"{row.replace(' ', '_')}_fps": round(fps)
                for row, fps in result.frames_per_second().items()
            }
            figures["step_mode"] = result.step_mode
            figures.update(
                {
                    f"{k.replace(' ', '_')}_compile_s": round(v, 1)
                    for k, v in result.compile_s.items()
                }
            )
            yield Row(
                name, "pass", {**figures, **device_memory()}, seconds=time.perf_counter() - start
            )
        except Exception as err:
            yield Row(name, "fail", error=error_text(err), seconds=time.perf_counter() - start)


def atari_command_group(quick: bool, out: Path, limit: float) -> Iterator[Row]:
    """The headline command, ``python experiments/ppo.py --env Breakout-v5 --num-envs N``, for a
    fixed number of updates, beside the raw EnvPool rate the ``atari`` group measured. This
    process never starts JAX: the command has the device to itself."""
    from benchmarks.device.report import read_rows
    from purerl.run.rundir import load_run

    bench = {row.name: row for row in read_rows(out / "rows" / "atari.jsonl")}
    sizes = ATARI_ENVS_QUICK if quick else ATARI_ENVS_FULL
    for num_envs in sizes:
        name = f"atari command {num_envs} envs"
        rollout_len = 16 if quick else 128
        updates = 2 if quick else max(4, 256 // num_envs)
        run_dir = out / "runs" / f"ppo-Breakout-v5-{num_envs}"
        command = [
            sys.executable, "experiments/ppo.py", "--env", "Breakout-v5",
            "--num-envs", str(num_envs), "--rollout-len", str(rollout_len),
            "--total-timesteps", str(updates * rollout_len * num_envs),
            "--run-dir", str(run_dir), "--no-progress",
        ]  # fmt: skip
        code, output, seconds = run_command(command, limit_s=(limit - 10) / len(sizes))
        (out / "logs" / f"atari-command-{num_envs}.txt").write_text(output)
        if code != 0:
            yield Row(name, "fail", error=f"exit code {code}: {last_line(output)}", seconds=seconds)
            continue
        summary = load_run(run_dir).summary
        figures = summary_figures(summary)
        figures["frames_per_s"] = round(summary.steps_per_second * 4)
        raw = bench.get(f"atari bench {num_envs} envs")
        if raw is not None and raw.status == "pass":
            figures["raw_envpool_fps"] = raw.figures["envpool_host_fps"]
            figures["vs_raw_envpool"] = round(
                figures["frames_per_s"] / figures["raw_envpool_fps"], 3
            )
        yield Row(name, "pass", figures, seconds=seconds)


def summary_figures(summary) -> dict[str, Any]:
    """What a finished training command's ``summary.json`` says of its speed."""
    return {
        "updates": summary.num_updates,
        "steps_per_s": round(summary.steps_per_second),
        "compile_s": round(summary.compile_time_s, 1),
        "wall_s": round(summary.wall_time_s, 1),
    }


def envpool_task_missing(task: str) -> str | None:
    """Why EnvPool cannot make ``task`` here (not installed, or a bundle without its simulator
    family), or None when it can."""
    try:
        import envpool
    except ImportError:
        return "EnvPool is not installed (pip install 'purerl[mujoco]')"
    if task not in envpool.list_all_envs():
        return (
            f"this EnvPool has no {task}: its wheel was slimmed without the MuJoCo family "
            "(python -m benchmarks.device.bundle --envpool-families atari mujoco.gym)"
        )
    return None


def mujoco_group(quick: bool, out: Path, limit: float) -> Iterator[Row]:
    """``python experiments/ppo.py --env HalfCheetah-v4 --num-envs N`` (MuJoCo through EnvPool)
    for a fixed number of updates (``mujoco_runs``). Skipped, saying why, where EnvPool cannot
    make the task. This process never starts JAX: the command has the device to itself."""
    from purerl.run.rundir import load_run

    runs = mujoco_runs(quick)
    for run in runs:
        name = command_name("mujoco", run)
        missing = envpool_task_missing(run.env)
        if missing is not None:
            yield Row(name, "skip", why=missing)
            continue
        run_dir = out / "runs" / f"{run.algo}-{run.env}-{run.num_envs}"
        command = [
            sys.executable, f"experiments/{run.algo}.py", "--env", run.env,
            "--num-envs", str(run.num_envs), "--rollout-len", str(run.rollout_len),
            "--total-timesteps", str(run.total_timesteps),
            "--run-dir", str(run_dir), "--no-progress",
        ]  # fmt: skip
        code, output, seconds = run_command(command, limit_s=(limit - 10) / len(runs))
        (out / "logs" / f"mujoco-{run.num_envs}.txt").write_text(output)
        if code != 0:
            yield Row(name, "fail", error=f"exit code {code}: {last_line(output)}", seconds=seconds)
            continue
        yield Row(name, "pass", summary_figures(load_run(run_dir).summary), seconds=seconds)


def evaluation_group(quick: bool, out: Path, limit: float) -> Iterator[Row]:
    """``purerl train ppo --eval-every K --eval-episodes E`` for a fixed number of updates. It
    passes when the run finished and its metrics.jsonl holds an ``eval/return`` for every
    evaluation asked for; the figures are their mean returns and the seconds they took."""
    from purerl.run.rundir import load_run

    spec = evaluation_run(quick)
    run, name = spec.run, command_name("evaluation", spec.run)
    run_dir = out / "runs" / f"{run.algo}-{run.env}-eval"
    command = [
        *purerl_command(), "train", run.algo, "--env", run.env,
        "--num-envs", str(run.num_envs), "--rollout-len", str(run.rollout_len),
        "--total-timesteps", str(run.total_timesteps),
        "--eval-every", str(spec.eval_every), "--eval-episodes", str(spec.eval_episodes),
        "--run-dir", str(run_dir), "--no-progress",
    ]  # fmt: skip
    code, output, seconds = run_command(command, limit_s=limit - 25)
    (out / "logs" / "evaluation-run.txt").write_text(output)
    if code != 0 or not (run_dir / "config.json").exists():
        yield Row(name, "fail", error=f"exit code {code}: {last_line(output)}", seconds=seconds)
        return
    trained = load_run(run_dir)
    expected = run.updates // spec.eval_every
    found = trained.evaluations
    count = 0 if found is None else len(found.updates)
    figures: dict[str, Any] = {"evaluations": count, "eval_episodes": spec.eval_episodes}
    if found is not None:
        means = run_mean(found.returns)
        figures["eval_updates"] = [int(u) for u in found.updates]
        figures["eval_mean_return"] = [None if math.isnan(m) else round(float(m), 1) for m in means]
    if trained.summary is not None:
        figures["eval_time_s"] = round(trained.summary.eval_time_s, 2)
        figures.update(summary_figures(trained.summary))
    if trained.status != "finished" or count != expected:
        why = f"{count} evaluations in metrics.jsonl, {expected} asked for; run {trained.status}"
        yield Row(name, "fail", figures, error=why, seconds=seconds)
        return
    yield Row(name, "pass", figures, seconds=seconds)


def snake_group(quick: bool, out: Path, limit: float) -> Iterator[Row]:
    """purerl's JAX Snake (10x10, grid observations) at many games, random actions in a scan."""
    from benchmarks import envs as env_bench
    from benchmarks.timing import measure

    args = env_bench.EnvBenchArgs()
    family = env_bench.snake_family(args)
    for games in SNAKE_GAMES_QUICK if quick else SNAKE_GAMES_FULL:
        start = time.perf_counter()
        steps = 20 if quick else 500
        try:
            run, compile_s = env_bench.jax_runner(family.game, games, steps)
            times = measure({"snake": run}, 3)["snake"]
            figures = {
                "steps_per_s": round(games * steps / statistics.median(times)),
                "compile_s": round(compile_s, 2),
                "scan_steps": steps,
                **device_memory(),
            }
            yield Row(f"snake {games} games", "pass", figures, seconds=time.perf_counter() - start)
        except Exception as err:
            yield Row(
                f"snake {games} games",
                "fail",
                error=error_text(err),
                seconds=time.perf_counter() - start,
            )


def learning_group(quick: bool, out: Path, limit: float) -> Iterator[Row]:
    """``purerl train ppo --env Breakout-MinAtar --num-seeds 4`` (the preset: 5M steps a seed)
    for at most the group's time: past it the run gets SIGTERM and stops where it is, saved.
    The row is the return curve and the wall time, from the run directory; it passes when the
    run finished or was stopped by the limit, with episodes finished."""
    from purerl.run.rundir import load_run

    name = "learning ppo Breakout-MinAtar"
    run_dir = out / "runs" / "ppo-Breakout-MinAtar"
    command = [*purerl_command(), "train", "ppo", "--env", "Breakout-MinAtar",
               "--run-dir", str(run_dir), "--no-progress"]  # fmt: skip
    if quick:
        command += ["--num-seeds", "2", "--num-envs", "8", "--total-timesteps", "8192"]
    else:
        command += ["--num-seeds", "4"]
    stop_at = limit - 25
    code, output, seconds = run_command(command, limit_s=stop_at)
    (out / "logs" / "learning-run.txt").write_text(output)
    if not (run_dir / "config.json").exists():
        yield Row(name, "fail", error=f"exit code {code}: {last_line(output)}", seconds=seconds)
        return
    run = load_run(run_dir)
    mean = [None if math.isnan(v) else round(float(v), 2) for v in run_mean(run.returns)]
    points = list(range(0, len(mean), max(1, len(mean) // 20)))
    if mean and points[-1] != len(mean) - 1:
        points.append(len(mean) - 1)
    figures: dict[str, Any] = {
        "seeds": run.num_seeds,
        "env_steps_per_seed": int(run.env_steps[-1]) if run.env_steps.size else 0,
        "wall_s": round(float(run.wall_time_s[-1]), 1) if run.wall_time_s.size else None,
        "status": run.status,
        "curve_steps": [int(run.env_steps[i]) for i in points],
        "curve_mean_return": [mean[i] for i in points],
    }
    if run.summary is not None:
        summary = run.summary
        figures["final_mean_return"] = summary.final_mean_return
        figures["final_std_return"] = summary.final_std_return
        figures["per_seed_final_return"] = summary.per_seed_final_return
        figures["steps_per_s"] = round(summary.steps_per_second)
        figures["compile_s"] = round(summary.compile_time_s, 1)
    finished_episodes = any(value is not None for value in mean)
    stopped = run.status == "interrupted"
    if (code == 0 and run.status == "finished") or (stopped and finished_episodes):
        if stopped:
            figures["stopped_by"] = f"the {stop_at:.0f} s limit"
        yield Row(name, "pass", figures, seconds=seconds)
        return
    why = "no episode finished" if code in (0, 143) else f"exit code {code}: {last_line(output)}"
    yield Row(name, "fail", figures, error=why, seconds=seconds)


def run_mean(returns) -> list[float]:
    """Mean over seeds (``returns`` is ``[S, U]``) of each update's or evaluation's return, NaN
    where no seed finished an episode."""
    import numpy as np

    with np.errstate(invalid="ignore"):
        counts = np.isfinite(returns).sum(0)
        sums = np.where(np.isfinite(returns), returns, 0.0).sum(0)
        return list(np.where(counts > 0, sums / np.maximum(counts, 1), np.nan))


GROUP_FUNCTIONS: dict[str, Callable[[bool, Path, float], Iterator[Row]]] = {
    "devices": devices_group,
    "doctor": doctor_group,
    "throughput": throughput_group("throughput"),
    "atari": atari_group,
    "atari-command": atari_command_group,
    "snake": snake_group,
    "learning": learning_group,
    "throughput-minatar": throughput_group("throughput-minatar"),
    "throughput-sac-td3": throughput_group("throughput-sac-td3"),
    "throughput-recurrent": throughput_group("throughput-recurrent"),
    "mujoco": mujoco_group,
    "evaluation": evaluation_group,
    "throughput-brax": throughput_group("throughput-brax"),
}


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("group", choices=GROUPS)
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--limit-s",
        type=float,
        required=True,
        help="seconds the parent gives this group; commands stop before it",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    rows_path = out / "rows" / f"{args.group}.jsonl"
    (out / "logs").mkdir(parents=True, exist_ok=True)  # the command groups' logs
    from purerl.runtime import configure_jax

    configure_jax()
    for row in GROUP_FUNCTIONS[args.group](args.quick, out, args.limit_s):
        append_row(rows_path, row)
        print(f"{row.name}: {row.status}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
