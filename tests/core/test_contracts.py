"""The wings' contracts (``[tool.importlinter]`` in pyproject.toml) hold on the source, and fail
when an upward import is planted; the tmux runner is reached only through the agent layer.

``lint-imports`` reads the source (grimp builds the import graph without importing it); the
planted runs use a copy of ``src/`` so the checkout is never touched.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

# Modules outside agent/ and runner/ that still reach the tmux runner through
# ``ctx.runners.tmux`` (none now: they ask ``agent.panes``). The list may only shrink.
RUNNERS_TMUX_DEBTS: frozenset[str] = frozenset()


def lint_imports(src: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def planted(tmp_path: Path, module: str, line: str) -> Path:
    copy = tmp_path / "src"
    shutil.copytree(SRC / "the_loop", copy / "the_loop", ignore=shutil.ignore_patterns("static"))
    target = copy / "the_loop" / module
    target.write_text(target.read_text() + f"\n{line}\n")
    return copy


def test_the_contracts_hold() -> None:
    done = lint_imports(SRC)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("store/events.py", "from the_loop.work_items import service", "wings in dependency order"),
        ("agent/core.py", "from the_loop.views import status", "wings in dependency order"),
        ("engine/__init__.py", "import subprocess", "the engine does no I/O"),
        ("web/terminal.py", "from the_loop.store import standing", "surfaces never import"),
        ("github/parse.py", "from the_loop.work_items import service", "doorways never import"),
    ],
)
def test_a_planted_import_breaks_its_contract(
    tmp_path: Path, module: str, line: str, broken: str
) -> None:
    done = lint_imports(planted(tmp_path, module, line))
    assert done.returncode != 0
    assert f"{broken}" in done.stdout and "BROKEN" in done.stdout, done.stdout


def runners_tmux_users(root: Path) -> set[str]:
    """Modules outside agent/ and runner/ that read an attribute ``runners.tmux``."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("agent/", "runner/")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "tmux"
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "runners"
            ):
                found.add(rel)
                break
    return found


def test_only_the_agent_layer_reaches_the_tmux_runner() -> None:
    assert runners_tmux_users(SRC / "the_loop") <= RUNNERS_TMUX_DEBTS


def test_the_tmux_check_finds_a_planted_use(tmp_path: Path) -> None:
    copy = planted(tmp_path, "views/status.py", "def f(ctx):\n    return ctx.runners.tmux")
    assert "views/status.py" in runners_tmux_users(copy / "the_loop")
