"""The Atari learning run a lent GPU does in one call: PPO on Breakout-v5 at SLM Lab's protocol.

    python -m benchmarks.device.atari_run --out "$OUT"                 # on the GPU: 10M frames
    python -m benchmarks.device.atari_run --out DIR --dry-run          # here: 2 tiny updates

In order, within ``--budget-s`` seconds of wall time:

1. ``install``: what this Python lacks, from the carried bundle (as ``benchmarks.device`` does;
   skipped by ``--dry-run``, which uses this Python as it is);
2. ``train``: ``purerl train ppo --preset Breakout-v5-slm --num-envs 16`` (``--preset`` picks
   another game's). Where the budget would run out first, the run gets SIGINT (it saves a
   checkpoint and stops) with ``--reserve-s`` seconds left for the rest;
3. ``eval``: ``purerl eval`` of the final checkpoint, greedy, over whole games; then ``video``:
   a GIF of the first ``--video-steps`` steps of one episode;
4. what comes back, under ``--out`` (at most 8 files, as a device run returns): ``report.json``
   (times, status, returns, the device), ``log.txt`` (each step's output),
   ``run/config.json``, ``run/metrics.jsonl`` and ``run/summary.json`` (a run directory without
   checkpoints, which ``benchmarks.table --import-run`` reads), ``returns_smoothed.png`` and
   ``episode.gif``; when the run did not finish, ``resume.tar.gz`` holds its files and newest
   checkpoint instead of ``run/`` (split into ``resume.tar.gz.0``, ``.1``, ... where it passes
   16 MiB: a Nature CNN's weights and Adam moments are about 20 MiB), which
   ``--resume resume.tar.gz`` continues on the next call (with ``--total-timesteps``, a budget
   longer than one call: SLM Lab's 10M agent steps).

Exit code 0 when the run finished and was evaluated, 1 otherwise (what was reached still comes
back).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from benchmarks.device.bundle import DEFAULT_OUT, ROOT
from benchmarks.device.checks import purerl_command, run_command

RETURNED_MIB = 16.0
"""The largest file a device run brings back."""
RETURNED_FILES = 8
"""The most files a device run brings back."""
PART_BYTES = int((RETURNED_MIB - 0.25) * 2**20)
"""The size of each part of a split ``resume.tar.gz``."""
RUN_FILES = ("config.json", "metrics.jsonl", "summary.json")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.device.atari_run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="new or empty folder")
    parser.add_argument("--preset", default="Breakout-v5-slm", help="a PPO preset")
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument(
        "--total-timesteps", type=int, default=None, help="agent steps (default: the preset's)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget-s", type=float, default=585.0, help="wall time for all steps")
    parser.add_argument(
        "--reserve-s", type=float, default=75.0, help="seconds kept for eval and copying"
    )
    parser.add_argument("--eval-episodes", type=int, default=8)
    parser.add_argument("--video-steps", type=int, default=1500, help="most steps in the GIF")
    parser.add_argument("--run-dir", default=None, help="where to train (default: a temp dir)")
    parser.add_argument(
        "--resume",
        default=None,
        metavar="TAR",
        help="continue the run an earlier call brought back as resume.tar.gz (with "
        "--total-timesteps, past its budget: a 10M-step run over several calls)",
    )
    parser.add_argument("--bundle", default=str(DEFAULT_OUT))
    parser.add_argument("--site", default=str(ROOT / "build" / "device-site"))
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="no install, 2 updates of 16 steps on 2 envs: the whole path at toy size",
    )
    args = parser.parse_args(argv)
    if args.dry_run:
        args.num_envs = min(args.num_envs, 2)
        args.total_timesteps = args.total_timesteps or 2 * 16 * args.num_envs
        args.eval_episodes = min(args.eval_episodes, 2)
        args.video_steps = min(args.video_steps, 20)
    return args


class Steps:
    """Each step's seconds, exit code and output, written to ``report.json``/``log.txt`` as it
    goes, so that a call cut short still brings back what happened."""

    def __init__(self, out: Path, header: dict):
        self.out, self.report = out, {"header": header, "steps": {}}
        self.log = (out / "log.txt").open("a", encoding="utf-8")

    def record(self, name: str, **fields) -> None:
        self.report["steps"][name] = fields
        (self.out / "report.json").write_text(json.dumps(self.report, indent=1) + "\n")

    def output(self, name: str, text: str) -> None:
        self.log.write(f"===== {name}\n{text}\n")
        self.log.flush()


def run(command: list[str], env: dict[str, str], stop_at: float) -> tuple[int, str, float]:
    """Runs ``command`` until it ends or ``stop_at`` (a ``time.monotonic`` value) passes; then
    SIGINT (purerl saves and stops), 45 s later SIGKILL. Returns exit code, output, seconds."""
    limit = stop_at - time.monotonic()
    return run_command(command, limit, env, signal.SIGINT, grace_s=45.0, tail_chars=None)


def device_header() -> dict:
    """The date, Python and (from a child, so this process never starts JAX) the devices."""
    code = (
        "import json, jax; print(json.dumps({'jax': jax.__version__, 'backend': "
        "jax.default_backend(), 'devices': [f'{d.platform}:{d.id} ({d.device_kind})' "
        "for d in jax.devices()]}))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    header = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "python": sys.version.split()[0],
        "cpu_cores": os.cpu_count(),
    }
    try:
        header.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    except (IndexError, ValueError):
        header["devices"] = f"unknown: {proc.stderr.strip()[-300:]}"
    return header


def newest_checkpoint(run_dir: Path) -> Path | None:
    folders = [p for p in (run_dir / "checkpoints").glob("*") if p.name.isdigit()]
    return max(folders, key=lambda p: int(p.name), default=None)


def bring_back(run_dir: Path, out: Path, finished: bool, scratch: Path) -> list[str]:
    """Copies the run's small files under ``out``: ``run/`` for a finished run, else
    ``resume.tar.gz`` (its files and newest checkpoint) in as many parts as its size needs."""
    kept = []
    if (run_dir / "returns_smoothed.png").is_file():
        shutil.copyfile(run_dir / "returns_smoothed.png", out / "returns_smoothed.png")
        kept.append("returns_smoothed.png")
    checkpoint = newest_checkpoint(run_dir)
    if finished or checkpoint is None:
        (out / "run").mkdir(exist_ok=True)
        for name in RUN_FILES:
            if (run_dir / name).is_file():
                shutil.copyfile(run_dir / name, out / "run" / name)
                kept.append(f"run/{name}")
        return kept
    whole = scratch / f"resume-{os.getpid()}.tar.gz"
    with tarfile.open(whole, "w:gz") as archive:
        for name in RUN_FILES:
            if (run_dir / name).is_file():
                archive.add(run_dir / name, arcname=name)
        archive.add(checkpoint, arcname=f"checkpoints/{checkpoint.name}")
    parts = -(-whole.stat().st_size // PART_BYTES)
    room = RETURNED_FILES - sum(p.is_file() for p in out.rglob("*"))
    if parts == 1:
        shutil.move(whole, out / "resume.tar.gz")
        return [*kept, "resume.tar.gz"]
    if parts <= room:
        with whole.open("rb") as source:
            for index in range(parts):
                (out / f"resume.tar.gz.{index}").write_bytes(source.read(PART_BYTES))
                kept.append(f"resume.tar.gz.{index}")
    whole.unlink()
    return kept


def resume_parts(path: Path) -> list[Path]:
    """``resume.tar.gz`` itself, or its parts ``resume.tar.gz.0``, ``.1``, ... in order."""
    if path.is_file():
        return [path]
    numbered = {p.suffix[1:]: p for p in path.parent.glob(path.name + ".*")}
    parts = [numbered[str(i)] for i in range(len(numbered)) if str(i) in numbered]
    if not parts or len(parts) != sum(key.isdigit() for key in numbered):
        raise FileNotFoundError(f"{path} (or its parts {path.name}.0, .1, ...) not found")
    return parts


def extract_resume(path: Path, run_dir: Path) -> None:
    """Unpacks a brought-back ``resume.tar.gz`` (whole or in parts) into ``run_dir``."""
    parts = resume_parts(path)
    whole = run_dir.parent / f"{run_dir.name}.resume.tar.gz"
    with whole.open("wb") as target:
        for part in parts:
            target.write(part.read_bytes())
    run_dir.mkdir(parents=True)
    with tarfile.open(whole) as archive:
        archive.extractall(run_dir, filter="data")
    whole.unlink()


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    start = time.monotonic()
    deadline = start + args.budget_s
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        print(f"error: --out {out} is not empty; name a new or empty folder", file=sys.stderr)
        return 2
    steps = Steps(out, {})
    env = dict(os.environ)
    if not args.dry_run:
        from benchmarks.device import install

        row, env = install.install(Path(args.bundle), Path(args.site))
        steps.record("install", status=row.status, seconds=round(row.seconds or 0, 1),
                     error=row.error)  # fmt: skip
        if row.status != "pass":
            return 1
    env["PURERL_COMPILATION_CACHE"] = "0"  # a fresh machine: compile time is part of the run

    scratch = Path(args.run_dir) if args.run_dir else Path(os.environ.get("TMPDIR", "/tmp"))
    run_dir = scratch / f"atari-run-{os.getpid()}" if not args.run_dir else scratch
    if args.resume:
        # A run an earlier call stopped: its files and newest checkpoint, continued here.
        try:
            extract_resume(Path(args.resume), run_dir)
        except (FileNotFoundError, tarfile.TarError) as error:
            print(f"error: --resume: {error}; name the resume.tar.gz an earlier call brought "
                  "back", file=sys.stderr)  # fmt: skip
            return 2
        command = [*purerl_command(), "train", "--resume", str(run_dir), "--no-progress"]
    else:
        command = [*purerl_command(), "train", "ppo", "--preset", args.preset,
                   "--num-envs", str(args.num_envs), "--seed", str(args.seed),
                   "--run-dir", str(run_dir), "--no-progress"]  # fmt: skip
    if args.total_timesteps:
        command += ["--total-timesteps", str(args.total_timesteps)]
    if args.dry_run and not args.resume:
        command += ["--rollout-len", "16", "--num-minibatches", "2"]
    code, output, seconds = run(command, env, stop_at=deadline - args.reserve_s)
    steps.output("train", " ".join(command) + "\n" + output)
    summary = run_dir / "summary.json"
    finished = code == 0 and summary.is_file()
    train = {"status": "finished" if finished else "stopped", "exit_code": code,
             "seconds": round(seconds, 1), "command": " ".join(command[1:])}  # fmt: skip
    if summary.is_file():
        facts = json.loads(summary.read_text())
        train.update({key: facts.get(key) for key in (
            "num_updates", "total_frames", "final_mean_return", "final_std_return",
            "wall_time_s", "compile_time_s", "steps_per_second")})  # fmt: skip
    elif (run_dir / "metrics.jsonl").is_file():
        rows = (run_dir / "metrics.jsonl").read_text().splitlines()
        train["metrics_rows"] = len(rows)
        train["last_row"] = json.loads(rows[-1]) if rows else None
    steps.record("train", **train)

    evaluated = False
    if newest_checkpoint(run_dir) is not None:
        # The returns over whole games (27k steps, the protocol's cap), then a short GIF.
        base = [*purerl_command(), "eval", str(run_dir)]
        for name, extra in [
            ("eval", ["--episodes", str(args.eval_episodes), "--max-steps", "27000"]),
            ("video", ["--episodes", "1", "--video", str(out / "episode.gif"),
                       "--max-steps", str(args.video_steps)]),
        ]:  # fmt: skip
            code, output, seconds = run([*base, *extra], env, stop_at=deadline - 10)
            steps.output(name, " ".join([*base, *extra]) + "\n" + output)
            lines = [line for line in output.splitlines() if line.strip()]
            steps.record(name, exit_code=code, seconds=round(seconds, 1), output=lines[-6:])
            evaluated = code == 0 if name == "eval" else evaluated
    kept = bring_back(run_dir, out, finished, scratch)
    # Last: starting JAX here would take the device from the run for seconds.
    steps.report["header"] = device_header()
    steps.record("returned", files=kept, seconds=round(time.monotonic() - start, 1))
    if not args.run_dir:
        shutil.rmtree(run_dir, ignore_errors=True)
    return 0 if finished and evaluated else 1


if __name__ == "__main__":
    sys.exit(main())
