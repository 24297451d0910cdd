"""The doctor's and EnvPool's child processes: what they are started with, what they report."""

import os
import subprocess
import threading

from purerl.cli import doctor
from purerl.envs import envpool
from purerl.runtime import child_process_env


def test_a_child_reports_its_exception_line_not_jaxs_note_below_it():
    stderr = (
        'Traceback (most recent call last):\n  File "<string>", line 3, in <module>\n'
        "RuntimeError: Unable to initialize backend 'rocm'\n--------------------\n"
        "For simplicity, JAX has removed its internal frames from the traceback of the "
        "following exception. Set JAX_TRACEBACK_FILTERING=off to include these.\n"
    )
    assert doctor.error_line(stderr) == "RuntimeError: Unable to initialize backend 'rocm'"
    assert doctor.error_line("Fatal Python error: Aborted\n\nno exception\n") == "no exception"
    assert doctor.error_line("") is None


def test_children_are_pinned_to_the_cpu_only_when_the_cpu_is_checked():
    assert doctor.child_platform_env("cpu") == {"JAX_PLATFORMS": "cpu"}
    assert doctor.child_platform_env("gpu") == {}


def test_children_allocate_device_memory_as_they_go(monkeypatch):
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    env = child_process_env(JAX_PLATFORMS="cpu")
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false" and env["JAX_PLATFORMS"] == "cpu"


def test_envpools_start_up_check_runs_on_the_gpu_without_naming_its_platform(monkeypatch):
    """JAX_PLATFORMS=gpu asks jax 0.11 for ROCm too and fails on an NVIDIA machine: the check's
    child inherits the platform choice instead, and does not reserve the parent's memory."""
    seen = {}

    def fake_run(command, **kwargs):
        seen.update(kwargs["env"])
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    monkeypatch.setattr(envpool.jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(envpool.subprocess, "run", fake_run)
    assert envpool.xla_step_works.__wrapped__() is True
    assert "JAX_PLATFORMS" not in seen
    assert seen["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"


def test_rows_print_as_their_checks_finish_and_the_report_keeps_the_order(capsys, monkeypatch):
    """The first check finishes only once the second one's row is out: rows stream."""
    second_printed = threading.Event()
    format_row = doctor.format_row

    def spy(check: doctor.Check) -> str:
        if check.name == "second":
            second_printed.set()
        return format_row(check)

    monkeypatch.setattr(doctor, "format_row", spy)

    def first() -> doctor.Check:
        return doctor.Check("first", second_printed.wait(5))

    def broken() -> doctor.Check:
        raise RuntimeError("no device\nmore")

    checks = doctor.run_jobs(
        [([("first", first), ("second", lambda: doctor.Check("second", None))], 2)]
        + [([("x", broken)], 1)]
    )
    assert [c.name for c in checks] == ["first", "second", "x"]
    assert checks[0].ok is True, "the second check's row waited for the first check"
    assert checks[2] == doctor.Check("x", False, note="RuntimeError: no device")
    rows = capsys.readouterr().out.splitlines()
    assert rows.index("| second | skipped | - |  |") < rows.index("| first | pass | - |  |")


def test_a_full_check_runs_one_check_at_a_time_in_order(capsys):
    running = []

    def job(name: str):
        def run() -> doctor.Check:
            running.append(name)
            return doctor.Check(name, True)

        return name, run

    checks = doctor.run_jobs([([job("a"), job("b"), job("c")], 1)])
    assert running == ["a", "b", "c"] and [c.name for c in checks] == running
    assert [line.split(" | ")[0] for line in capsys.readouterr().out.splitlines()] == [
        "| a",
        "| b",
        "| c",
    ]


def test_quick_compiles_cheaply_unless_the_user_set_those_flags(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=2 --xla_foo=1")
    doctor.quick_compiles()
    assert os.environ["XLA_FLAGS"].split() == [
        "--xla_backend_optimization_level=2",
        "--xla_foo=1",
        "--xla_cpu_use_fusion_emitters=false",
    ]
    monkeypatch.delenv("XLA_FLAGS")
    doctor.quick_compiles()
    assert os.environ["XLA_FLAGS"].split() == list(doctor.QUICK_XLA_FLAGS)


def test_atari_is_a_flag_pair_with_an_automatic_default():
    from purerl.cli.parsing import parse

    assert parse(doctor.DoctorArgs, [], "doctor").atari is None  # on with a GPU only
    assert parse(doctor.DoctorArgs, ["--atari"], "doctor").atari is True
    assert parse(doctor.DoctorArgs, ["--no-atari"], "doctor").atari is False


def test_one_child_reports_several_checks_and_a_crash_fails_the_check_it_was_in(monkeypatch):
    def fake_run(lines: list[str], code: int):
        stdout = "".join(line + "\n" for line in lines)
        stderr = "Fatal Python error: Aborted\n"
        return lambda command, **kwargs: subprocess.CompletedProcess(command, code, stdout, stderr)

    good = '{"rate": 1234.0, "finite": true}'
    names = ["envpool callback", "envpool xla"]
    monkeypatch.setattr(doctor.subprocess, "run", fake_run(["jax note", good, good], 0))
    checks = doctor.child_checks_in_one(names, "code", [], {})
    assert [(c.name, c.ok, c.figure) for c in checks] == [
        ("envpool callback", True, "1,234 frames/s"),
        ("envpool xla", True, "1,234 frames/s"),
    ]
    quick = doctor.child_checks_in_one(names, "code", [], {}, measured=False)
    assert [(c.ok, c.figure, c.rate) for c in quick] == [(True, "-", None)] * 2
    monkeypatch.setattr(doctor.subprocess, "run", fake_run([good], -6))
    callback, xla = doctor.child_checks_in_one(names, "code", [], {})
    assert callback.ok is True and xla.ok is False
    assert xla.note.startswith("the process died of signal 6 (Fatal Python error: Aborted)")
    monkeypatch.setattr(doctor.subprocess, "run", fake_run([good, good], 1))
    assert [c.ok for c in doctor.child_checks_in_one(names, "code", [], {})] == [True, False]


def test_a_shared_child_runs_once_for_the_checks_that_read_it():
    calls = []
    shared = doctor.Shared(lambda: calls.append(1) or {"a": 1, "b": 2})
    checks = doctor.run_jobs(
        [([("a", lambda: doctor.Check(str(shared()["a"]), True)),
           ("b", lambda: doctor.Check(str(shared()["b"]), True))], 2)]
    )  # fmt: skip
    assert calls == [1] and [c.name for c in checks] == ["1", "2"]
