"""What needs a real process: the console command and the scripts, signals, killed runs and
their locks."""

import json
import os
import runpy
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from purerl import algos
from purerl.options import options_for
from purerl.run import rundir
from tests.helpers import DQN_TINY_ARGS, ROOT, TINY_ARGS, metric_rows, run_cli, run_process


def start(*args):
    """``python -m purerl ARGS`` in the background."""
    return subprocess.Popen(
        [sys.executable, "-m", "purerl", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def wait_for(condition, proc, timeout=300):
    deadline = time.monotonic() + timeout
    while not condition():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def metric_lines(run_dir):
    path = run_dir / "metrics.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


EVERY_ALGORITHM = """
import sys
from purerl.cli import main
from purerl.run import session

HEAVY = ("orbax", "matplotlib", "gymnax", "gymnasium", "scipy", "PIL", "tensorboardX", "wandb",
         "ray", "envpool", "brax", "mujoco")

def loaded():
    return sorted({name.partition(".")[0] for name in sys.modules} & set(HEAVY))

for name in sys.argv[1::3]:
    main(["train", name, "--help"])
print(f"after help: {loaded()}", flush=True)

real_train = session.train

def train(*args, **kwargs):
    print(f"training starts: orbax {'orbax' in loaded()}", flush=True)
    return real_train(*args, **kwargs)

session.train = train
for name, config, run_dir in zip(*[iter(sys.argv[1:])] * 3):
    code = main(["train", name, "--config", config, "--run-dir", run_dir, "--no-progress"])
    print(f"{name} exit {code}", flush=True)
"""


@pytest.mark.slow
def test_a_tiny_run_of_every_algorithm_from_its_config_file_in_a_fresh_process(tmp_path):
    # One fresh interpreter trains each registered algorithm in turn from a config file, as
    # the command does (``python -m purerl`` itself: the other tests of this module).
    argv = []
    for name in algos.names():
        spec = algos.get(name)
        folder = tmp_path / name
        folder.mkdir()
        rundir.write_config(folder, rundir.ConfigRecord.new(name, spec.smoke, options_for(spec)()))
        argv += [name, folder / "config.json", folder / "run"]
    proc = run_process("-c", EVERY_ALGORITHM, *argv)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("final mean return") == len(algos.names()), proc.stdout
    # Help loads no environment, checkpoint, plotting or logging library; the first run loads
    # orbax only once its training is under way (``purerl.run.prefetch``), after that it is in.
    assert "after help: []" in proc.stdout, proc.stdout
    starts = [line for line in proc.stdout.splitlines() if line.startswith("training starts")]
    assert starts == ["training starts: orbax False"] + ["training starts: orbax True"] * (
        len(algos.names()) - 1
    ), proc.stdout
    for name in algos.names():
        assert f"{name} exit 0" in proc.stdout, proc.stdout
        summary = json.loads((tmp_path / name / "run" / "summary.json").read_text())
        assert (
            summary["algo"] == name and summary["num_updates"] == algos.get(name).smoke.num_updates
        )


@pytest.mark.slow
def test_the_experiment_script_is_an_alias_of_purerl_train(tiny_run, tmp_path):
    run_dir = tmp_path / "run"
    proc = run_process(
        ROOT / "experiments" / "ppo.py", *TINY_ARGS, "--num-seeds", "2", "--run-dir", run_dir,
        "--checkpoint-every", "1", "--keep-checkpoints", "10", "--updates-per-chunk", "1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert metric_rows(run_dir) == metric_rows(tiny_run)  # the same run as `purerl train ppo`
    refused = run_process(ROOT / "experiments" / "ppo.py", "--precision", "fp16")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "see python " in refused.stderr and "experiments/ppo.py --help" in refused.stderr


@pytest.mark.parametrize("script, text", [
    ("ppo.py", "--clip-eps"), ("dqn.py", "--buffer-size"), ("evaluate.py", "--episodes"),
    ("plot.py", "--window"), ("search.py", "--param"),
])  # fmt: skip
def test_every_experiment_script_answers_help(monkeypatch, capsys, script, text):
    monkeypatch.setattr(sys, "argv", [f"experiments/{script}", "--help"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "experiments" / script), run_name="__main__")
    assert done.value.code == 0
    assert text in capsys.readouterr().out


LONG = [*TINY_ARGS[:-3], "--total-timesteps", str(64 * 600), "--updates-per-chunk", "1"]


@pytest.mark.slow
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_saves_a_checkpoint_and_says_how_to_resume(tmp_path, signum, code):
    run_dir = tmp_path / "run"
    proc = start("train", "ppo", *LONG, "--no-progress", "--run-dir", run_dir)
    wait_for(lambda: metric_lines(run_dir) >= 3, proc)
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == code, stderr
    assert f"{signal.Signals(signum).name}: saving a checkpoint" in stderr
    assert f"continue with: purerl train ppo --resume {run_dir}" in stdout
    done = json.loads((run_dir / "summary.json").read_text())["num_updates"]
    assert 3 <= done < 600 and (run_dir / "checkpoints" / str(done)).is_dir()
    if signum == signal.SIGINT:
        # Resuming picks up there (a shorter budget is not allowed: the config is the run's).
        resumed = run_cli("train", "--resume", run_dir, "--no-progress")
        assert resumed.code == 0, resumed.stderr
        assert f"resuming at update {done}" in resumed.stdout
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["num_updates"] == 600 and summary["resumed_from_update"] == done
        assert [r["update"] for r in metric_rows(run_dir)] == list(range(1, 601))


@pytest.mark.slow
def test_a_second_ctrl_c_aborts_at_once_with_one_line(tmp_path):
    run_dir = tmp_path / "run"
    proc = start("train", "ppo", *LONG, "--no-progress", "--run-dir", run_dir)
    wait_for(lambda: metric_lines(run_dir) >= 2, proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130
    lines = stderr.strip().splitlines()
    assert (
        lines[-1] == "error: aborted by Ctrl-C; a run directory keeps its last complete checkpoint"
    )
    assert "Traceback" not in stderr


@pytest.mark.slow
def test_a_killed_run_is_locked_while_alive_and_resumes_exactly_after_sigkill(tmp_path):
    # The run checkpoints every update; killed hard after its third checkpoint, then resumed,
    # it must end exactly where the uninterrupted run ends.
    short = [*TINY_ARGS[:-3], "--total-timesteps", str(64 * 40), "--updates-per-chunk", "1"]
    run_dir = tmp_path / "run"
    proc = start(
        "train", "ppo", *short, "--no-progress", "--run-dir", run_dir, "--checkpoint-every", "1"
    )
    checkpoints = run_dir / "checkpoints"
    wait_for(lambda: checkpoints.is_dir() and len(list(checkpoints.glob("[0-9]*"))) >= 3, proc)
    refused = run_cli("train", "--resume", run_dir)
    assert refused.code == 2 and f"(PID {proc.pid})" in refused.stderr, refused.stderr
    proc.kill()
    proc.communicate()
    resumed = run_cli("train", "--resume", run_dir)
    assert resumed.code == 0, resumed.stderr
    whole = run_cli("train", "ppo", *short, "--run-dir", tmp_path / "whole", "--no-progress")
    assert whole.code == 0, whole.stderr
    assert metric_rows(run_dir) == metric_rows(tmp_path / "whole")


def can_mount_tmpfs() -> bool:
    """Whether this machine lets a process mount a tmpfs in its own mount namespace."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
        capture_output=True,
    )
    return probe.returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not can_mount_tmpfs(), reason="needs unshare and a tmpfs mount (Linux)")
def test_a_really_full_disk_stops_with_one_line_and_resumes_once_space_is_back(tiny_run, tmp_path):
    # A 2 MiB tmpfs, most of it taken by a filler file, fills up after a few checkpoints. The
    # run must end with one line naming the last complete checkpoint; with the filler removed,
    # the resumed run ends exactly as tiny_run did.
    mount, out = tmp_path / "small", tmp_path / "out"
    mount.mkdir()
    out.mkdir()
    run_dir = mount / "run"
    flags = " ".join(TINY_ARGS)
    purerl = f"{sys.executable} -m purerl"
    script = f"""
mount -t tmpfs -o size=2m tmpfs {mount}
head -c 1500k /dev/zero > {mount}/filler
cd {ROOT}
{purerl} train ppo {flags} --num-seeds 2 --run-dir {run_dir} --checkpoint-every 1 \
    --keep-checkpoints 10 --updates-per-chunk 1 > {out}/out1 2> {out}/err1
echo $? > {out}/rc1
ls {run_dir}/checkpoints > {out}/checkpoints
rm {mount}/filler
{purerl} train --resume {run_dir} > {out}/out2 2> {out}/err2
echo $? > {out}/rc2
cp {run_dir}/metrics.jsonl {out}/metrics.jsonl
"""
    subprocess.run(["unshare", "-rm", "sh", "-c", script], check=True, timeout=600)
    read = lambda name: (out / name).read_text()  # noqa: E731
    assert read("rc1").strip() == "2", read("err1")
    lines = read("err1").strip().splitlines()
    assert len(lines) == 1, read("err1")
    (line,) = lines
    complete = sorted(int(n) for n in read("checkpoints").split() if n.isdigit())
    assert complete and complete == list(range(1, len(complete) + 1))
    assert line.startswith(f"error: no space left on the device of {run_dir} (")
    assert f"the last complete checkpoint (update {complete[-1]}) is kept" in line
    assert f"purerl train ppo --resume {run_dir}" in line
    assert read("rc2").strip() == "0", read("err2")
    assert f"resuming at update {complete[-1]}" in read("out2")
    assert metric_rows(out) == metric_rows(tiny_run)


@pytest.mark.slow
@pytest.mark.skipif(not can_mount_tmpfs(), reason="needs unshare and a tmpfs mount (Linux)")
def test_a_disk_full_during_the_first_checkpoint_is_one_line_and_leaves_nothing(tmp_path):
    # A 64 KiB tmpfs holds the tiny DQN run's config and metrics but not its first checkpoint:
    # the save fails part way, in orbax's background threads, with array writes in flight.
    mount, out = tmp_path / "small", tmp_path / "out"
    mount.mkdir()
    out.mkdir()
    script = f"""
mount -t tmpfs -o size=64k tmpfs {mount}
cd {ROOT}
{sys.executable} -m purerl train dqn {" ".join(DQN_TINY_ARGS)} --run-dir {mount}/run \
    > {out}/stdout 2> {out}/stderr
echo $? > {out}/rc
ls -A {mount} > {out}/left
"""
    subprocess.run(["unshare", "-rm", "sh", "-c", script], check=True, timeout=300)
    stderr = (out / "stderr").read_text()
    assert (out / "rc").read_text().strip() == "2", stderr
    (line,) = stderr.strip().splitlines()  # not one "Event loop is closed" traceback more
    assert line.startswith(f"error: no space left on the device of {mount}/run")
    assert "no checkpoint was completed" in line and "is removed" in line
    assert (out / "left").read_text() == ""


def test_distributed_without_a_launcher_or_coordinator_is_one_line(tmp_path):
    proc = run_process(
        "-m", "purerl", "train", "ppo", *TINY_ARGS, "--distributed", "--run-dir", tmp_path / "r"
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: --distributed found no launcher"), line
    assert "give --coordinator-address HOST:PORT, --num-processes and --process-id" in line
    assert not (tmp_path / "r").exists()


def test_a_non_ascii_run_path_prints_on_an_ascii_terminal(tiny_run, tmp_path):
    run_dir = Path(shutil.copytree(tiny_run, tmp_path / "r\u00fcn"))
    proc = subprocess.run(
        [sys.executable, "-m", "purerl", "plot", run_dir, "--out", tmp_path / "\u00fc.png"],
        capture_output=True, cwd=ROOT, timeout=300,
        env={**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONIOENCODING": "ascii"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == b""
    assert b"| r\\xfcn |" in proc.stdout and b"\\xfc.png" in proc.stdout
    assert (tmp_path / "\u00fc.png").is_file()


# The set-up after the libraries have loaded (environment, state shapes, memory check) takes
# well under a second with a warm compilation cache, too short to hit with a timer. This entry
# point holds the process there: it says "preparing" on stderr and waits for its stdin to close
# before the real set-up.
HELD_IN_SETUP = """
import sys
from purerl.run import session
from purerl.cli import main

real_prepare = session.prepare

def held_prepare(request):
    print("preparing", file=sys.stderr, flush=True)
    sys.stdin.read()
    return real_prepare(request)

session.prepare = held_prepare
sys.exit(main())
"""


def assert_interrupted_while_starting(proc, run_dir):
    stderr = proc.stderr.read()
    assert proc.wait(timeout=300) == 130, stderr
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "nothing was written" in errors[0], stderr
    assert not run_dir.exists()


@pytest.mark.slow
def test_ctrl_c_while_libraries_load_ends_in_one_line_and_writes_nothing(tmp_path):
    run_dir = tmp_path / "run"
    proc = start("train", "ppo", *TINY_ARGS, "--run-dir", run_dir)
    time.sleep(0.3)  # JAX alone takes longer than this to import
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    assert_interrupted_while_starting(proc, run_dir)


@pytest.mark.slow
def test_ctrl_c_while_the_run_is_set_up_ends_in_one_line_and_writes_nothing(tmp_path):
    run_dir = tmp_path / "run"
    args = ["train", "ppo", *TINY_ARGS, "--run-dir", str(run_dir)]
    proc = subprocess.Popen(
        [sys.executable, "-c", HELD_IN_SETUP, *args],
        stdin=subprocess.PIPE, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        cwd=ROOT,
    )  # fmt: skip
    assert proc.stderr.readline() == "preparing\n"
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)  # the handler runs before the set-up goes on
    proc.stdin.close()
    assert_interrupted_while_starting(proc, run_dir)


@pytest.mark.slow
def test_a_closed_standard_output_stops_the_command_with_one_line(tmp_path):
    # The reader is gone before the first line (as with `| head -0`): the output that follows
    # the set-up cannot be written.
    run_dir = tmp_path / "run"
    proc = start("train", "ppo", *TINY_ARGS, "--run-dir", run_dir)
    proc.stdout.close()
    stderr = proc.stderr.read()
    assert proc.wait(timeout=300) == 128 + signal.SIGPIPE, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    (line,) = stderr.strip().splitlines()
    assert line.startswith("error: standard output was closed by its reader (broken pipe)")
    assert not (run_dir / "summary.json").exists()


def test_an_interrupt_while_libraries_load_is_one_line(monkeypatch, capsys):
    from purerl import runtime
    from purerl.cli import guarded

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(runtime, "configure_jax", interrupted)
    assert guarded(lambda: 0, owns_process=False) == 130
    assert capsys.readouterr().err == "error: interrupted while starting; nothing was written\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, message",
    [
        (["--bogus-flag"], "Unrecognized options: --bogus-flag"),
        (["--lr", "abc"], "Error parsing --lr: could not convert string to float: 'abc'"),
    ],
)
def test_a_parse_error_is_one_line_naming_the_flag_or_value_in_a_real_process(args, message):
    proc = run_process("-m", "purerl", "train", "ppo", *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


@pytest.mark.slow
def test_loading_a_run_and_listing_environments_print_no_library_warnings(tiny_run):
    """Nothing on stderr of a fresh process: no absl/orbax log lines (``W1126 12:00:00 ...``,
    ``WARNING:absl``), no warnings of the libraries under Python's default filters."""
    code = (
        "import sys, purerl\n"
        f"policy = purerl.load({str(tiny_run)!r})\n"
        "from purerl.cli import main\n"
        "sys.exit(main(['envs']))\n"
    )
    proc = run_process("-c", code)
    assert proc.returncode == 0, proc.stderr
    assert "CartPole-v1" in proc.stdout
    assert proc.stderr == ""
