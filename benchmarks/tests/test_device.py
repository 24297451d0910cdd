"""The prepared device check: its quick mode end to end on this CPU, and its parts."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
import types
import zipfile
from pathlib import Path

import pytest

from benchmarks.device import __main__ as device
from benchmarks.device import bundle, checks, report
from benchmarks.device.report import Row

ROOT = Path(__file__).resolve().parents[2]


def run_quick_check(tmp_path: Path, *only: str) -> tuple[subprocess.CompletedProcess, Path, float]:
    """``python -m benchmarks.device --quick`` (``--only`` these groups, if any) on this CPU."""
    out = tmp_path / "report"
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.device", "--quick", "--out", str(out),
         "--bundle", str(tmp_path / "no-bundle"), "--site", str(tmp_path / "site"),
         "--budget-s", "400", *(("--only", *only) if only else ())],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )  # fmt: skip
    return proc, out, time.perf_counter() - start


def read_passing_report(proc: subprocess.CompletedProcess, out: Path) -> tuple[dict, dict]:
    """The report of a check that exited 0 with every row passing, and its rows by name."""
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads((out / "report.json").read_text())
    rows = data["rows"]
    # On a CPU nothing fails, and only a row that needs an optional package not installed here
    # (Brax) is skipped: no check needs a GPU.
    assert all(row["status"] == "pass" or skipped_for_a_package(row) for row in rows), [
        (row["name"], row.get("error") or row.get("why")) for row in rows if row["status"] != "pass"
    ]
    assert data["header"]["mode"] == "quick" and data["header"]["backend"] == "cpu"
    table = (out / "report.md").read_text()
    for row in rows:
        assert f"| {row['name']} | {row['status']} |" in table
    return data, {row["name"]: row for row in rows}


def skipped_for_a_package(row: dict) -> bool:
    return row["status"] == "skip" and "is not installed" in row["why"]


@pytest.mark.slow
@pytest.mark.long
def test_quick_check_of_two_groups_installs_runs_and_writes_both_reports(tmp_path):
    # The suite's share of the device check: the whole path (bundle size, install, the devices
    # group, groups in their own processes, both reports) through two of its groups. The full
    # quick check below takes a few minutes and runs with -m device_check.
    proc, out, _ = run_quick_check(tmp_path, "throughput", "snake")
    _, by_name = read_passing_report(proc, out)
    planned = [name for group in ("throughput", "snake") for name in checks.plan(group, True)]
    assert list(by_name) == ["bundle size", "install", "devices", *planned]
    assert by_name["devices"]["figures"]["backend"] == "cpu"
    assert by_name["throughput ppo CartPole-v1 8 envs 2 seeds"]["figures"]["steps_per_s"] > 0
    assert by_name["throughput ppo CartPole-v1 8 envs 2 seeds"]["figures"]["speedup_vs_reference"]


@pytest.mark.slow
@pytest.mark.device_check
def test_quick_check_runs_every_check_on_a_cpu_and_writes_both_reports(tmp_path):
    proc, out, seconds = run_quick_check(tmp_path)
    data, by_name = read_passing_report(proc, out)
    names = list(by_name)
    planned = [name for group in checks.GROUPS for name in checks.plan(group, quick=True)]
    for name in ["bundle size", "install", *planned]:
        assert name in names, f"{name} missing from {names}"
    doctor_checks = [name for name in names if name.startswith("doctor ")]
    assert {"doctor train ppo", "doctor envpool xla", "doctor envpool callback"} <= set(
        doctor_checks
    )
    assert by_name["devices"]["figures"]["backend"] == "cpu"
    # Quick mode gives the doctor two CPU devices even on one core, so the split runs.
    assert "doctor seeds over 2 devices" in names
    doctor_text = (out / "doctor.txt").read_text()
    assert "send back:" in doctor_text and "jax 0." in doctor_text
    assert by_name["throughput ppo CartPole-v1 8 envs 2 seeds"]["figures"]["steps_per_s"] > 0
    assert by_name["atari bench 4 envs"]["figures"]["step_mode"] == "xla"
    assert by_name["atari command 4 envs"]["figures"]["vs_raw_envpool"] > 0
    learning = by_name["learning ppo Breakout-MinAtar"]["figures"]
    assert learning["status"] == "finished" and learning["env_steps_per_seed"] == 8192
    sac = by_name["throughput sac Pendulum-v1 8 envs 2 seeds"]["figures"]
    assert sac["steps_per_s"] > 0 and sac["speedup_vs_reference"] > 0
    gru = by_name["throughput ppo CartPole-NoVelocity-v1 8 envs 2 seeds"]["figures"]
    assert gru["network"] == "gru" and gru["speedup_vs_reference"] > 0
    assert by_name["mujoco ppo HalfCheetah-v4 2 envs"]["figures"]["updates"] == 2
    evaluation = by_name["evaluation ppo CartPole-v1 8 envs"]["figures"]
    assert evaluation["evaluations"] == 2 and evaluation["eval_updates"] == [2, 4]
    brax = by_name["throughput ppo brax/inverted_double_pendulum 8 envs 2 seeds"]
    assert brax["status"] == "pass" or "pip install 'purerl[brax]'" in brax["why"]
    assert seconds < 300, f"the quick check took {seconds:.0f} s"  # 3 min on two loaded cores


@pytest.mark.slow
def test_a_group_past_its_limit_reports_each_planned_row_as_not_run(tmp_path):
    args = device.DeviceArgs(out=str(tmp_path), quick=True)
    rows = device.run_group("snake", args, tmp_path, dict(os.environ), limit=0.5)
    assert [row.name for row in rows] == checks.plan("snake", quick=True)
    for row in rows:
        assert row.status == "fail"
        assert row.error.startswith("did not run: its process ran past the group's 0 s limit")


def test_a_crashed_group_keeps_its_rows_and_names_its_signal(tmp_path, monkeypatch):
    rows_file = tmp_path / "rows" / "snake.jsonl"
    report.append_row(rows_file, Row("snake 64 games", "pass", {"steps_per_s": 1}))
    # A child that dies of SIGABRT after the group's first row was written.
    monkeypatch.setattr(
        device, "group_command", lambda group, args, out, limit: ["/bin/sh", "-c", "kill -6 $$"]
    )
    args = device.DeviceArgs(out=str(tmp_path), quick=True)
    rows = device.run_group("snake", args, tmp_path, dict(os.environ), limit=30)
    assert [(row.name, row.status) for row in rows] == [
        ("snake 64 games", "pass"),
        ("snake 256 games", "fail"),
    ]
    assert "died of signal 6 (SIGABRT)" in rows[1].error


def test_a_failed_process_is_reported_by_its_exception_line():
    output = (
        'Traceback (most recent call last):\n  File "x.py", line 1\n'
        "RuntimeError: Unable to initialize backend 'rocm'\n--------------------\n"
        "For simplicity, JAX has removed its internal frames from the traceback.\n"
    )
    assert report.last_line(output) == "RuntimeError: Unable to initialize backend 'rocm'"
    assert report.last_line("starting\nKilled\n") == "Killed"
    assert report.last_line("") == "(no output)"


def test_every_throughput_row_is_a_valid_configuration_beside_the_right_peers():
    from benchmarks import throughput
    from purerl.extras import MissingExtraError

    # The references: PPO's and DQN's on discrete actions, SAC's on continuous ones.
    continuous = {"Pendulum-v1", "brax/inverted_double_pendulum", "brax/ant"}
    for group in checks.THROUGHPUT_FULL:
        for quick in (False, True):
            for spec in checks.throughput_rows(group, quick):
                cfg = checks.row_config(spec)  # a frozen config checks itself when built
                assert (cfg.num_envs, cfg.num_updates) == (spec.num_envs, spec.updates)
                assert cfg.rollout_len == (16 if quick else cfg.rollout_len)
                try:
                    _, peers = checks.throughput_config(spec, throughput.PEERS["reference"])
                except MissingExtraError:
                    assert spec.env.startswith("brax/")
                    continue
                with_reference = (
                    spec.algo == "sac" if spec.env in continuous else spec.algo in ("ppo", "dqn")
                )
                assert peers == (("reference",) if with_reference else ()), spec


def test_the_new_groups_plan_gpu_sized_rows_and_a_short_quick_check():
    assert checks.plan("throughput-sac-td3", quick=False) == [
        "throughput sac Pendulum-v1 1024 envs 1 seed",
        "throughput sac Pendulum-v1 1024 envs 16 seeds",
        "throughput td3 Pendulum-v1 1024 envs 1 seed",
        "throughput td3 Pendulum-v1 1024 envs 16 seeds",
    ]
    assert checks.plan("mujoco", quick=False) == [
        "mujoco ppo HalfCheetah-v4 16 envs",
        "mujoco ppo HalfCheetah-v4 64 envs",
    ]
    assert checks.plan("evaluation", quick=True) == ["evaluation ppo CartPole-v1 8 envs"]
    for group in checks.GROUPS:
        assert group in device.GROUP_LIMITS and checks.plan(group, quick=True)
        full, quick = device.GROUP_LIMITS[group]
        assert quick <= full
    # The newer groups fit one 10-minute device call beside the install (--only them).
    new = ("throughput-sac-td3", "throughput-recurrent", "mujoco", "evaluation", "throughput-brax")
    assert sum(device.GROUP_LIMITS[group][0] for group in new) <= 540


def test_the_training_commands_of_the_device_check_are_valid_configurations():
    from purerl import algos
    from purerl.options import MAX_EVAL_EPISODES

    for quick in (False, True):
        evaluation = checks.evaluation_run(quick)
        runs = [*checks.mujoco_runs(quick), evaluation.run]
        for run in runs:
            base = algos.get(run.algo).base_config(run.env)
            cfg = dataclasses.replace(
                base,
                num_envs=run.num_envs,
                rollout_len=run.rollout_len,
                total_timesteps=run.total_timesteps,
            )
            assert cfg.num_updates == run.updates
        assert evaluation.run.updates % evaluation.eval_every == 0
        assert evaluation.eval_episodes <= MAX_EVAL_EPISODES


def test_a_row_needing_a_package_that_is_not_installed_is_skipped_saying_why(tmp_path, monkeypatch):
    from purerl.extras import MissingExtraError

    def no_brax(spec, repeats, throughput, measure):
        raise MissingExtraError(
            f"{spec.env} needs the optional package brax, which is not installed; install it "
            "with: pip install 'purerl[brax]'"
        )

    monkeypatch.setattr(checks, "throughput_figures", no_brax)
    rows = list(checks.GROUP_FUNCTIONS["throughput-brax"](False, tmp_path, 60))
    assert [row.name for row in rows] == checks.plan("throughput-brax", quick=False)
    for row in rows:
        assert row.status == "skip"
        assert "needs the optional package brax" in row.why
        assert "the device bundle cannot carry it" in row.why

    # EnvPool without the MuJoCo family (a bundle that left it out): the MuJoCo rows skip.
    monkeypatch.setitem(sys.modules, "envpool", types.SimpleNamespace(list_all_envs=list))
    why = checks.envpool_task_missing("HalfCheetah-v4")
    assert why.startswith("this EnvPool has no HalfCheetah-v4") and "mujoco.gym" in why
    rows = list(checks.mujoco_group(False, tmp_path, 60))
    assert [(row.name, row.status, row.why) for row in rows] == [
        (name, "skip", why) for name in checks.plan("mujoco", quick=False)
    ]
    monkeypatch.setitem(sys.modules, "envpool", None)  # import envpool raises ImportError
    assert checks.envpool_task_missing("HalfCheetah-v4").startswith("EnvPool is not installed")


def test_groups_run_two_at_a_time_each_after_the_group_it_reads(tmp_path, monkeypatch):
    events = []

    def fake_run_group(group, args, out, env, limit):
        events.append(("start", group))
        time.sleep(0.2 if group == "atari" else 0.05)
        events.append(("end", group))
        return [Row(name, "pass") for name in checks.plan(group, args.quick)]

    monkeypatch.setattr(device, "run_group", fake_run_group)
    args = device.DeviceArgs(out=str(tmp_path), quick=True)
    groups = ["atari", "atari-command", "snake", "learning"]
    found = device.run_groups(groups, args, tmp_path, {}, time.perf_counter() + 60, workers=2)
    assert sorted(found) == sorted(groups)
    # atari and snake start together; atari-command waits for atari's end, not for a slot.
    assert set(events[:2]) == {("start", "atari"), ("start", "snake")}
    assert events.index(("start", "atari-command")) > events.index(("end", "atari"))
    assert events.index(("start", "learning")) < events.index(("end", "atari"))
    # Past the deadline every planned row is reported as not run.
    found = device.run_groups(["snake"], args, tmp_path, {}, time.perf_counter(), workers=2)
    assert [row.status for row in found["snake"]] == ["skip"]
    budget = f"not run: the check's {device.QUICK_BUDGET_S:.0f} s budget was spent"
    assert found["snake"][0].why == budget


def test_rows_say_why_they_fail_or_skip_and_the_table_shows_each():
    with pytest.raises(ValueError, match="without an error"):
        Row("x", "fail")
    with pytest.raises(ValueError, match="without a reason"):
        Row("x", "skip")
    with pytest.raises(ValueError, match="pass, fail or skip"):
        Row("x", "ok")
    rows = [
        Row("a", "pass", {"steps_per_s": 1234567.8, "curve": [1.0, 2.5]}, seconds=1.0),
        Row("b", "fail", error="boom | bang"),
        Row("c", "skip", why="needs a GPU"),
    ]
    table = report.markdown(rows, {"backend": "cpu"})
    assert "| a | pass | steps_per_s 1,234,568; curve [1, 2.5] |  | 1.0 |" in table
    assert "| b | fail |  | boom / bang | - |" in table
    assert "| c | skip |  | needs a GPU | - |" in table
    assert "rows: 1 pass, 1 fail, 1 skip" in table
    assert [Row.from_json(row.to_json()) for row in rows] == rows


def record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_slim_envpool_keeps_the_chosen_families_and_a_valid_record(tmp_path):
    wheel = tmp_path / "envpool-1.2.5-cp312-cp312-linux_x86_64.whl"
    entry = (
        '"""Entry."""\n\nimport envpool.atari.registration  # noqa: F401\n'
        "import envpool.box2d.registration  # noqa: F401\n"
        "import envpool.mujoco.gym.registration  # noqa: F401\n"
    )
    files = {
        "envpool/__init__.py": "import envpool.entry\n",
        "envpool/entry.py": entry,
        "envpool/python/api.py": "x = 1\n",
        "envpool/atari/__init__.py": "",
        "envpool/atari/atari_envpool.so": "binary",
        "envpool/box2d/__init__.py": "",
        "envpool/box2d/box2d_envpool.so": "binary",
        "envpool/mujoco/gym/registration.py": "",
        "envpool-1.2.5.dist-info/METADATA": "Name: envpool\n",
    }
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr("envpool-1.2.5.dist-info/RECORD", "stale\n")
    bundle.slim_envpool(wheel, ("atari",))
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        assert names == {
            "envpool/__init__.py",
            "envpool/entry.py",
            "envpool/python/api.py",
            "envpool/atari/__init__.py",
            "envpool/atari/atari_envpool.so",
            "envpool-1.2.5.dist-info/METADATA",
            "envpool-1.2.5.dist-info/RECORD",
        }
        assert archive.read("envpool/entry.py").decode() == (
            '"""Entry."""\n\nimport envpool.atari.registration  # noqa: F401\n'
        )
        record = archive.read("envpool-1.2.5.dist-info/RECORD").decode().splitlines()
        for line in record:
            name, digest, size = line.split(",")
            if name.endswith("RECORD"):
                assert digest == size == ""
                continue
            data = archive.read(name)
            assert digest == record_hash(data) and int(size) == len(data)
        assert len(record) == len(names)


def test_slim_envpool_keeps_one_part_of_a_family_with_its_extension_module(tmp_path):
    wheel = tmp_path / "envpool-1.2.5-cp312-cp312-linux_x86_64.whl"
    entry = (
        "import envpool.atari.registration  # noqa: F401\n"
        "import envpool.mujoco.dmc.registration  # noqa: F401\n"
        "import envpool.mujoco.gym.registration  # noqa: F401\n"
    )
    files = {
        "envpool/entry.py": entry,
        "envpool/atari/atari_envpool.so": "binary",
        "envpool/mujoco/__init__.py": "",
        "envpool/mujoco/gym/__init__.py": "from envpool.mujoco.mujoco_gym_envpool import (x)\n",
        "envpool/mujoco/gym/registration.py": "",
        "envpool/mujoco/mujoco_gym_envpool.so": "binary",
        "envpool/mujoco/dmc/__init__.py": "from envpool.mujoco.mujoco_dmc_envpool import (y)\n",
        "envpool/mujoco/mujoco_dmc_envpool.so": "binary",
        "envpool/mujoco/playground_envpool.so": "binary",
    }
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr("envpool-1.2.5.dist-info/RECORD", "stale\n")
    bundle.slim_envpool(wheel, ("atari", "mujoco.gym"))
    with zipfile.ZipFile(wheel) as archive:
        assert set(archive.namelist()) == {
            "envpool/entry.py",
            "envpool/atari/atari_envpool.so",
            "envpool/mujoco/__init__.py",
            "envpool/mujoco/gym/__init__.py",
            "envpool/mujoco/gym/registration.py",
            "envpool/mujoco/mujoco_gym_envpool.so",
            "envpool-1.2.5.dist-info/RECORD",
        }
        assert archive.read("envpool/entry.py").decode() == (
            "import envpool.atari.registration  # noqa: F401\n"
            "import envpool.mujoco.gym.registration  # noqa: F401\n"
        )


def test_the_bundle_carries_the_assets_of_the_families_it_keeps(tmp_path):
    wheel = tmp_path / "envpool_assets-0.3.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in (
            "envpool_assets/atari/roms/pong.bin",
            "envpool_assets/mujoco/assets_gym/half_cheetah.xml",
            "envpool_assets/mujoco/assets_dmc/cheetah.xml",
            "envpool_assets/procgen/x.png",
        ):
            archive.writestr(name, "data")
    into = tmp_path / "envpool-assets"
    assert bundle.extract_assets(wheel, into, ("atari", "mujoco.gym", "box2d")) == 8
    found = sorted(str(p.relative_to(into)) for p in into.rglob("*") if p.is_file())
    assert found == ["atari/roms/pong.bin", "mujoco/assets_gym/half_cheetah.xml"]
    empty = tmp_path / "envpool_assets-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("envpool_assets/__init__.py", "")
    with pytest.raises(SystemExit, match="none of envpool_assets/mujoco/assets_gym/ found"):
        bundle.extract_assets(empty, tmp_path / "again", ("mujoco.gym",))


def test_size_check_counts_tree_and_bundle_and_names_the_largest_files(tmp_path):
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "code.py").write_bytes(b"x" * 2**20)
    (tree / "runs").mkdir()
    (tree / "runs" / "ignored.bin").write_bytes(b"x" * 3 * 2**20)  # outputs are not carried
    wheels = tmp_path / "bundle" / "wheels"
    wheels.mkdir(parents=True)
    (wheels / "big-1.0-py3-none-any.whl").write_bytes(b"x" * 2 * 2**20)
    total, problem = bundle.size_problem(tmp_path / "bundle", 4.0, root=tree)
    assert total == pytest.approx(3.0) and problem is None
    total, problem = bundle.size_problem(tmp_path / "bundle", 2.5, root=tree)
    assert problem.startswith("tree plus bundle weigh 3.0 MiB, over the 2.5 MiB")
    assert "big-1.0-py3-none-any.whl (2.0 MiB)" in problem


def test_bundle_command_refuses_a_bundle_over_the_limit(tmp_path, monkeypatch, capsys):
    def fake_build(args):
        out = Path(args.out)
        (out / "wheels").mkdir(parents=True)
        (out / "wheels" / "x-1-py3-none-any.whl").write_bytes(b"x" * 2**20)
        return {"wheels": [], "envpool_assets": None}

    monkeypatch.setattr(bundle, "build", fake_build)
    args = bundle.parse(["--out", str(tmp_path / "b"), "--limit-mib", "0.5"])
    assert bundle.main(args) == 2
    assert "error: tree plus bundle weigh" in capsys.readouterr().err


def test_the_command_line_refuses_bad_input_before_running_anything(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    cases = [
        (["--only", "nope"], "invalid choice: 'nope'"),
        (["--budget-s", "-1"], "--budget-s must be positive"),
        (["--out", str(tmp_path / "full")], "is not empty; give --out a new folder"),
    ]
    for argv, message in cases:
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.device", *argv],
            cwd=ROOT, capture_output=True, text=True,
        )  # fmt: skip
        assert proc.returncode == 2, (argv, proc.stderr)
        assert message in proc.stderr
    assert list((tmp_path / "full").iterdir()) == [tmp_path / "full" / "x"]


def fake_wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal pure-Python wheel holding module ``name``."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": f"VERSION = {version!r}\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = [
        f"{path},{record_hash(text.encode())},{len(text.encode())}" for path, text in files.items()
    ]
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
        archive.writestr(f"{dist}/RECORD", "\n".join([*record, f"{dist}/RECORD,,"]) + "\n")
    return path


@pytest.mark.slow
def test_install_adds_only_what_this_python_lacks_into_its_own_folder(tmp_path):
    from benchmarks.device import install

    wheels = tmp_path / "bundle" / "wheels"
    wheels.mkdir(parents=True)
    missing = fake_wheel(wheels, "purerl_device_check_probe", "1.0")
    present = fake_wheel(wheels, "numpy", "0.0.1")  # installed here: must be left alone
    manifest = {
        "python": "3.12",
        "wheels": [
            {
                "name": "purerl-device-check-probe",
                "file": f"wheels/{missing.name}",
                "role": "runtime",
            },
            {"name": "numpy", "file": f"wheels/{present.name}", "role": "runtime"},
        ],
    }
    (tmp_path / "bundle" / bundle.MANIFEST).write_text(json.dumps(manifest))
    site = tmp_path / "site"
    row, env = install.install(tmp_path / "bundle", site)
    assert row.status == "pass", row
    assert row.figures["installed"] == ["purerl-device-check-probe"]
    assert row.figures["already_there"] == 1
    assert (site / "purerl_device_check_probe.py").is_file()
    assert not (site / "numpy").exists()
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(site)
    assert env["PURERL_COMPILATION_CACHE"] == "0"
    probe = subprocess.run(
        [sys.executable, "-c", "import purerl_device_check_probe as p, numpy; print(p.VERSION)"],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert probe.stdout.strip() == "1.0", probe.stderr
    import importlib.metadata

    assert importlib.metadata.version("numpy") != "0.0.1"


def test_publish_lists_the_reports_and_renders_the_page_later_rows_first(tmp_path):
    from benchmarks.device import publish

    first = tmp_path / "docs" / "run1"
    second = tmp_path / "docs" / "run2"
    header = {"date": "2026-11-26 04:54 UTC", "devices": ["cuda:0 (H200)"], "jax": "0.11.2"}
    old = {"steps_per_s": 10, "reference_steps_per_s": 20, "speedup_vs_reference": 0.5}
    new = {"steps_per_s": 30, "reference_steps_per_s": 20, "speedup_vs_reference": 1.5}
    rows = [Row("throughput ppo X 1 seed", "pass", old), Row("b", "fail", error="crashed")]
    report.write(first, rows, header)
    report.write(second, [Row("throughput ppo X 1 seed", "pass", new)], {**header, "devices": []})
    page = tmp_path / "BENCHMARKS.md"
    page.write_text("a hand edit\n")
    argv = [str(first / "report.json"), str(second / "report.json"), "--benchmarks", str(page)]
    assert publish.main(argv) == 0
    listed = json.loads((tmp_path / "benchmarks" / "results" / "device.json").read_text())
    assert listed == {"reports": ["docs/run1/report.json", "docs/run2/report.json"]}
    text = page.read_text()
    assert "a hand edit" not in text and "## On one GPU (H200)\n" in text
    assert "| ppo X 1 seed | 30 | 20 | **1.50x** |" in text and "crashed" not in text
    assert "[run1](docs/run1/report.md), [run2](docs/run2/report.md)" in text
    assert publish.main([str(tmp_path / "none.json"), "--benchmarks", str(page)]) == 2
    elsewhere = tmp_path.parent / f"{tmp_path.name}-report.json"
    elsewhere.write_text("{}")
    assert publish.main([str(elsewhere), "--benchmarks", str(page)]) == 2
