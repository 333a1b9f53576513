"""Entry point of the ``the-loop`` console script: errors become ``error: …`` and an exit code."""

from __future__ import annotations

import sys
from collections.abc import Callable


def run(argv: list[str] | None = None) -> None:
    """Run the CLI with ARGV (default: sys.argv); never lets a traceback reach the user."""
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):
        # lazy: start-up (`--version` answers before the CLI loads)
        from the_loop import __version__

        print(f"the-loop {__version__}")
        return
    if args[:1] == ["hook"]:
        # lazy: start-up (a hook runs on every harness hook and must not load the CLI)
        from the_loop.hook import main as hook

        sys.exit(hook(args[1:]))
    if FAST_WORDS.intersection(args[:3]):
        # lazy: start-up (the fast path of the read-only commands, docs/decisions/0033)
        from the_loop.cli import fast

        code = fast.run(args)
        if code is not None:
            sys.exit(code)
    sys.exit(_dispatch(args))


FAST_WORDS = frozenset({"sessions", "events", "status", "standing"})
"""The commands ``cli.fast`` may answer without the full CLI."""


def _dispatch(args: list[str]) -> int:
    """Run one command; map every error to ``error: …`` and its exit code."""
    plain_serve = _serve_args(args)
    if plain_serve is not None:
        # the daemon without typer (and Rich, which typer loads): ≈10 MB less resident
        return _guarded(lambda: _serve(*plain_serve))
    return _guarded(lambda: _typer(args))


def _serve_args(args: list[str]) -> tuple[str | None, bool] | None:
    """(``--config`` value, ``--debug``) when ARGS are ``[--config X] [--debug] serve``."""
    # lazy: start-up (only a command line that may be a plain `serve` reads the flags here)
    from the_loop.cli.flags import leading

    found = leading(args)
    return (found.config, found.debug) if found is not None and found.words == ["serve"] else None


def _serve(config: str | None, debug: bool) -> int:
    # lazy: start-up (what the daemon needs, and nothing of the CLI's parser)
    from pathlib import Path

    from the_loop.cli import common, serve_cmd

    common.STATE.config_path = Path(config) if config is not None else None
    common.STATE.debug = debug
    serve_cmd.serve()
    return 0


def _typer(args: list[str]) -> int:
    """Run ARGS through the typer app; click's own errors become ``error: …``."""
    # lazy: start-up (`--version` answers before the CLI loads)
    import typer
    from typer._click import exceptions as click

    from the_loop.cli import common
    from the_loop.cli.app import app

    try:
        code = app(args=args, prog_name="the-loop", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except click.UsageError as exc:
        common.print_error(usage_message(exc))
        if exc.ctx is not None:
            print(f"try '{exc.ctx.command_path} -h' for help", file=sys.stderr)
        return exc.exit_code
    except click.ClickException as exc:
        common.print_error(exc.format_message())
        return exc.exit_code
    except typer.Abort:
        print("aborted", file=sys.stderr)
        return 130


def _guarded(run: Callable[[], int]) -> int:
    """RUN's exit code; every error it raises as ``error: …`` and an exit code."""
    # lazy: start-up (`--version` answers before the CLI loads)
    import sqlite3

    from the_loop.cli import common
    from the_loop.errors import LoopError, ValidationFailed

    try:
        return run()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except KeyboardInterrupt:
        print("aborted", file=sys.stderr)
        return 130
    except ValidationFailed as exc:
        common.print_error(exc.message)
        for problem in exc.problems:
            print(f"  {problem}", file=sys.stderr)
        return exc.exit_code
    except LoopError as exc:
        common.print_error(exc.message)
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except sqlite3.Error as exc:
        common.print_error(f"the state database cannot be used: {exc}")
        return 1
    except Exception as exc:
        if common.STATE.debug:
            raise
        common.print_error(f"internal error: {exc!r} (run with --debug for the traceback)")
        return 1


def usage_message(exc: Exception) -> str:
    """A usage error in plain words: a value outside a fixed set says which values it may
    take (``--format must be table or json``); anything else keeps click's own message."""
    # lazy: start-up (`--version` answers before the CLI loads)
    from typer._click import exceptions as click

    if isinstance(exc, click.BadParameter) and exc.param is not None:
        choices = getattr(getattr(exc.param, "type_descriptor", None), "choices", None)
        if choices:
            names = [str(getattr(c, "value", c)) for c in choices]
            allowed = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
            return f"{max(exc.param.opts, key=len)} must be {allowed}"
    if isinstance(exc, click.ClickException):
        return exc.format_message()
    return str(exc)
