"""The shape of the code, checked over the source (AST, nothing imported):

- no SQL outside ``src/the_loop/store/``: no ``execute``/``executemany``/``executescript`` call
  and no string literal that reads as a SQL statement;
- no import cycle among the modules of ``the_loop`` (module-level imports; those under
  ``if TYPE_CHECKING:`` and inside functions do not count), and none either when the imports
  inside functions are counted (a lazy import is for start-up speed, not to hide a cycle);
- every import inside a function is marked ``# lazy: <reason>`` on its own line or on the line
  before; a marked import also covers the import statements that directly follow it (a block);
- a module longer than 600 lines says why in its docstring ("long because …"); the wings' order
  itself is the import-linter contracts' (``tests/core/test_contracts.py``).

Each check is also run on a small planted violation, so that a check that finds nothing cannot
pass by being blind.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "the_loop"
STORE = f"{PACKAGE}.store"
LAZY_MARK = re.compile(r"#\s*lazy:\s*\S")
SQL_CALLS = frozenset({"execute", "executemany", "executescript"})
SQL_TEXT = re.compile(
    r"\b(SELECT\b[\s\S]+\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM"
    r"|CREATE\s+(UNIQUE\s+)?(TABLE|INDEX|VIEW|TRIGGER)|DROP\s+(TABLE|INDEX)|ALTER\s+TABLE"
    r"|PRAGMA\s+\w+|BEGIN\s+(IMMEDIATE|EXCLUSIVE|DEFERRED))\b"
)


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module
    lines: list[str]

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    def where(self, node: ast.AST) -> str:
        return f"{self.path.relative_to(SRC.parent)}:{getattr(node, 'lineno', 0)}"


def parse(name: str, path: Path, text: str | None = None) -> Module:
    source = path.read_text("utf-8") if text is None else text
    return Module(name, path, ast.parse(source, str(path)), source.splitlines())


def package_modules(root: Path = SRC) -> dict[str, Module]:
    """Every module of the package under ROOT, by dotted name."""
    found: dict[str, Module] = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = parse(".".join(parts), path)
    return found


# --- SQL -------------------------------------------------------------------------------------


def _docstrings(tree: ast.Module) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _literal_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return " ".join(_literal_text(v) or " x " for v in node.values)
    return None


def sql_violations(module: Module) -> list[str]:
    """Where MODULE calls a SQL method or holds a SQL statement in a string literal."""
    found: list[str] = []
    docstrings = _docstrings(module.tree)
    inside_fstring: set[int] = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.JoinedStr):
            inside_fstring.update(id(v) for v in node.values)
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in SQL_CALLS:
                found.append(f"{module.where(node)}: .{node.func.attr}(...) call")
            continue
        if id(node) in docstrings or id(node) in inside_fstring:
            continue
        text = _literal_text(node)
        if text is not None and SQL_TEXT.search(text):
            found.append(f"{module.where(node)}: SQL text {text.strip()[:50]!r}")
    return found


def _in_store(name: str) -> bool:
    return name == STORE or name.startswith(f"{STORE}.")


def test_no_sql_outside_store() -> None:
    violations = [
        v
        for name, module in package_modules().items()
        if not _in_store(name)
        for v in sql_violations(module)
    ]
    assert violations == [], "SQL belongs in the_loop.store:\n" + "\n".join(violations)


def test_the_sql_check_finds_a_planted_statement() -> None:
    planted = parse(
        "the_loop.planted",
        SRC / PACKAGE / "planted.py",
        'def count(db):\n    """Count SELECT rows FROM a table (a docstring: allowed)."""\n'
        '    sql = "SELECT COUNT(*) FROM sessions"\n'
        "    return db.connect().execute(sql)\n"
        "def where(t):\n    return f'DELETE FROM {t} WHERE 1'\n",
    )
    assert [v.split(": ", 1)[1] for v in sql_violations(planted)] == [
        "SQL text 'SELECT COUNT(*) FROM sessions'",
        ".execute(...) call",
        "SQL text 'DELETE FROM   x   WHERE 1'",
    ]
    store = package_modules()
    assert any(sql_violations(m) for n, m in store.items() if _in_store(n)), "check is blind"


# --- imports ---------------------------------------------------------------------------------


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_level_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports run when the module is imported: not in functions, not under TYPE_CHECKING."""

    def walk(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
        for stmt in body:
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                yield stmt
            elif isinstance(stmt, ast.If):
                if not _type_checking(stmt.test):
                    yield from walk(stmt.body)
                yield from walk(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                for part in (stmt.body, stmt.orelse, stmt.finalbody):
                    yield from walk(part)
                for handler in stmt.handlers:
                    yield from walk(handler.body)
            elif isinstance(stmt, ast.With | ast.ClassDef):
                yield from walk(stmt.body)

    yield from walk(tree.body)


def _resolve(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = module.name.split(".")
    base = parts if module.is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported_modules(module: Module, known: set[str]) -> set[str]:
    """The package's modules that MODULE imports at module level."""
    targets: set[str] = set()
    for node in module_level_imports(module.tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = _resolve(module, node)
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        targets.update(n for n in names if n in known and n != module.name)
    return targets


def import_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    known = set(modules)
    return {name: imported_modules(module, known) for name, module in modules.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[str] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def test_no_import_cycles() -> None:
    cycles = find_cycles(import_graph(package_modules()))
    assert cycles == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def function_level_edges(module: Module, known: set[str]) -> set[str]:
    """The package's modules that MODULE imports inside functions."""
    targets: set[str] = set()
    for body, i in _function_imports(module.tree):
        node = body[i]
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = _resolve(module, node)
            names = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        targets.update(n for n in names if n in known and n != module.name)
    return targets


def test_no_cycle_hides_behind_a_lazy_import() -> None:
    """A function-level import is for start-up speed, not to break a cycle: the graph with
    them still has none. The root package's lazy ``TheLoop`` attribute is the one exception
    (every module importing ``__version__`` would otherwise reach the SDK)."""
    modules = package_modules()
    graph = import_graph(modules)
    for name, module in modules.items():
        if name != PACKAGE:
            graph[name] |= function_level_edges(module, set(modules))
    cycles = find_cycles(graph)
    assert cycles == [], "cycles through lazy imports:\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def test_the_cycle_check_finds_a_planted_cycle() -> None:
    modules = package_modules()
    graph = import_graph(modules)
    planted = parse(
        "the_loop.errors",
        SRC / PACKAGE / "errors.py",
        "from __future__ import annotations\nfrom the_loop.context import Ctx\n",
    )
    graph["the_loop.errors"] = imported_modules(planted, set(modules))
    cycles = find_cycles(graph)
    assert any("the_loop.errors" in c and "the_loop.context" in c for c in cycles), cycles


def test_type_checking_and_function_imports_are_not_edges() -> None:
    text = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from the_loop import sdk\n"
        "def f():\n    from the_loop import daemon  # lazy: start-up\n"
        "from the_loop import events as ev\nfrom . import refs\n"
    )
    module = parse("the_loop.planted", SRC / PACKAGE / "planted.py", text)
    known = {
        "the_loop",
        "the_loop.sdk",
        "the_loop.daemon.serve",
        "the_loop.events",
        "the_loop.refs",
    }
    assert imported_modules(module, known) == {"the_loop.events", "the_loop.refs"}


# --- function-level imports ------------------------------------------------------------------


def _function_imports(tree: ast.Module) -> Iterator[tuple[list[ast.stmt], int]]:
    """(body, position) of every import statement inside a function."""

    def walk(node: ast.AST, in_function: bool) -> Iterator[tuple[list[ast.stmt], int]]:
        for field in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for i, stmt in enumerate(body):
                if in_function and isinstance(stmt, ast.Import | ast.ImportFrom):
                    yield body, i
                inner = in_function or isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
                yield from walk(stmt, inner)
        if isinstance(node, ast.Match):
            for case in node.cases:
                yield from walk(case, in_function)

    yield from walk(tree, False)


def unmarked_function_imports(module: Module) -> list[str]:
    """Imports inside functions without a ``# lazy: <reason>`` mark (same line or the line
    before; a marked import covers the import statements directly after it)."""

    def marked(stmt: ast.stmt) -> bool:
        same = module.lines[stmt.lineno - 1]
        before = module.lines[stmt.lineno - 2] if stmt.lineno > 1 else ""
        return bool(LAZY_MARK.search(same) or LAZY_MARK.search(before))

    found: list[str] = []
    for body, i in _function_imports(module.tree):
        j = i
        while not marked(body[j]):
            if j == 0 or not isinstance(body[j - 1], ast.Import | ast.ImportFrom):
                found.append(f"{module.where(body[i])}: unmarked import in a function")
                break
            j -= 1
    return found


def test_function_level_imports_are_marked() -> None:
    violations = [v for m in package_modules().values() for v in unmarked_function_imports(m)]
    assert violations == [], "mark each with `# lazy: <reason>`:\n" + "\n".join(violations)


def test_the_lazy_check_finds_an_unmarked_import() -> None:
    text = (
        "def a():\n    # lazy: start-up\n    import json\n\n    import csv\n    return json, csv\n"
        "def b():\n    import uvicorn  # lazy: only serve needs it\n    return uvicorn\n"
        "def c():\n    x = 1\n    import socket\n    return socket, x\n"
        "class K:\n    def m(self):\n        if True:\n            import os\n        return os\n"
    )
    module = parse("the_loop.planted", SRC / PACKAGE / "planted.py", text)
    assert [v.split(":")[1] for v in unmarked_function_imports(module)] == ["12", "17"]


MAX_MODULE_LINES = 600
BROAD_EXCEPT_PER_1000_LINES = 0.5


LONG_BECAUSE = re.compile(r"\blong because\b", re.I)


def oversized(modules: dict[str, Module]) -> list[str]:
    """Modules longer than ``MAX_MODULE_LINES`` whose docstring does not say why."""
    return [
        f"{m.name}: {len(m.lines)} lines"
        for m in modules.values()
        if len(m.lines) > MAX_MODULE_LINES
        and not LONG_BECAUSE.search(ast.get_docstring(m.tree) or "")
    ]


def _reraises(handler: ast.ExceptHandler) -> bool:
    """True for a clean-up handler that ends by re-raising what it caught."""
    last = handler.body[-1]
    return isinstance(last, ast.Raise) and last.exc is None


def broad_handlers(modules: dict[str, Module]) -> list[str]:
    """Every ``except Exception`` (or bare ``except``) in MODULES that swallows what it
    catches (a clean-up that re-raises is not counted)."""
    broad = {"Exception", "BaseException"}
    return [
        m.where(node)
        for m in modules.values()
        for node in ast.walk(m.tree)
        if isinstance(node, ast.ExceptHandler)
        and (node.type is None or (isinstance(node.type, ast.Name) and node.type.id in broad))
        and not _reraises(node)
    ]


def test_long_modules_say_why() -> None:
    assert oversized(package_modules()) == []


def test_broad_exception_handlers_only_at_process_edges() -> None:
    modules = package_modules()
    total = sum(len(m.lines) for m in modules.values())
    handlers = broad_handlers(modules)
    assert len(handlers) <= total / 1000 * BROAD_EXCEPT_PER_1000_LINES, handlers


def test_the_size_and_handler_checks_find_planted_violations() -> None:
    text = "x = 1\n" * 601 + "try:\n    pass\nexcept Exception:\n    pass\n"
    planted = {"the_loop.big": parse("the_loop.big", SRC / "the_loop" / "big.py", text)}
    assert oversized(planted) == ["the_loop.big: 605 lines"]
    why = '"""Long because x."""\n'
    said = {"the_loop.big": parse("the_loop.big", SRC / "the_loop" / "big.py", why + text)}
    assert oversized(said) == []
    assert broad_handlers(planted) == ["src/the_loop/big.py:604"]
