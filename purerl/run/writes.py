"""Writing inside a run directory without following links (``purerl.run.rundir`` uses these).

A run directory is data: it may have been copied, unpacked or shared, and a symbolic link
inside it must not redirect a write to a file outside it (a lock truncating ``~/.bashrc``, a
metrics row appended to someone's file, orbax deleting the files a checkpoint link points to).
Every file purerl writes in a run directory is opened here: ``O_NOFOLLOW`` refuses a link in its
place, and ``lstat``/``fstat`` anything but a regular file (a FIFO would block the writer, a
device take its bytes), before a byte is written. Folders that purerl or a library writes into
are checked the same way before they are handed over. The run directory itself may be a link:
the user chose it. Reading follows links as usual.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import IO, Literal

from purerl.config import ConfigError

OPEN_FLAGS = os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
"""``O_NONBLOCK``: opening a FIFO with no reader fails at once (ENXIO) instead of waiting."""
MODES = {"a": os.O_WRONLY | os.O_APPEND, "a+": os.O_RDWR | os.O_APPEND}
KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device file"),
    (stat.S_ISBLK, "a device file"),
    (stat.S_ISREG, "a file"),
)


class UnsafePathError(ConfigError):
    """A path purerl would write inside a run directory is a symbolic link, or not what belongs
    there (a regular file, or a directory for a folder); the message names it and what to do."""


def check(path: Path, mode: int, folder: bool = False) -> None:
    """Raises ``UnsafePathError`` unless ``path``, of ``lstat`` mode ``mode``, is a regular file
    (a directory if ``folder``)."""
    thing = "folder" if folder else "file"
    if stat.S_ISLNK(mode):
        try:
            target = f" (to {os.readlink(path)})"
        except OSError:
            target = ""
        raise UnsafePathError(
            f"{path} is a symbolic link{target}; purerl writes nothing through a link inside a "
            f"run directory: remove the link (or put the real {thing} in its place) and run again"
        )
    if not (stat.S_ISDIR if folder else stat.S_ISREG)(mode):
        kind = next(name for test, name in KINDS if test(mode))
        raise UnsafePathError(
            f"{path} is {kind} where purerl writes a {thing}; move it out of the run directory "
            "(or remove it) and run again"
        )


def require_file_or_absent(path: Path) -> None:
    """Raises ``UnsafePathError`` if ``path`` exists as anything but a regular file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    check(path, mode)


def open_for_writing(path: Path, mode: Literal["a", "a+"] = "a") -> IO[str]:
    """Opens ``path`` (created if missing) to append text, refusing a link or a special file in
    its place before anything is written. ``a+`` opens it for reading too.

    Raises:
        UnsafePathError: ``path`` is a symbolic link or not a regular file.
        OSError: the file cannot be opened (permissions, missing folder, ...).
    """
    path = Path(path)
    require_file_or_absent(path)
    try:
        fd = os.open(path, MODES[mode] | OPEN_FLAGS, 0o666)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):  # replaced since the check
            require_file_or_absent(path)
        raise
    try:
        check(path, os.fstat(fd).st_mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, mode, encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def replace_file(path: Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` atomically: a reader sees the old file or the new one, never
    half of it. The bytes go to ``<name>.tmp`` beside it, created afresh (``O_EXCL``, so never
    through a link), which then replaces ``path``.

    Raises:
        UnsafePathError: ``path`` or its temporary name is a link or not a regular file.
    """
    path = Path(path)
    require_file_or_absent(path)
    tmp = path.with_name(path.name + ".tmp")
    require_file_or_absent(tmp)
    tmp.unlink(missing_ok=True)  # left by a process killed while writing
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def require_real_dir(path: Path, create: bool = False, contents: bool = False) -> Path:
    """``path`` as a folder to write into: a directory, not a link (created if missing and
    ``create``). With ``contents``, no entry directly inside may be a link or a special file
    either: a library that writes there may open, or delete, what an entry points to.

    Raises:
        UnsafePathError: ``path`` or, with ``contents``, one of its entries is a link, or is
            not what belongs there.
    """
    path = Path(path)
    if create and not os.path.lexists(path):
        path.mkdir(parents=True, exist_ok=True)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    check(path, mode, folder=True)
    if contents:
        with os.scandir(path) as entries:
            for entry in entries:
                mode = entry.stat(follow_symlinks=False).st_mode
                if not stat.S_ISDIR(mode):
                    check(Path(entry.path), mode, folder=entry.is_dir())
    return path
