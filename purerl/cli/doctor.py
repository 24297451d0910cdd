"""``purerl doctor``: what works on this machine's devices, and how fast.

Runs a few seconds of each accelerated path on the devices JAX sees (GPUs when there are any,
else CPUs) and prints one table row per check as it finishes: pass or FAIL, the throughput, and
for a failure what went wrong and what to try. The block at the end is what to send back with a
bug report or a benchmark figure. ``--quick`` checks the same paths for pass/fail only: tiny
programs compiled cheaply, run side by side. Checks:

- ``train <algorithm>``: every registered algorithm on CartPole-v1 (its preset), one seed;
- ``vmap 8 seeds``: eight PPO agents in one program;
- ``seeds over devices``: PPO seeds split over every device with ``shard_map`` (needs 2+; on a
  CPU the doctor starts one CPU device per core);
- ``envpool xla``: EnvPool's XLA step inside a compiled ``lax.scan`` on the device (in a child
  process: this custom call has aborted processes on GPUs with recent JAX);
- ``envpool callback``: the same scan stepping EnvPool through a JAX host callback, the path
  purerl takes where the XLA step fails (child process);
- ``atari ppo``: one PPO update on Breakout-v5 (EnvPool and the Nature CNN; child process; on by
  default with a GPU, ``--atari`` on a CPU, where the Nature CNN's update is slow).

Exit code 0 when every check that ran passed, 1 otherwise.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Annotated, Any

import tyro

from purerl.cli.parsing import parse
from purerl.config import ConfigError
from purerl.options import hint

CHILD_TIMEOUT_S = 600


@dataclasses.dataclass(frozen=True)
class DoctorArgs:
    device: str = "auto"
    """Devices to check: auto (GPUs if JAX sees any, else CPU), cpu or gpu."""
    seconds: float = 2.0
    """Rough time each throughput measurement runs for (--quick measures none)."""
    atari: Annotated[bool | None, tyro.conf.DisallowNone, hint("on with a GPU, off on a CPU")] = (
        None
    )
    """Also run one PPO update on Breakout-v5 through EnvPool (--no-atari: not even with a
    GPU)."""
    envpool: bool = True
    """Check EnvPool's XLA step and its host-callback fallback (needs pip install
    'purerl[atari]')."""
    json: Annotated[str | None, hint("none", "PATH")] = None
    """Also write the results as JSON here."""
    quick: bool = False
    """Pass/fail of each path, no throughputs: the algorithms' tiny smoke configurations
    instead of their CartPole-v1 presets, one update per program, compiled cheaply, the checks
    side by side."""

    def __post_init__(self):
        if self.device not in ("auto", "cpu", "gpu"):
            raise ConfigError(f"--device must be auto, cpu or gpu, got {self.device!r}")
        if not 0.1 <= self.seconds <= 600:
            raise ConfigError(f"--seconds must lie in [0.1, 600], got {self.seconds}")


@dataclasses.dataclass
class Check:
    name: str
    ok: bool | None
    """True passed, False failed, None skipped."""
    figure: str = "-"
    note: str = ""
    rate: float | None = None


Job = tuple[str, Callable[[], Check]]
"""A check's name and the function that runs it."""


def versions() -> dict[str, str]:
    names = ["purerl", "jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "gymnax", "envpool"]
    found = {"python": platform.python_version()}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def timed_rate(run: Callable[[int], Any], units: int, seconds: float) -> float:
    """Units per second of ``run(call)``: one warm-up call, then calls for ``seconds``; the
    median call time."""
    import statistics

    import jax

    jax.block_until_ready(run(0))
    times, call, spent = [], 1, 0.0
    while spent < seconds or len(times) < 2:
        start = time.perf_counter()
        jax.block_until_ready(run(call))
        times.append(time.perf_counter() - start)
        spent += times[-1]
        call += 1
    return units / statistics.median(times)


def train_check(
    name: str, spec_name: str, num_seeds: int, args: DoctorArgs, devices: list
) -> Check:
    """Trains the CartPole-v1 preset (else, or with ``--quick``, the smoke configuration)."""
    import dataclasses as dc

    import jax

    from purerl import algos
    from purerl.core import parallel, program

    spec = algos.get(spec_name)
    cfg = spec.smoke if args.quick else spec.presets.get("CartPole-v1", spec.smoke)
    cfg = dc.replace(cfg, num_seeds=num_seeds)
    placement = None
    if len(devices) > 1:
        placement = parallel.make_placement(devices, "seeds", num_seeds, cfg.num_envs)
    algo = spec.make(cfg).algo
    updates = 1 if args.quick else max(1, min(cfg.num_updates, 8))
    agents = program.init_agents(algo, list(range(num_seeds)), placement)
    chunk = program.compile_chunk(algo, agents, updates, placement=placement)
    state = {"agents": agents}

    def run(call: int) -> Any:
        state["agents"], metrics = chunk(state["agents"])
        return metrics

    if args.quick:  # pass/fail: the program ran twice (a throughput beside compiles would mislead)
        jax.block_until_ready([run(0), run(1)])
        return Check(name, True)
    rate = timed_rate(run, updates * cfg.env_steps_per_update * num_seeds, args.seconds)
    return Check(name, True, f"{rate:,.0f} steps/s", rate=rate)


CHILD_ENVPOOL = """
import json, sys, time
import jax, jax.numpy as jnp
from purerl.runtime import configure_jax
configure_jax()
from purerl import envs
num_envs, steps = 8, int(sys.argv[1])
def check(mode):
    env = envs.make("Breakout-v5", num_envs, step_mode=mode)
    assert env.step_mode == mode, env.step_mode
    @jax.jit
    def rollout(key):
        state, obs = env.reset(key, None)
        def step(carry, key):
            state, total = carry
            action = jax.random.randint(key, (num_envs,), 0, env.spec.action_space.num_actions)
            state, out = env.step(key, state, action, None)
            return (state, total + out.obs.astype(jnp.float32).mean()), None
        (state, total), _ = jax.lax.scan(step, (state, 0.0), jax.random.split(key, steps))
        return total
    jax.block_until_ready(rollout(jax.random.key(0)))
    start = time.perf_counter()
    total = float(rollout(jax.random.key(1)))
    seconds = time.perf_counter() - start
    print(json.dumps({"rate": steps * num_envs * 4 / seconds, "finite": total == total,
                      "device": str(jax.devices()[0])}), flush=True)
for mode in sys.argv[2].split(","):
    check(mode)
"""
"""EnvPool's step modes given (comma-separated) one after another: one result line each."""

CHILD_ATARI = """
import json, sys, time
import jax
from purerl.runtime import configure_jax
configure_jax()
from purerl.core import program
from purerl.algos.ppo import SPEC
import dataclasses
cfg = dataclasses.replace(SPEC.presets["Breakout-v5"], num_envs=8, rollout_len=32,
                          num_minibatches=2, num_epochs=1, total_timesteps=8 * 32 * 2)
algo = SPEC.make(cfg).algo
agents = program.init_agents(algo, [0])
chunk = program.compile_chunk(algo, agents, 1)
agents, metrics = chunk(agents)
jax.block_until_ready(metrics)
start = time.perf_counter()
agents, metrics = chunk(agents)
loss = float(jax.device_get(metrics["loss/total"])[0, 0])
seconds = time.perf_counter() - start
print(json.dumps({"rate": 8 * 32 * 4 / seconds, "finite": loss == loss,
                  "device": str(jax.devices()[0])}))
"""


def child_check(name: str, code: str, args: Sequence[str], platform_env: dict) -> Check:
    """Runs ``code`` in a fresh Python: a crash there (an abort in a custom call) is a failed
    check, not a crashed doctor."""
    return child_checks_in_one([name], code, args, platform_env)[0]


def child_checks_in_one(
    names: Sequence[str],
    code: str,
    args: Sequence[str],
    platform_env: dict,
    measured: bool = True,
) -> list[Check]:
    """Runs ``code``, which prints one JSON result line per check of ``names`` in turn, in one
    fresh Python; the checks without a line fail with the reason the process ended. Without
    ``measured`` the checks are pass/fail only."""
    from purerl.runtime import child_process_env

    env = child_process_env(**platform_env)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return [Check(name, False, note=f"no result within {CHILD_TIMEOUT_S} s") for name in names]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    # A process that failed after its last line failed in that check (its teardown, say).
    done = len(lines) if proc.returncode == 0 else min(len(lines), len(names) - 1)
    checks = [
        result_check(name, json.loads(line), measured)
        for name, line in zip(names, lines[:done], strict=False)
    ]
    return checks + [failed_child(name, proc) for name in names[len(checks) :]]


def result_check(name: str, result: dict[str, Any], measured: bool = True) -> Check:
    if not result["finite"]:
        return Check(name, False, note="ran, but produced non-finite values")
    if not measured:
        return Check(name, True)
    return Check(name, True, f"{result['rate']:,.0f} frames/s", rate=result["rate"])


def failed_child(name: str, proc: subprocess.CompletedProcess) -> Check:
    """The check a child process ended before reporting."""
    why = error_line(proc.stderr) or f"exit code {proc.returncode}"
    if proc.returncode < 0:
        why = f"the process died of signal {-proc.returncode} ({why})"
    if "No module named 'envpool'" in proc.stderr or "needs EnvPool" in proc.stderr:
        return Check(name, None, note="skipped: pip install 'purerl[atari]' to check it")
    return Check(name, False, note=why + "; see purerl docs/performance.md (EnvPool on GPU)")


class Shared:
    """One call of ``fn`` for several threads: the first to ask runs it, the others wait."""

    def __init__(self, fn: Callable[[], Any]):
        self.fn, self.lock, self.result = fn, threading.Lock(), None

    def __call__(self) -> Any:
        with self.lock:
            if self.result is None:
                self.result = self.fn()
        return self.result


def child_platform_env(kind: str) -> dict[str, str]:
    """Children run on the devices checked: a CPU check pins them to the CPU; on a GPU they take
    JAX's default, the GPU (``JAX_PLATFORMS=gpu`` also asks jax 0.11 for ROCm, and fails on an
    NVIDIA machine)."""
    return {"JAX_PLATFORMS": "cpu"} if kind == "cpu" else {}


def error_line(stderr: str) -> str | None:
    """The line of a child's stderr that says what went wrong: the last exception line
    (``ValueError: ...``) of its traceback, else its last line."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line):
            return line[:160]
    return lines[-1][:160] if lines else None


def run_checks(args: DoctorArgs) -> tuple[list[Check], dict[str, Any]]:
    """Runs the checks, printing each row as it finishes; the checks in order and the machine's
    description."""
    import jax

    from purerl.core import parallel

    if args.device in ("auto", "cpu"):
        # One CPU device per core, so that "seeds over devices" shows what that split gains
        # beside "vmap 8 seeds" on one (a no-op once JAX has started, or with a GPU).
        parallel.request_cpu_devices(parallel.usable_cores())
    devices = parallel.select_devices(args.device, None)
    kind = devices[0].platform
    info = {
        "versions": versions(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPU cores",
        "backend": jax.default_backend(),
        "devices": [f"{d} ({d.device_kind})" for d in devices],
    }
    print(f"devices: {', '.join(info['devices'])}\n")
    print("| check | result | throughput | note |\n|---|---|---:|---|", flush=True)
    train = train_checks(args, devices)
    children = child_checks(args, kind)
    if args.quick:
        # The child processes run beside the compiles here, and the compiles (XLA's, which
        # leave Python free) beside each other, one per core.
        workers = parallel.usable_cores()
        return run_jobs([(train, workers), (children, max(1, len(children)))]), info
    # One at a time, so that no measurement shares the machine with another check.
    return run_jobs([(train + children, 1)]), info


def run_jobs(groups: list[tuple[list[Job], int]]) -> list[Check]:
    """Runs each group of checks on its own number of threads, printing each row as its check
    finishes; returns the checks in the order given."""
    pools = [concurrent.futures.ThreadPoolExecutor(workers) for _, workers in groups]
    futures = [
        pool.submit(attempt, name, fn)
        for pool, (jobs, _) in zip(pools, groups, strict=True)
        for name, fn in jobs
    ]
    try:
        for future in concurrent.futures.as_completed(futures):
            print(format_row(future.result()), flush=True)
    finally:
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)
    return [future.result() for future in futures]


def on_device(fn: Callable[[], Check], device: Any) -> Callable[[], Check]:
    """``fn`` with ``device`` as JAX's default device (a per-thread setting)."""

    def call() -> Check:
        import jax

        with jax.default_device(device):
            return fn()

    return call


def attempt(name: str, fn: Callable[[], Check]) -> Check:
    """``fn()``, or a failed check naming the exception: a failing path is a result to report,
    not a crash."""
    try:
        return fn()
    except Exception as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        return Check(name, False, note=f"{type(err).__name__}: {first[:160]}")


def train_checks(args: DoctorArgs, devices: list) -> list[Job]:
    """The in-process checks: each algorithm, vmapped seeds, seeds over the devices."""
    from purerl import algos

    def on_one(name: str, algo: str, num_seeds: int) -> Job:
        check = functools.partial(train_check, name, algo, num_seeds, args, devices[:1])
        return name, on_device(check, devices[0])

    checks = [on_one(f"train {name}", name, 1) for name in algos.names()]
    checks.append(on_one("vmap 8 seeds", "ppo", 8))
    if len(devices) > 1:
        name = f"seeds over {len(devices)} devices"
        seeds = len(devices) * max(2, -(-8 // len(devices)))  # 8 or more, 2 or more each
        checks.append((name, functools.partial(train_check, name, "ppo", seeds, args, devices)))
    else:
        skipped = Check("seeds over devices", None, note="skipped: JAX sees one device")
        checks.append(("seeds over devices", lambda: skipped))
    return checks


def child_checks(args: DoctorArgs, kind: str) -> list[Job]:
    """The checks in child processes: EnvPool's two step modes (one process each; with
    --quick one process for both, the host callback first, as the XLA step is the one that can
    abort it), and the Atari update."""
    platform_env = child_platform_env(kind)
    checks: list[Job] = []
    if args.envpool and args.quick:
        names = ["envpool callback", "envpool xla"]
        code_args = ["64", "callback,xla"]
        both = Shared(
            lambda: {
                check.name: check
                for check in child_checks_in_one(
                    names, CHILD_ENVPOOL, code_args, platform_env, measured=False
                )
            }
        )
        checks += [(name, lambda n=name: both()[n]) for name in ("envpool xla", "envpool callback")]
    elif args.envpool:
        for mode in ("xla", "callback"):
            name = f"envpool {mode}"
            code_args = ["256", mode]
            checks.append(
                (name, functools.partial(child_check, name, CHILD_ENVPOOL, code_args, platform_env))
            )
    if args.atari if args.atari is not None else kind == "gpu":
        atari = functools.partial(child_check, "atari ppo", CHILD_ATARI, [], platform_env)
        checks.append(("atari ppo", atari))
    return checks


QUICK_XLA_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false")
"""XLA settings of --quick: compiling makes up most of a quick check, and these cut its CPU
time to about a quarter (XLA:CPU's MLIR fusion emitters are the larger part). The programs
run slower, which a quick check's throughputs do not claim to show."""


def quick_compiles() -> None:
    """Adds ``QUICK_XLA_FLAGS`` to ``XLA_FLAGS`` for this process and its children (settings
    already there win). Takes effect only before JAX starts its backend, as ``main`` calls
    it."""
    flags = os.environ.get("XLA_FLAGS", "").split()
    given = {flag.partition("=")[0] for flag in flags}
    flags += [flag for flag in QUICK_XLA_FLAGS if flag.partition("=")[0] not in given]
    os.environ["XLA_FLAGS"] = " ".join(flags)


def format_row(check: Check) -> str:
    status = {True: "pass", False: "FAIL", None: "skipped"}[check.ok]
    return f"| {check.name} | {status} | {check.figure} | {check.note} |"


def main(argv: Sequence[str], prog: str) -> int:
    args = parse(DoctorArgs, argv, prog, __doc__)
    if args.quick:
        quick_compiles()
    checks, info = run_checks(args)
    if args.quick:
        print(f"\n--quick checks pass/fail only; {prog} without it measures throughputs.")
    print("\nsend back:")
    report = {**info, "checks": [dataclasses.asdict(c) for c in checks]}
    versions_line = ", ".join(f"{k} {v}" for k, v in info["versions"].items())
    print(f"  {info['machine']}; {info['backend']} backend; {versions_line}")
    print(f"  devices: {', '.join(info['devices'])}")
    for check in checks:
        print(f"  {check.name}: {format_row(check).split(' | ', 1)[1].rstrip(' |')}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    return 0 if all(c.ok is not False for c in checks) else 1
