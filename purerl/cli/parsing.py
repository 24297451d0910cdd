"""Argument parsing with tyro: errors as one line instead of tyro's boxes, help as plain text."""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import inspect
import io
import os
import re
import shutil
import sys
import textwrap
import types
import typing
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
    flags = flag_types(cls)
    argv = whole_numbers(argv, flags)
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
        message = first_paragraph(captured.getvalue())
        hint = flag_hint(message, flags)
        raise UsageError(f"{message}{hint}; see {prog} --help") from None
    # Anything else tyro wrote (warnings) still reaches the terminal.
    sys.stdout.write(shown.getvalue())
    sys.stderr.write(captured.getvalue())
    return parsed


FLAG_ALIASES = {
    "learning-rate": "lr", "n-envs": "num-envs", "env-id": "env", "gym-id": "env",
    "n-steps": "rollout-len", "num-steps": "rollout-len", "n-epochs": "num-epochs",
    "update-epochs": "num-epochs", "clip-range": "clip-eps", "clip-coef": "clip-eps",
    "n-timesteps": "total-timesteps", "timesteps": "total-timesteps",
    "total-steps": "total-timesteps", "n-seeds": "num-seeds", "seeds": "num-seeds",
    "norm-adv": "normalize-advantages", "clip-vloss": "clip-value-loss",
    "n-minibatches": "num-minibatches", "minibatch-size": "num-minibatches",
    "track": "wandb-project", "wandb-project-name": "wandb-project", "cuda": "device",
    "save-freq": "checkpoint-every", "log-dir": "run-dir", "tensorboard-log": "tensorboard",
}  # fmt: skip
"""Flags of other libraries (Stable-Baselines3, CleanRL, RL Zoo, rejax) -> purerl's, for the
"did you mean" of an unknown flag; used only where the target is a flag of the command."""


def flag_types(cls: type) -> dict[str, Any]:
    """``--flag`` -> annotation for the fields of dataclass ``cls`` and of the dataclasses
    inside it (purerl's argument classes put every flag at the top level)."""
    flags: dict[str, Any] = {}
    if not dataclasses.is_dataclass(cls):
        return flags
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # a class whose hints cannot be resolved: no flags known
        return flags
    for field in dataclasses.fields(cls):
        kind = hints.get(field.name, field.type)
        inner = typing.get_args(kind)[0] if typing.get_origin(kind) is typing.Annotated else kind
        if dataclasses.is_dataclass(inner):
            flags.update(flag_types(inner))
        else:
            flags["--" + field.name.replace("_", "-")] = inner
    return flags


WHOLE_NUMBER = re.compile(r"[0-9][0-9_]*(\.[0-9]*)?[eE][+]?[0-9]+|[0-9]{1,3}(_[0-9]{3})+")


def whole_numbers(argv: Sequence[str], flags: dict[str, Any]) -> list[str]:
    """``1e6``, ``2.5e6`` and ``2_000_000`` given to an integer flag, written as digits."""

    def is_int(kind: Any) -> bool:
        if kind is int:
            return True
        origin = typing.get_origin(kind)
        return origin in (typing.Union, types.UnionType) and int in typing.get_args(kind)

    def digits(value: str) -> str:
        if not WHOLE_NUMBER.fullmatch(value):
            return value
        number = float(value.replace("_", ""))
        return str(int(number)) if number.is_integer() and abs(number) < 2**63 else value

    out, previous = [], None
    for token in argv:
        flag, eq, value = token.partition("=")
        if eq and flag in flags and is_int(flags[flag]):
            token = f"{flag}={digits(value)}"
        elif previous in flags and is_int(flags[previous]):
            token = digits(token)
        out.append(token)
        previous = token if token.startswith("--") else None
    return out


def flag_hint(message: str, flags: dict[str, Any]) -> str:
    """ "; did you mean --lr" for each unknown ``--flag`` tyro names, from ``FLAG_ALIASES``
    (other libraries' names) or the closest flag of the command."""
    if not message.startswith("Unrecognized options") or not flags:
        return ""
    hints = []
    for unknown in re.findall(r"--[A-Za-z0-9_-]+", message):
        name = unknown[2:].replace("_", "-")
        target = FLAG_ALIASES.get(name)
        if target is not None and f"--{target}" in flags:
            hints.append(f"{unknown} is --{target} here")
            continue
        close = difflib.get_close_matches(f"--{name}", list(flags), n=1, cutoff=0.75)
        if close:
            hints.append(f"did you mean {close[0]} for {unknown}?")
    return "; " + "; ".join(hints) if hints else ""


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
