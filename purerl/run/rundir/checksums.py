"""Checkpoint checksums: the CRC-32 and size of every file orbax wrote for a checkpoint, sealed in
its ``checksums.json`` before orbax renames it complete, and checked before it is restored.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

from purerl.run.rundir.layout import (
    CHECKSUM_ALGORITHM,
    CHECKSUMS_FILE,
    DamagedFileError,
)
from purerl.run.rundir.records import (
    is_int,
    write_json,
)

CHECKSUM_BLOCK_BYTES = 8 << 20
"""Files are read for their checksums in blocks of this size, into one reused buffer."""


def file_crc32(path: Path) -> int:
    """The CRC-32 of a file's bytes (``zlib.crc32`` of the whole file), read block by block."""
    crc, buffer = 0, bytearray(min(CHECKSUM_BLOCK_BYTES, max(path.stat().st_size, 1)))
    view = memoryview(buffer)
    with open(path, "rb") as f:
        while read := f.readinto(buffer):
            crc = zlib.crc32(view[:read], crc)
    return crc


def checkpoint_files(directory: Path) -> list[Path]:
    """The files orbax writes for a checkpoint's items (``state/``, ``record/``): every file in
    a subdirectory of ``directory``. Its own top-level files (``_CHECKPOINT_METADATA``,
    ``commit_success.txt``) are orbax's bookkeeping, rewritten as it commits."""
    return sorted(p for p in Path(directory).glob("*/**/*") if p.is_file())


def file_checksums(directory: Path) -> dict[str, list[int]]:
    """``{path relative to directory: [size in bytes, CRC-32]}`` of ``checkpoint_files``."""
    directory = Path(directory)
    return {
        p.relative_to(directory).as_posix(): [p.stat().st_size, file_crc32(p)]
        for p in checkpoint_files(directory)
    }


def seal_checkpoint(directory: Path) -> None:
    """Writes ``checksums.json`` into a checkpoint orbax has written its files to
    (``saving_checkpoint_path``: before it renames it, so a complete checkpoint always has
    it)."""
    data = {"algorithm": CHECKSUM_ALGORITHM, "files": file_checksums(directory)}
    write_json(Path(directory) / CHECKSUMS_FILE, data)


def read_checksums(directory: Path) -> dict[str, list[int]] | None:
    """The checksums a checkpoint was saved with, or None if it has none.

    Raises:
        DamagedFileError: ``checksums.json`` is not valid JSON or not of the shape
            ``seal_checkpoint`` writes.
    """
    path = Path(directory) / CHECKSUMS_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError) as err:
        raise DamagedFileError(f"its checksum file cannot be read ({err})") from err
    files = data.get("files") if isinstance(data, dict) else None
    well_formed = (
        data.get("algorithm") == CHECKSUM_ALGORITHM
        and isinstance(files, dict)
        and all(isinstance(v, list) and len(v) == 2 and all(map(is_int, v)) for v in files.values())
    )
    if not well_formed:
        raise DamagedFileError(f"its checksum file is not of a form purerl writes ({path})")
    return files


def damaged_files(directory: Path, checksums: dict[str, list[int]]) -> list[str]:
    """The files of ``checksums`` (``read_checksums``) that are missing from checkpoint
    ``directory`` or differ from what was saved, by relative path."""
    damaged = []
    for name, (size, crc) in sorted(checksums.items()):
        path = Path(directory) / name
        if not path.is_file() or path.stat().st_size != size or file_crc32(path) != crc:
            damaged.append(name)
    return damaged
