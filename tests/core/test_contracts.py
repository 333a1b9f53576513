"""The wings' contracts (``[tool.importlinter]`` in pyproject.toml) hold on the source, and fail
when an upward import is planted; the tmux runner is reached only through the agent layer; and
a wing is entered only through what its ``__init__.py`` offers (``__all__``).

``lint-imports`` reads the source (grimp builds the import graph without importing it); the
planted runs use a copy of ``src/`` so the checkout is never touched.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
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


def faces(root: Path, package: tuple[str, ...]) -> frozenset[str]:
    """What PACKAGE's ``__init__.py`` offers: its literal ``__all__`` (names and submodules)."""
    tree = ast.parse((root.joinpath(*package) / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "__all__"
        ):
            return frozenset(ast.literal_eval(node.value))
    return frozenset()


def imported_paths(
    tree: ast.Module, is_package: Callable[[tuple[str, ...]], bool]
) -> Iterator[tuple[str, ...]]:
    """Every ``the_loop`` path a module names: ``a.b`` for ``import the_loop.a.b`` or ``from
    the_loop.a import b``, and the attributes read from a package bound by an import."""
    bound: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            head, *rest = node.module.split(".")
            if head != "the_loop":
                continue
            module = tuple(rest)
            if module and not is_package(module):
                yield module
                continue
            for alias in node.names:
                yield (*module, alias.name)
                if is_package((*module, alias.name)):
                    bound[alias.asname or alias.name] = (*module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                head, *rest = alias.name.split(".")
                if head == "the_loop" and rest:
                    yield tuple(rest)
                    if alias.asname and is_package(tuple(rest)):
                        bound[alias.asname] = tuple(rest)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
        ):
            yield (*bound[node.value.id], node.attr)


def face_breaches(root: Path) -> list[str]:
    """Imports from one wing into another that pass by what a package there offers."""

    def is_package(path: tuple[str, ...]) -> bool:
        return (root.joinpath(*path) / "__init__.py").is_file()

    breaches = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        wing = rel.parts[0]
        for named in imported_paths(ast.parse(path.read_text(encoding="utf-8")), is_package):
            if named[0] == wing or not is_package(named[:1]):
                continue
            for depth in range(1, len(named)):
                if not is_package(named[:depth]):
                    break
                if named[depth] not in faces(root, named[:depth]):
                    breaches.append(
                        f"{rel.as_posix()} reaches the_loop.{'.'.join(named[: depth + 1])}, "
                        f"which the_loop.{'.'.join(named[:depth])} does not offer (__all__)"
                    )
                    break
    return breaches


def test_other_wings_import_only_what_a_wing_offers() -> None:
    assert face_breaches(SRC / "the_loop") == []


@pytest.mark.parametrize(
    "line",
    [
        "from the_loop.store.migrations import MIGRATIONS",
        "from the_loop.store import pg",
        "import the_loop.runner.sandbox_forward",
        "from the_loop.agent import core",
        "from the_loop import agent\nagent.core",
    ],
)
def test_the_face_check_finds_a_planted_reach(tmp_path: Path, line: str) -> None:
    copy = planted(tmp_path, "views/status.py", line)
    assert any(b.startswith("views/status.py reaches") for b in face_breaches(copy / "the_loop"))
