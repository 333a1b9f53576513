"""CLI edges: usage errors exit 2 without a traceback; --version is fast."""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
from click import Group as TyperGroup

from tests.conftest import Env
from tests.helpers import run_in_terminal
from the_loop.cli.app import app


def test_usage_errors_exit_2_without_traceback(loop_env: Env) -> None:
    for args in (["events", "--bogus"], ["no-such-command"], ["events", "--limit", "zero"]):
        result = loop_env.run(*args)
        assert result.exit_code == 2, args
        assert "Traceback" not in result.stderr
        assert "Error:" in result.stderr or "error:" in result.stderr


def test_version_prints_without_loading_the_app() -> None:
    code = (
        "import sys; from the_loop.cli.main import run\n"
        "try:\n    run(['--version'])\nexcept SystemExit:\n    pass\n"
        "assert 'fastapi' not in sys.modules and 'click' not in sys.modules, sorted(sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("the-loop ")


def test_serve_loads_no_rich_and_its_errors_stay_plain(tmp_path: Path) -> None:
    """``[--config X] [--debug] serve`` loads no Rich (the daemon keeps less resident); a bad
    config still ends in ``error: …`` and exit 2; ``serve --help`` is click's."""
    code = (
        "import sys; from the_loop.cli.main import run\n"
        "try:\n    run(sys.argv[1:])\n"
        "finally:\n    sys.stderr.write(f\"\\nRICH={'rich' in sys.modules}\\n\")\n"
    )
    missing = str(tmp_path / "missing.yaml")
    for args in (["--config", missing, "serve"], [f"--config={missing}", "--debug", "serve"]):
        out = subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 2, out
        assert out.stderr.startswith(f"error: config file {missing} does not exist"), out.stderr
        assert "Traceback" not in out.stderr and out.stderr.endswith("RICH=False\n"), out.stderr
    helped = subprocess.run(
        [sys.executable, "-c", code, "serve", "--help"], capture_output=True, text=True, timeout=60
    )
    assert helped.returncode == 0 and "Run the daemon in the foreground" in helped.stdout


# --- the CLI people expect (issue 13, item 4) ---------------------------------------------

CLI = str(Path(sys.executable).with_name("the-loop"))
"""The installed console script."""


def _paths() -> tuple[list[list[str]], list[list[str]]]:
    """Every command and every group of the Typer app, as argv prefixes (root group: [])."""
    commands: list[list[str]] = []
    groups: list[list[str]] = []

    def walk(cmd: click.Command, path: list[str], parent: click.Context | None) -> None:
        ctx = click.Context(cmd, info_name=path[-1] if path else "the-loop", parent=parent)
        if isinstance(cmd, TyperGroup):
            groups.append(path)
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None
                walk(sub, [*path, name], ctx)
        else:
            commands.append(path)

    walk(app, [], None)
    return commands, groups


def _run_installed(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_dash_h_works_on_every_command_and_group(loop_env: Env, cli: Any) -> None:
    """Every command and group of the app (walked, so a new one is covered) in this process;
    a few through the installed script."""
    commands, groups = _paths()
    assert ["standing", "attach"] in commands and ["standing", "logs"] in commands
    for path in commands + groups:
        result = cli(*path, "-h")
        assert result.exit_code == 0, (path, result.stderr)
        assert result.stdout.startswith(f"Usage: {' '.join(['the-loop', *path])}"), path
        assert "-h, --help" in result.stdout, path
    env = loop_env.process_env()
    for path in ([], ["sessions"], ["standing", "attach"], ["mcp"], ["config", "validate"]):
        installed = _run_installed([*path, "-h"], env)
        assert installed.returncode == 0, (path, installed.stderr)
        assert installed.stdout.startswith(f"Usage: {' '.join(['the-loop', *path])}"), path
        assert "\x1b" not in installed.stdout + installed.stderr, path


LISTING_GROUPS = [["attention"]]
"""Groups whose bare form lists (``the-loop attention``); their subcommands (``explain``) hang
under the listing."""


def test_a_bare_group_prints_its_help_and_exits_0(loop_env: Env) -> None:
    _, groups = _paths()
    assert [] in groups and ["sessions"] in groups and ["standing"] in groups
    env = loop_env.process_env()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda p: (p, _run_installed(p, env)), groups))
    for path, result in results:
        assert result.returncode == 0, (path, result.stderr)
        if path in LISTING_GROUPS:  # its bare form is a listing (the issue's `the-loop attention`)
            assert "Usage:" not in result.stdout, path
            continue
        assert result.stdout.startswith(f"Usage: {' '.join(['the-loop', *path])}"), path
        assert "Commands:" in result.stdout and result.stderr == "", path


def test_no_summary_line_in_a_group_help_is_cut() -> None:
    """Each command's one-line summary in its group's help is its whole first paragraph (never
    cut at a width of 80 columns, nor at an abbreviation such as "e.g.")."""
    root = app

    def check(group: TyperGroup, ctx: click.Context) -> None:
        names = group.list_commands(ctx)
        limit = 78 - 6 - max(len(n) for n in names)  # click's layout at 80 columns
        for name in names:
            sub = group.get_command(ctx, name)
            assert sub is not None
            first = " ".join((sub.help or "").split("\n\n")[0].split())
            assert first and sub.get_short_help_str(limit) == first, (name, first)
            if isinstance(sub, TyperGroup):
                check(sub, click.Context(sub, info_name=name, parent=ctx))

    assert isinstance(root, TyperGroup)
    check(root, click.Context(root, info_name="the-loop"))
    top = subprocess.run([CLI, "-h"], capture_output=True, text=True, check=True).stdout
    assert re.search(r"^  mcp +Serve MCP over stdio, for agent CLIs that launch it\.$", top, re.M)
    assert not [ln for ln in top.splitlines()[1:] if ln.endswith("...")]


def test_format_errors_in_plain_words(loop_env: Env) -> None:
    result = loop_env.run("sessions", "list", "--format", "xml")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == "error: --format must be table or json"
    assert "the-loop sessions list -h" in result.stderr and "Traceback" not in result.stderr
    events = loop_env.run("events", "--format", "yaml")
    assert events.exit_code == 2
    assert events.stderr.startswith("error: --format must be table, json or jsonl\n")


def test_empty_tables_say_what_is_missing_and_how_to_get_one(loop_env: Env) -> None:
    sessions = loop_env.run("sessions", "list")
    assert sessions.exit_code == 0
    assert sessions.stdout.startswith("no sessions; one starts when an authorized user")
    assert loop_env.run("sessions", "list", "--format", "json").stdout.strip() == "[]"
    standing = loop_env.run("standing", "list")
    assert standing.stdout.startswith("no standing sessions; ")
    assert "the-loop standing create NAME" in standing.stdout
    assert loop_env.run("inbox", "list").stdout.startswith("no inbox items; ")
    assert loop_env.run("outbox", "list", "--status", "failed").stdout.startswith(
        "no failed write-backs; "
    )


def _in_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """The installed CLI on a pseudo-terminal: its exit code and everything it wrote."""
    return run_in_terminal([CLI, *args], env)


def test_colour_only_on_a_terminal_and_never_with_no_color(loop_env: Env) -> None:
    env = loop_env.process_env()
    env.pop("NO_COLOR", None)
    env["TERM"] = "xterm-256color"
    piped = loop_env.run("status", env=env)
    assert piped.exit_code == 1 and "stopped" in piped.stdout
    bad = loop_env.run("sessions", "show", "github:octo/repo#1", env=env)
    assert bad.stderr.startswith("error: ")
    assert "\x1b" not in piped.stdout + piped.stderr + bad.stdout + bad.stderr

    code, shown = _in_a_terminal(["status"], env)
    assert code == 1 and "\x1b[" in shown and "stopped" in shown
    code, shown = _in_a_terminal(["sessions", "show", "github:octo/repo#1"], env)
    assert code == 1 and "\x1b[31merror:\x1b[0m" in shown
    env["NO_COLOR"] = "1"
    code, shown = _in_a_terminal(["status"], env)
    assert code == 1 and "stopped" in shown and "\x1b" not in shown


def test_start_shows_a_spinner_on_a_terminal_only(loop_env: Env) -> None:
    env = loop_env.process_env()
    env["TERM"] = "xterm-256color"
    code, shown = _in_a_terminal(["start"], env)
    try:
        assert code == 0, shown
        assert "starting the-loop…" in shown and "the-loop is running at" in shown
    finally:
        assert loop_env.run("stop").exit_code == 0
    piped = loop_env.run("start")
    try:
        assert piped.exit_code == 0
        assert "starting" not in piped.stderr and "\x1b" not in piped.stdout + piped.stderr
    finally:
        stopped = loop_env.run("stop")
    assert "stopping" not in stopped.stderr and "\x1b" not in stopped.stdout + stopped.stderr


def test_attach_without_a_terminal_says_so_in_one_line(loop_env: Env) -> None:
    for args in (["sessions", "attach", "github:octo/repo#1"], ["standing", "attach", "nobody"]):
        result = loop_env.run(*args)
        assert result.exit_code == 2, args
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: attach needs a terminal"), lines
        assert " logs " in lines[0]
