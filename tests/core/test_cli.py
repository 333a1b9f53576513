"""CLI edges: usage errors exit 2 without a traceback; --version is fast."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import Env


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
        "assert 'fastapi' not in sys.modules and 'typer' not in sys.modules, sorted(sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("the-loop ")
