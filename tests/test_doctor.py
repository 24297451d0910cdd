"""The doctor's and EnvPool's child processes: what they are started with, what they report."""

import subprocess

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
