"""The hook's own JSON (``the_loop.hook_json``) reads and writes what ``json`` does, and its
SQLite (``the_loop.hook_sqlite``) loads without ``functools``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import the_loop
from the_loop import hook_json

SRC = str(Path(the_loop.__file__).resolve().parents[1])

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(documents)
def test_it_writes_what_json_writes_and_reads_it_back(value: Any) -> None:
    for ascii in (True, False):
        text = hook_json.dumps(value, ascii=ascii)
        assert text == json.dumps(value, separators=(",", ":"), ensure_ascii=ascii)
        assert hook_json.loads(text) == value
        assert hook_json.loads(f" \n{json.dumps(value, indent=2)}\t") == value


@pytest.mark.parametrize("bad", ["", "  ", "{", '{"a": 1} x', "[1,]", "nope", '{"a" 1}'])
def test_a_bad_document_is_a_value_error(bad: str) -> None:
    with pytest.raises(ValueError):
        hook_json.loads(bad)


def test_what_json_cannot_write_is_refused() -> None:
    with pytest.raises(TypeError):
        hook_json.dumps({1: "x"})
    with pytest.raises(TypeError):
        hook_json.dumps({"a": object()})


def test_the_hook_loads_neither_json_nor_re_nor_sqlite3_dbapi_nor_functools() -> None:
    from the_loop.harness.claude_hooks import hook_argv

    argv = hook_argv()
    probe = argv[4].replace(
        "from the_loop.attention_hook import main;sys.exit(main(sys.argv[1:]))",
        "import the_loop.attention_hook;print(sorted(m for m in sys.modules"
        " if m in ('json','re','sqlite3','datetime','enum','functools','collections')))",
    )
    assert probe != argv[4]
    done = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_sqlite_loaded_without_functools_caches_statements_and_leaves_functools_real() -> None:
    """The stand-in serves the extension's statement cache, then leaves: ``import functools``
    afterwards is the standard library's."""
    probe = (
        "import sys;from the_loop.hook_sqlite import sqlite;"
        "assert 'functools' not in sys.modules, 'stand-in left behind';"
        "c=sqlite.connect(':memory:',isolation_level=None,cached_statements=4);"
        "total=sum(c.execute('select ?+?',(i,i%7)).fetchone()[0] for i in range(500));"
        "import functools;print(total,hasattr(functools,'reduce'),'collections' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", f"import sys;sys.path.insert(0,{SRC!r});{probe}"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    expected = sum(i + i % 7 for i in range(500))
    assert done.stdout.split() == [str(expected), "True", "True"]


def test_sqlite_in_a_process_that_has_functools_is_the_plain_extension() -> None:
    import functools

    from the_loop.hook_sqlite import sqlite

    assert sys.modules["functools"] is functools
    assert sqlite is sys.modules["_sqlite3"]
