"""``the-loop doctor``: is everything the-loop needs here?"""

from __future__ import annotations

import sys

import click

from the_loop.cli import common
from the_loop.cli.base import command

_MARK = {"ok": "ok", "warning": "warn", "missing": "MISSING", "failed": "FAILED"}
"""How each ``CheckStatus`` is shown in the table."""


@command("doctor")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", help="table or json"
)
def doctor(fmt: str) -> None:
    """Check that everything the-loop needs is here.

    tmux, git, the harness binaries, the state dir and the port; exits 1 when a
    required piece is missing or broken.
    """
    from the_loop.views.doctor import is_install_hint, run_doctor  # lazy: start-up

    report = run_doctor(common.loaded_config().config)
    if fmt == "json":
        common.print_json(report)
    else:
        for check in report.checks:
            optional = "" if check.required or check.status == "warning" else " (optional)"
            mark = common.status_word(_MARK[check.status], width=8)
            print(f"{mark} {check.name:<18} {check.detail}{optional}")
            if check.hint and check.status != "ok":
                label = "install:" if is_install_hint(check.hint) else "fix:"
                print(f"{'':<8} {'':<18} {label} {check.hint}")
        print("all good" if report.ok else "some required pieces are missing")
    sys.exit(0 if report.ok else 1)
