"""Argument parsing with tyro: errors as one line instead of tyro's boxes, help as plain text."""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import os
import re
import shutil
import sys
import textwrap
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


HELP_MAX_WIDTH = 100
"""Help lines are at most this wide, or the terminal's width (``COLUMNS``) when narrower."""
DESCRIPTION_SLOT = "PURERL-DESCRIPTION"
"""Stands in for the description in tyro's help; replaced by the description wrapped here."""


def parse(
    cls: type[T],
    argv: Sequence[str],
    prog: str,
    description: str | None = None,
    default: Any = None,
) -> T:
    """``tyro.cli`` over ``argv``; help text goes to stdout as plain text (see ``show_help``).

    Raises:
        UsageError: tyro refused the arguments (its message, condensed to one line).
        HelpShown: ``--help`` was given.
    """
    plain_docstrings()
    width = help_width()
    captured, shown = io.StringIO(), io.StringIO()
    kwargs = {"default": default} if default is not None else {}
    slot = DESCRIPTION_SLOT if description else None
    try:
        with (
            contextlib.redirect_stderr(captured),
            contextlib.redirect_stdout(shown),
            terminal_columns(width),
        ):
            parsed = tyro.cli(cls, args=list(argv), prog=prog, description=slot, **kwargs)
    except SystemExit as exit_:
        if not exit_.code:
            help_text = shown.getvalue()
            if description:
                help_text = help_text.replace(DESCRIPTION_SLOT, plain_text(description, width))
            sys.stdout.write("".join(line.rstrip() + "\n" for line in help_text.splitlines()))
            raise HelpShown from None
        raise UsageError(f"{first_paragraph(captured.getvalue())}; see {prog} --help") from None
    # Anything else tyro wrote (warnings) still reaches the terminal.
    sys.stdout.write(shown.getvalue())
    sys.stderr.write(captured.getvalue())
    return parsed


def help_width() -> int:
    """The width help is wrapped to: the terminal's (``COLUMNS`` first), at most
    ``HELP_MAX_WIDTH``, at least 40."""
    columns = shutil.get_terminal_size((HELP_MAX_WIDTH, 24)).columns
    return max(40, min(columns, HELP_MAX_WIDTH))


@contextlib.contextmanager
def terminal_columns(width: int):
    """tyro sizes its help boxes to ``shutil.get_terminal_size()``, which reads ``COLUMNS``
    first: set it to ``width`` while tyro runs."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before


def plain_text(doc: str, width: int | None = None) -> str:
    """A docstring as help text: ``literals`` lose their reST backticks, and each paragraph
    becomes one line, or lines of at most ``width`` when given. Bulleted items (``- ...``) stay
    items; an indented paragraph (an example command) stays as written."""
    doc = re.sub(r"``(.+?)``", r"\1", inspect.cleandoc(doc), flags=re.DOTALL)
    blocks = []
    for paragraph in re.split(r"\n\s*\n", doc.strip()):
        lines = paragraph.splitlines()
        if all(line.startswith(" ") for line in lines):
            blocks.append(paragraph)
            continue
        items: list[list[str]] = []
        for line in lines:
            if line.startswith("- ") or not items:
                items.append([])
            items[-1].append(line.strip())
        blocks.append("\n".join(fill(" ".join(item), width) for item in items))
    return "\n\n".join(blocks)


def wrap_lines(lines: Sequence[str], indent: int = 2) -> str:
    """Help lines written by hand, each wrapped to ``help_width()``; the continuation lines of
    an indented line (a table row) start ``indent`` spaces in."""
    width = help_width()

    def wrap(line: str) -> str:
        hanging = " " * (indent if line.startswith(" ") else 0)
        return textwrap.fill(line, width, subsequent_indent=hanging, break_on_hyphens=False)

    return "\n".join(wrap(line) if len(line) > width else line for line in lines)


def fill(text: str, width: int | None) -> str:
    if width is None:
        return text
    indent = "  " if text.startswith("- ") else ""
    return textwrap.fill(
        text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )


@functools.cache
def plain_docstrings() -> None:
    """Makes the docstrings tyro shows (fields' and classes') plain paragraphs in ``--help``.

    tyro 1.0 (through docstring_parser) keeps the indentation of an attribute docstring's
    continuation lines, and a line starting with anything but a letter counts as a hard line
    break in its help text, so wrapped docstrings came out broken mid-sentence; reST literals
    kept their double backticks. ``plain_text`` joins each paragraph into one line (tyro wraps
    it to its box) and drops the backticks. Without these tyro functions (another tyro version)
    nothing is changed.
    """
    from tyro import _docstrings

    fields = getattr(_docstrings, "parse_docstring_from_object", None)
    classes = getattr(_docstrings, "get_callable_description", None)
    if fields is None or classes is None:
        return

    @functools.lru_cache(maxsize=1024)
    def field_docs(obj: object) -> dict[str, str]:
        return {name: plain_text(text) for name, text in fields(obj).items()}

    def class_doc(f: Any) -> str:
        return plain_text(classes(f))

    _docstrings.parse_docstring_from_object = field_docs
    _docstrings.get_callable_description = class_doc


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
