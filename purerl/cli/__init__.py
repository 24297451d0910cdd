"""The ``purerl`` command: subcommands over the algorithm registry, and one error path.

    purerl train ppo --env CartPole-v1 --num-seeds 4      train (every registered algorithm)
    purerl train --resume runs/<dir>                      continue a run (algorithm from the run)
    purerl eval runs/<dir> --episodes 10 --video ep.gif   returns of a trained policy, a video
    purerl plot runs/a runs/b --out compare.png           overlay runs, print a table
    purerl search --env CartPole-v1 --param lr=loguniform:1e-4,1e-2
    purerl envs                                           environment ids and their spaces
    purerl doctor                                         what works on this machine, how fast

Exit codes: 0 done; 1 training failed (a non-finite loss); 2 invalid input, an unusable run
directory or checkpoint, a full or unwritable disk; 130 / 143 stopped by SIGINT / SIGTERM (a
checkpoint is saved first). Anything the user can cause ends with one ``error:`` line on
stderr; an internal bug still shows its traceback.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("purerl.cli.train", "train an agent (purerl train <algorithm> --help)"),
    "eval": ("purerl.cli.evaluate", "evaluate a trained run's policy, record a video"),
    "plot": ("purerl.cli.plot", "overlay runs' learning curves and print their table"),
    "search": ("purerl.cli.search", "hyperparameter search over vmapped configurations"),
    "envs": ("purerl.cli.envs", "list environment ids with their observation and action spaces"),
    "doctor": ("purerl.cli.doctor", "check what runs on this machine's devices, and how fast"),
}
"""``purerl <name>`` -> (module with ``main(argv, prog) -> int``, one-line summary)."""


def usage(prog: str) -> str:
    from purerl import algos

    width = max(map(len, COMMANDS))
    lines = [f"usage: {prog} COMMAND [ARGUMENTS...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {summary}" for name, (_, summary) in COMMANDS.items()]
    lines += ["", f"algorithms (purerl train <algorithm>): {', '.join(algos.names())}"]
    lines += ["", f"Add --help after a command for its flags, e.g. {prog} train ppo --help."]
    from purerl.cli.parsing import wrap_lines

    return wrap_lines(lines, indent=width + 4)


def dispatch(argv: Sequence[str], prog: str) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        # Asked for, the usage is the answer (stdout); a bare command is an error (stderr).
        print(usage(prog), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        from purerl import __version__

        print(f"purerl {__version__}")
        return 0
    name = argv[0]
    if name not in COMMANDS:
        from purerl.cli.parsing import UsageError

        raise UsageError(
            f"unknown command {name!r}; choose one of {', '.join(COMMANDS)} (see {prog} --help)"
        )
    return load(COMMANDS[name][0]).main(list(argv[1:]), f"{prog} {name}")


class StartupInterrupted(KeyboardInterrupt):
    """Ctrl-C while a command was still loading: nothing has been written yet."""


class Startup:
    """Holds Ctrl-C while a command loads its libraries, then acts on it.

    An interrupt raised in the middle of an import can surface as anything (a failed C
    extension, an exception "ignored" in a garbage-collection callback while the command runs
    on), so while the process starts the signal is only recorded, and turned into a
    ``StartupInterrupted`` once loading is over. A second Ctrl-C ends the process at once.

    Python's cyclic garbage collector rests meanwhile: imports make little garbage and many
    objects it would walk again and again. Once loaded, the modules' objects are frozen out of
    its reach (``gc.freeze``): they live as long as the process, and each collection after
    that walks only what the command makes (about 0.1 s less of a short run's start).
    """

    def __init__(self):
        self.signum: int | None = None
        self.previous: Any = None

    def begin(self) -> None:
        gc.disable()
        self.previous = signal.signal(signal.SIGINT, self.handle)

    def handle(self, signum: int, frame: Any) -> None:
        if self.signum is not None:
            abort(STARTUP_MESSAGE, owns_process=True)
        self.signum = signum

    def end_quietly(self) -> None:
        """Restores the handler if a command never loaded a module (help, usage errors)."""
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
            self.previous = None
            gc.enable()
        self.signum = None

    def end(self) -> None:
        """Restores the handler; raises ``StartupInterrupted`` if Ctrl-C came meanwhile."""
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
            self.previous = None
            gc.freeze()
            gc.enable()
        if self.signum is not None:
            self.signum = None
            raise StartupInterrupted


STARTUP = Startup()
"""The start-up phase of the command this process runs (begun by ``guarded`` when it owns
the process, ended by ``load`` once the command's module is in)."""


def load(module: str):
    """Imports a command's module (the slow part of starting: JAX and the libraries behind
    it) and ends the start-up phase."""
    try:
        return importlib.import_module(module)
    except KeyboardInterrupt:
        raise StartupInterrupted from None
    finally:
        STARTUP.end()


def main(argv: Sequence[str] | None = None, prog: str = "purerl") -> int:
    """Runs ``purerl ARGV`` and returns the exit code (the console script's entry point; with
    ``argv`` None it owns the process, see ``guarded``)."""
    owns_process = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    writes_runs = bool(argv) and argv[0] in RUN_WRITERS
    code = guarded(lambda: dispatch(argv, prog), owns_process, writes_runs)
    if owns_process and may_exit_now():
        exit_now(code)
    return code


def may_exit_now() -> bool:
    """Whether nothing in the process needs the interpreter's usual exit: no profiler or
    debugger (``python -m cProfile -m purerl ...`` writes its profile then), and no module of
    the user's (a ``module:factory`` environment or a ``module:attr`` network, whose code may
    leave a file to be flushed when the interpreter tears down)."""
    custom = sys.modules.get("purerl.envs.custom")
    user_code = custom is not None and bool(custom.USER_MODULES)
    return sys.getprofile() is None and sys.gettrace() is None and not user_code


RUN_WRITERS = ("train", "search")
"""Commands that write run directories (what a stop says about checkpoints depends on it)."""


def guarded(command: Callable[[], int], owns_process: bool = True, writes_runs: bool = True) -> int:
    """Runs a command with the process settings every command uses, turning what the user
    can cause into one ``error:`` line and an exit code.

    A second Ctrl-C aborts at once: when the command owns its process, the process ends right
    after the error line, before library threads caught mid-save can add their own noise on
    the way out. A Ctrl-C while the libraries are still loading ends the same way.
    """
    if owns_process:
        STARTUP.begin()
        tolerate_unencodable_output()
    try:
        from purerl.cli.parsing import HelpShown
        from purerl.config import USER_ERRNOS, ConfigError, os_error_reason
        from purerl.core.loop import NonFiniteLossError
        from purerl.run.checkpoint import CheckpointError
        from purerl.run.signals import Stopped
        from purerl.runtime import configure_jax, quiet_libraries

        configure_jax()
        quiet_libraries()
    except KeyboardInterrupt:
        STARTUP.end_quietly()
        return abort(STARTUP_MESSAGE, owns_process)
    try:
        return command()
    except HelpShown:
        return 0
    except (ConfigError, CheckpointError) as err:
        return fail(str(err), 2)
    except NonFiniteLossError as err:
        return fail(str(err), 1)
    except Stopped as err:
        return fail(str(err), 128 + err.signum)
    except StartupInterrupted:
        return abort(STARTUP_MESSAGE, owns_process)
    except KeyboardInterrupt:
        return abort(
            "aborted by Ctrl-C; a run directory keeps its last complete checkpoint", owns_process
        )
    except BrokenPipeError:
        return output_closed(owns_process, writes_runs)
    except OSError as err:
        if err.errno not in USER_ERRNOS:
            raise
        where = f" {err.filename}" if err.filename else ""
        return fail(f"cannot use{where}: {os_error_reason(err)}", 2)
    finally:
        STARTUP.end_quietly()


STARTUP_MESSAGE = "interrupted while starting; nothing was written"


def tolerate_unencodable_output() -> None:
    """Writes what the terminal's encoding cannot hold as escapes (``\\xfc``) instead of
    failing: a run directory named in Unicode, printed where ``PYTHONIOENCODING=ascii`` or a
    C locale is set, must not stop the command. Standard error does so by default."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def abort(message: str, owns_process: bool) -> int:
    code = fail(message, 128 + signal.SIGINT)
    if owns_process:
        sys.stdout.flush()
        os._exit(code)
    return code


def run_script(module: str, function: str, *leading: str) -> None:
    """The body of an ``experiments/`` script: ``module.function(*leading, argv, prog)`` as a
    guarded command, with ``prog`` the script's own name. ``module`` is imported inside the
    guard, so a Ctrl-C while it loads still ends in one line."""
    prog = f"python {sys.argv[0]}"

    def command() -> int:
        entry = getattr(load(module), function)
        return entry(*leading, sys.argv[1:], prog)

    writes_runs = module.rpartition(".")[2] in RUN_WRITERS
    sys.exit(guarded(command, writes_runs=writes_runs))


def exit_now(code: int) -> NoReturn:
    """Ends a process whose command has returned ``code``, without the interpreter's teardown.

    What a normal exit does that can matter still happens: other non-daemon threads are
    joined, ``atexit`` handlers run (JAX's, logging's, any library's), standard output and
    error are flushed. What is skipped is freeing every module and object one by one, which
    with JAX, flax and matplotlib loaded takes about 0.4 s of a short run's wall time; the
    operating system reclaims the memory at once. Files the command wrote are closed by then
    (the run layer closes its sinks, checkpoints and locks before returning).
    """
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            # Some libraries' threads re-raise their failure from ``join`` (orbax's, after a
            # save the disk could not hold, already reported); the interpreter's exit does not.
            with contextlib.suppress(Exception):
                thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def output_closed(owns_process: bool, writes_runs: bool = True) -> int:
    """The reader of standard output went away (``purerl envs | head -1``, a killed ``tee``):
    one line on standard error and the exit code of a process ended by SIGPIPE."""
    if owns_process:
        # Python flushes stdout again on the way out; pointed at /dev/null that flush cannot
        # fail and add its own "Exception ignored" lines.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    saved = "; a run directory keeps the checkpoints it had already saved" if writes_runs else ""
    return fail(
        f"standard output was closed by its reader (broken pipe), so the command stopped{saved}",
        128 + signal.SIGPIPE,
    )


def fail(message: str, code: int) -> int:
    with contextlib.suppress(OSError):  # standard error closed too: the exit code still tells
        print(f"error: {' '.join(message.split())}", file=sys.stderr, flush=True)
    return code
