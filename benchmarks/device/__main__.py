"""One prepared check of purerl on a machine's accelerator, for offline GPU nodes.

    python -m benchmarks.device --out DIR             # GPU-sized checks, about 8 minutes
    python -m benchmarks.device --quick --out DIR     # toy sizes, about 3 minutes on a CPU

On a connected machine first: ``python -m benchmarks.device.bundle`` (the wheels such an image
lacks, into build/device-bundle). Then, on the GPU machine, with the tree and that folder:

1. ``bundle size``: the tree plus the bundle fit the 64 MiB a device run carries;
2. ``install``: what this Python lacks, from the bundle, beside the preinstalled JAX (never
   over it), and purerl from the tree (``benchmarks/device/install.py``);
3. groups of checks, each in its own process under its own time limit
   (``benchmarks/device/checks.py``): ``devices``; ``doctor`` (``purerl doctor``);
   ``throughput`` (PPO, DQN, PQN at GPU-sized batches beside benchmarks/reference.py);
   ``atari`` (benchmarks.atari's rows and the headline command at 16 and 64 envs); ``snake``
   (4,096 to 65,536 games); ``learning`` (PPO on Breakout-MinAtar, 4 seeds); then, past the
   default budget (``--only`` them in a second call), ``throughput-sac-td3`` (1,024 envs),
   ``throughput-recurrent`` (the GRU presets at 2,048 envs), ``mujoco`` (PPO on HalfCheetah-v4
   through EnvPool), ``evaluation`` (PPO with ``--eval-every``) and ``throughput-brax``
   (skipped where Brax is not installed). On a CPU ``--quick`` runs two groups at a time.

A crash, a hang or an exception ends a check as a ``fail`` row with its error and the next
check runs; a row a group planned and never wrote is reported as not run, with why. Writes
``DIR/report.json`` (``{"header": ..., "rows": [...]}``, one row per check: ``name``,
``status``, ``figures``, ``error`` or ``why``) and ``DIR/report.md`` (the same as a table).
Exit code 0 when no row failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import datetime
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.device import checks, install, report
from benchmarks.device.bundle import DEFAULT_OUT, LIMIT_MIB, ROOT, size_problem
from benchmarks.device.report import Row, last_line

# Seconds each group may take: (full, quick). A group also stops where the whole check's
# budget ends.
GROUP_LIMITS = {
    "devices": (45, 45),
    "doctor": (120, 120),
    "throughput": (130, 90),
    "atari": (120, 60),
    "atari-command": (100, 60),
    "snake": (40, 30),
    "learning": (150, 60),
    "throughput-minatar": (130, 60),
    "throughput-sac-td3": (120, 60),
    "throughput-recurrent": (90, 60),
    "mujoco": (90, 45),
    "evaluation": (60, 50),
    "throughput-brax": (150, 60),
}

# Seconds for the whole check unless --budget-s says otherwise.
FULL_BUDGET_S = 450.0
QUICK_BUDGET_S = 240.0


@dataclasses.dataclass(frozen=True)
class DeviceArgs:
    out: str = ""
    quick: bool = False
    bundle: str = str(DEFAULT_OUT)
    site: str = str(ROOT / "build" / "device-site")
    budget_s: float | None = None
    only: tuple[str, ...] = ()


def parse(argv: list[str]) -> DeviceArgs:
    """Command-line arguments (argparse: this runs before anything beyond the standard library
    is installed)."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.device",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        default="",
        metavar="DIR",
        help="folder for report.json, report.md and the checks' run directories; "
        "new or empty (default: runs/device-<time>)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="toy sizes: every check, a few minutes on a CPU; figures are not representative",
    )
    parser.add_argument(
        "--bundle",
        default=str(DEFAULT_OUT),
        metavar="DIR",
        help="the folder python -m benchmarks.device.bundle wrote (default: build/device-bundle)",
    )
    parser.add_argument(
        "--site",
        default=str(ROOT / "build" / "device-site"),
        metavar="DIR",
        help="folder the missing packages are installed into, emptied first "
        "(default: build/device-site)",
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds for the whole check; groups that would start after it "
        f"are reported as not run (default: {FULL_BUDGET_S:.0f}, quick {QUICK_BUDGET_S:.0f})",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        default=(),
        choices=checks.GROUPS,
        metavar="GROUP",
        help=f"run only these groups ({', '.join(checks.GROUPS)}), in this order; devices "
        "always runs first: the report's header names the machine from it",
    )
    found = parser.parse_args(argv)
    if found.budget_s is not None and found.budget_s <= 0:
        parser.error(f"--budget-s must be positive, got {found.budget_s:g}")
    return DeviceArgs(
        found.out, found.quick, found.bundle, found.site, found.budget_s, tuple(found.only)
    )


def group_command(group: str, args: DeviceArgs, out: Path, limit: float) -> list[str]:
    command = [sys.executable, "-m", "benchmarks.device.checks", group, "--out", str(out)]
    command += ["--limit-s", f"{limit:.0f}"]
    return [*command, "--quick"] if args.quick else command


def run_group(group: str, args: DeviceArgs, out: Path, env: dict, limit: float) -> list[Row]:
    """Runs one group in its own process; returns its rows, with a ``fail`` row for each
    planned row it did not write."""
    log = out / "logs" / f"{group}.txt"
    log.parent.mkdir(parents=True, exist_ok=True)
    command = group_command(group, args, out, limit)
    start = time.perf_counter()
    with log.open("w") as sink:
        proc = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = proc.wait(timeout=limit)
            why = None if code == 0 else exit_reason(code)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            why = f"its process ran past the group's {limit:.0f} s limit and was killed"
        # Anything the group started (a training command, EnvPool's workers) goes too.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    seconds = time.perf_counter() - start
    rows = report.read_rows(out / "rows" / f"{group}.jsonl")
    written = {row.name for row in rows}
    missing = [name for name in checks.plan(group, args.quick) if name not in written]
    if why is not None:
        why = f"{why}; last output: {last_line(log.read_text())}"
    elif missing:
        why = "its process ended without writing it"
    for name in missing:
        rows.append(Row(name, "fail", error=f"did not run: {why}", seconds=seconds))
    if why is not None and not missing:
        rows.append(Row(f"{group} process", "fail", error=why, seconds=seconds))
    return rows


def run_groups(
    groups: list[str], args: DeviceArgs, out: Path, env: dict, deadline: float, workers: int
) -> dict[str, list[Row]]:
    """Runs ``groups`` in their order, ``workers`` at a time, each after the group whose rows
    it reads (``checks.READS``); returns each group's rows. A group that would start with less
    than its limit (or 30 s) left before ``deadline`` is reported as not run."""
    found: dict[str, list[Row]] = {}
    pending = list(groups)
    running: dict[concurrent.futures.Future, str] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        while pending or running:
            while pending and len(running) < workers:
                busy = {*pending, *running.values()}
                ready = [g for g in pending if checks.READS.get(g) not in busy]
                if not ready:  # each waits for a running group
                    break
                group = ready[0]
                pending.remove(group)
                limit = GROUP_LIMITS[group][1 if args.quick else 0]
                left = deadline - time.perf_counter()
                if left < min(limit, 30):
                    found[group] = not_run(group, args)
                    continue
                future = pool.submit(run_group, group, args, out, env, min(limit, left))
                running[future] = group
            if not running:
                continue
            done, _ = concurrent.futures.wait(
                running, return_when=concurrent.futures.FIRST_COMPLETED
            )
            for future in done:
                group = running.pop(future)
                found[group] = future.result()
                for row in found[group]:
                    print(f"{row.name}: {row.status} {row.error or ''}", flush=True)
    return found


def not_run(group: str, args: DeviceArgs) -> list[Row]:
    budget = budget_of(args)
    why = f"not run: the check's {budget:.0f} s budget was spent"
    return [Row(name, "skip", why=why) for name in checks.plan(group, args.quick)]


def budget_of(args: DeviceArgs) -> float:
    return args.budget_s or (QUICK_BUDGET_S if args.quick else FULL_BUDGET_S)


def exit_reason(code: int) -> str:
    if code < 0:
        return f"its process died of signal {-code} ({signal.Signals(-code).name})"
    return f"its process exited with code {code}"


def header(args: DeviceArgs, rows: list[Row], wall_s: float) -> dict:
    devices = next((row.figures for row in rows if row.name == "devices"), {})
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "quick" if args.quick else "full",
        "backend": devices.get("backend", "unknown"),
        "devices": devices.get("devices", []),
        "jax": devices.get("jax", "unknown"),
        "python": devices.get("python", sys.version.split()[0]),
        "cpu_cores": os.cpu_count(),
        "wall_s": round(wall_s, 1),
    }


def main(args: DeviceArgs) -> int:
    begin = time.perf_counter()
    budget = budget_of(args)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out or ROOT / "runs" / f"device-{stamp}").resolve()
    if out.exists() and any(out.iterdir()):
        print(f"error: {out} is not empty; give --out a new folder", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    bundle = Path(args.bundle).resolve()
    rows = [size_row(bundle)]
    print(f"{rows[-1].name}: {rows[-1].status}", flush=True)
    install_row, env = install.install(bundle, Path(args.site).resolve())
    if args.quick:
        # Toy sizes check that every path runs; their figures mean little, so XLA spends less
        # time optimising what it compiles (about a third less compile time on a CPU).
        flags = env.get("XLA_FLAGS", "")
        env["XLA_FLAGS"] = f"{flags} --xla_backend_optimization_level=0".strip()
    rows.append(install_row)
    print(f"install: {install_row.status} {install_row.error or ''}", flush=True)
    # The devices group always runs first: the report's header names the machine from it.
    deadline = begin + budget
    found = run_groups(["devices"], args, out, env, deadline, workers=1)
    devices = next((row.figures for row in found["devices"] if row.name == "devices"), {})
    # On a CPU the quick check runs two groups at a time: its figures are not representative
    # anyway, and most of its time is single-threaded compiling. A GPU runs one at a time.
    workers = 2 if args.quick and devices.get("backend") == "cpu" else 1
    groups = [g for g in dict.fromkeys(args.only or checks.GROUPS) if g != "devices"]
    found.update(run_groups(groups, args, out, env, deadline, workers))
    for group in ["devices", *groups]:
        rows += found[group]
    wall = time.perf_counter() - begin
    report.write(out, rows, header(args, rows, wall))
    print(f"\n{(out / 'report.md').read_text()}")
    print(f"report: {out / 'report.json'}, {out / 'report.md'}")
    return 1 if any(row.status == "fail" for row in rows) else 0


def size_row(bundle: Path) -> Row:
    total, problem = size_problem(bundle, LIMIT_MIB)
    figures = {"tree_plus_bundle_mib": round(total, 1), "limit_mib": LIMIT_MIB}
    if not bundle.exists():
        figures["bundle"] = f"none at {bundle} (python -m benchmarks.device.bundle makes it)"
    if problem:
        return Row("bundle size", "fail", figures, error=problem)
    return Row("bundle size", "pass", figures)


if __name__ == "__main__":
    sys.exit(main(parse(sys.argv[1:])))
