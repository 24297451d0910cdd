"""Argument parsing with tyro, with errors as one line instead of tyro's boxes."""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import re
import sys
from collections.abc import Sequence
from typing import Any, TypeVar

import tyro

from purerl.config import ConfigError

T = TypeVar("T")


class UsageError(ConfigError):
    """Arguments the parser refused; the message is one line that ends with a pointer to
    ``--help``."""


class HelpShown(Exception):
    """``--help`` printed the help text: the command is done (exit code 0)."""


def parse(
    cls: type[T],
    argv: Sequence[str],
    prog: str,
    description: str | None = None,
    default: Any = None,
) -> T:
    """``tyro.cli`` over ``argv``; help text goes to stdout as usual.

    Raises:
        UsageError: tyro refused the arguments (its message, condensed to one line).
        HelpShown: ``--help`` was given.
    """
    unwrap_field_docstrings()
    captured = io.StringIO()
    kwargs = {"default": default} if default is not None else {}
    try:
        with contextlib.redirect_stderr(captured):
            parsed = tyro.cli(cls, args=list(argv), prog=prog, description=description, **kwargs)
    except SystemExit as exit_:
        if not exit_.code:
            raise HelpShown from None
        raise UsageError(f"{first_paragraph(captured.getvalue())}; see {prog} --help") from None
    # Anything else tyro wrote (warnings) still reaches the terminal.
    sys.stderr.write(captured.getvalue())
    return parsed


@functools.cache
def unwrap_field_docstrings() -> None:
    """Makes multi-line field docstrings one paragraph in ``--help``.

    tyro 1.0 (through docstring_parser) keeps the indentation of an attribute docstring's
    continuation lines, and a line starting with a space counts as a hard line break in its
    help text, so every wrapped docstring came out broken mid-sentence. Dedenting the
    continuation lines first gives the intended paragraphs. Without that tyro function (another
    tyro version) nothing is changed.
    """
    from tyro import _docstrings

    original = getattr(_docstrings, "parse_docstring_from_object", None)
    if original is None:
        return

    @functools.lru_cache(maxsize=1024)
    def dedented(obj: object) -> dict[str, str]:
        return {name: inspect.cleandoc(text) for name, text in original(obj).items()}

    _docstrings.parse_docstring_from_object = dedented


def first_paragraph(text: str) -> str:
    """The first paragraph of the message in a tyro error, as one line.

    tyro draws a box on a terminal (title in the top border) and plain text elsewhere (title on
    its own line above a rule of dashes); the message is the paragraph after the title.
    """
    lines = [raw.strip().strip("│").strip() for raw in text.splitlines()]
    boxed = any(line.startswith("╭") for line in lines)
    lines = [line for line in lines if not line.startswith(("╭", "╰"))]

    def is_rule(line: str) -> bool:
        return bool(line) and set(line) <= set("─-")

    while lines and not lines[0]:
        lines.pop(0)
    if not boxed and len(lines) > 1 and is_rule(lines[1]):
        lines = lines[2:]  # a plain title and its rule
    message = []
    for line in lines:
        if is_rule(line) or (not line and message):
            break
        if line:
            message.append(line)
    return re.sub(r"\s+", " ", " ".join(message) or text.strip() or "invalid arguments").rstrip(".")


def peek(argv: Sequence[str], flag: str) -> str | None:
    """The value given to ``flag`` in ``argv`` (``--flag value`` or ``--flag=value``; the last
    one wins, as for the parser)."""
    value = None
    args = list(argv)
    names = {flag, "--" + flag[2:].replace("-", "_")}
    for i, arg in enumerate(args):
        name, sep, rest = arg.partition("=")
        if name in names:
            if sep:
                value = rest
            elif i + 1 < len(args):
                value = args[i + 1]
    return value
