"""Entry point of the ``the-loop`` console script: errors become ``error: …`` and an exit code."""

from __future__ import annotations

import sys


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
        from the_loop.attention_hook import main as hook

        sys.exit(hook(args[1:]))
    sys.exit(_dispatch(args))


def _dispatch(args: list[str]) -> int:
    """Run one command; map every error to ``error: …`` and its exit code."""
    # lazy: start-up (`--version` answers before the CLI loads)
    import sqlite3

    from the_loop.cli import common
    from the_loop.cli.app import app
    from the_loop.errors import LoopError, ValidationFailed

    try:
        app(args=args, prog_name="the-loop", standalone_mode=True)
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
    return 0
