"""Generated references in docs/ match the code; README opens with the two commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from the_loop import docgen

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("name", sorted(docgen.GENERATED))
def test_generated_doc_is_current(name: str) -> None:
    committed = (DOCS / name).read_text(encoding="utf-8")
    assert committed == docgen.GENERATED[name](), f"docs/{name} is stale: run `make docs`"


def test_readme_starts_with_make_run_and_make_test() -> None:
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    head = readme[:600]
    assert head.index("make run") < head.index("make test")


def test_decision_records_exist() -> None:
    names = {p.name for p in (DOCS / "decisions").glob("*.md")}
    assert any("sqlite" in n for n in names)
    assert any("daemon" in n for n in names)
