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
    sys.exit(_dispatch(args))


def _dispatch(args: list[str]) -> int:
    """Run one command; map every error to ``error: …`` and its exit code."""
    return _guarded(lambda: _click(args))


def _click(args: list[str]) -> int:
    """Run ARGS through the click app; click's own errors become ``error: …``."""
    # lazy: start-up (`--version` and `hook` answer before the CLI loads)
    import click

    from the_loop.cli import common
    from the_loop.cli.app import app

    try:
        code = app.main(args=args, prog_name="the-loop", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except click.UsageError as exc:
        common.print_error(usage_message(exc))
        if exc.ctx is not None:
            print(f"try '{exc.ctx.command_path} -h' for help", file=sys.stderr)
        return exc.exit_code
    except click.ClickException as exc:
        common.print_error(exc.format_message())
        return exc.exit_code
    except click.Abort:
        print("aborted", file=sys.stderr)
        return 130


def _guarded(run: Callable[[], int]) -> int:
    """RUN's exit code; every error it raises as ``error: …`` and an exit code."""
    # lazy: start-up (`--version` and `hook` answer before the CLI loads)
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
    except Exception as exc:
        sqlite3 = sys.modules.get("sqlite3")  # loaded by the commands that read the database
        if sqlite3 is not None and isinstance(exc, sqlite3.Error):
            common.print_error(f"the state database cannot be used: {exc}")
            return 1
        if common.STATE.debug:
            raise
        common.print_error(f"internal error: {exc!r} (run with --debug for the traceback)")
        return 1


def usage_message(exc: Exception) -> str:
    """A usage error in plain words: a value outside a fixed set says which values it may
    take (``--format must be table or json``); anything else keeps click's own message."""
    import click  # lazy: start-up (`--version` and `hook` answer before the CLI loads)

    param = exc.param if isinstance(exc, click.BadParameter) else None
    if param is not None and isinstance(param.type, click.Choice):
        names = [str(c) for c in param.type.choices]
        allowed = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        return f"{max(param.opts, key=len)} must be {allowed}"
    if isinstance(exc, click.ClickException):
        return exc.format_message()
    return str(exc)
