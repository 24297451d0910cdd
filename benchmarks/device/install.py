"""Installs what this Python lacks from the bundle, without touching what it has.

Every wheel of the bundle whose package this Python does not have is installed with
``pip install --no-deps --no-index`` into a folder of its own (``--target``), and purerl from the
tree, unless it already imports from this tree. Nothing is installed into, upgraded in or
removed from the interpreter's own site-packages, so the preinstalled JAX and its CUDA plugin
stay exactly as they are. The check's processes find the folder through ``PYTHONPATH`` (its
console scripts through ``PATH``), and EnvPool its Atari ROMs through ``ENVPOOL_ASSETS_PATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from importlib import metadata
from pathlib import Path

from benchmarks.device.bundle import MANIFEST, ROOT, normalize
from benchmarks.device.report import Row, last_line


def installed(name: str) -> str | None:
    """The installed version of distribution ``name``, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def purerl_installed_from_tree() -> bool:
    """Whether this Python has purerl installed from this tree (``pip install -e .``), asked
    from outside the tree so that the tree itself does not count."""
    code = "import importlib.metadata as m, purerl; m.version('purerl'); print(purerl.__file__)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd="/", env=env
    )
    if proc.returncode != 0:
        return False
    return Path(proc.stdout.strip()).resolve().is_relative_to(ROOT / "purerl")


def pip_available() -> bool:
    proc = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    return proc.returncode == 0


def child_env(site: Path, bundle: Path) -> dict[str, str]:
    """The environment the check's processes run in."""
    env = dict(os.environ)
    paths = [str(site), str(ROOT)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PATH"] = os.pathsep.join([str(site / "bin"), env.get("PATH", "")])
    roms = bundle / "envpool-assets"
    if roms.is_dir() and "ENVPOOL_ASSETS_PATH" not in env and installed("envpool-assets") is None:
        env["ENVPOOL_ASSETS_PATH"] = str(roms)
    # Compile times are part of what the check measures: no persistent cache.
    env["PURERL_COMPILATION_CACHE"] = "0"
    return env


def unzip_wheels(wheels: list[Path], site: Path) -> None:
    """Without pip: a pure unpacking of each wheel into ``site`` (their ``.data`` folders, which
    none of the bundled runtime wheels need, are left out)."""
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for name in archive.namelist():
                if ".data/" not in name.split("/", 1)[0] + "/":
                    archive.extract(name, site)


def install(bundle: Path, site: Path) -> tuple[Row, dict[str, str]]:
    """Installs what is missing; returns the install row and the checks' environment."""
    start = time.perf_counter()
    manifest_path = bundle / MANIFEST
    if site.exists():
        shutil.rmtree(site)
    site.mkdir(parents=True)
    env = child_env(site, bundle)
    figures: dict = {"python": sys.version.split()[0], "site": str(site)}
    wheels, kept = [], []
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        for entry in manifest["wheels"]:
            if entry["role"] != "runtime":
                continue
            have = installed(entry["name"])
            if have is None:
                wheels.append(bundle / entry["file"])
            else:
                kept.append(f"{entry['name']} {have}")
        figures["bundle_python"] = manifest["python"]
    else:
        figures["bundle"] = f"none at {bundle}"
    figures["installed"] = [normalize(w.name.split("-")[0]) for w in wheels]
    figures["already_there"] = len(kept)
    has_pip = pip_available()
    from_tree = purerl_installed_from_tree()
    try:
        if has_pip and (wheels or not from_tree):
            # One pip call: a second --target install would not replace the first's bin/.
            tree = [] if from_tree else [str(ROOT)]
            links = ["--find-links", str(bundle / "wheels")] if (bundle / "wheels").is_dir() else []
            run_pip([*links, "--target", str(site), *map(str, wheels), *tree])
        elif wheels:
            unzip_wheels(wheels, site)
            figures["method"] = "unpacked (no pip)"
        if from_tree:
            figures["purerl"] = "installed from this tree already"
        elif has_pip:
            figures["purerl"] = "installed from the tree"
        else:
            figures["purerl"] = "from the tree through PYTHONPATH (no pip)"
    except RuntimeError as err:
        return Row(
            "install", "fail", figures, error=str(err), seconds=time.perf_counter() - start
        ), env
    missing = import_problems(env)
    if missing:
        return Row(
            "install", "fail", figures, error=missing, seconds=time.perf_counter() - start
        ), env
    return Row("install", "pass", figures, seconds=time.perf_counter() - start), env


def run_pip(args: list[str]) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-index",
        "--quiet",
        "--disable-pip-version-check",
        "--no-warn-script-location",
        *args,
    ]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"pip install failed: {last_line(proc.stderr)}")


IMPORTS = ("purerl.cli", "gymnax", "tyro", "envpool", "matplotlib")


def import_problems(env: dict[str, str]) -> str | None:
    """None when every package the check uses imports in its environment, else which fail."""
    code = (
        "import importlib, sys\nbad = []\n"
        f"for name in {IMPORTS!r}:\n"
        "    try:\n        importlib.import_module(name)\n"
        "    except Exception as err:\n        bad.append(f'{name} ({type(err).__name__}: "
        "{str(err)[:120]})')\n"
        "print('; '.join(bad))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT
    )
    if proc.returncode != 0:
        return f"import check crashed: {last_line(proc.stderr)}"
    bad = proc.stdout.strip()
    return f"does not import: {bad}" if bad else None
