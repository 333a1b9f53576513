"""Generated references in docs/ match the code; README opens with the two commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from the_loop.cli import docgen

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


def _group_verbs(group: str) -> list[str]:
    import click
    from click import Group as TyperGroup

    from the_loop.cli.app import app

    root = app
    assert isinstance(root, TyperGroup)
    ctx = click.Context(root, info_name="the-loop")
    sub = root.get_command(ctx, group)
    assert isinstance(sub, TyperGroup)
    return sub.list_commands(click.Context(sub, info_name=group, parent=ctx))


@pytest.mark.parametrize("group", ["sessions", "standing"])
def test_the_guide_of_a_group_shows_every_verb(group: str) -> None:
    """docs/<group>.md shows `the-loop GROUP VERB` for every verb the CLI has (`a|b` counts
    for both), so a new command cannot land undocumented."""
    import re

    text = (DOCS / f"{group}.md").read_text(encoding="utf-8")
    missing = [
        verb
        for verb in _group_verbs(group)
        if not re.search(rf"the-loop {group} ([a-z-]+\|)*{verb}\b", text)
    ]
    assert missing == [], f"docs/{group}.md does not show: {missing}"


def test_cli_reference_documents_dash_h_and_every_command() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    lone = [line for line in text.splitlines() if line.lstrip().startswith("--help ")]
    assert lone == [], "every block lists -h, --help"
    assert text.count("-h, --help") == text.count("```text")
    for verb in _group_verbs("standing"):
        assert f"### `the-loop standing {verb}`" in text


def test_the_quickstart_banner_links_the_token_free_probe() -> None:
    text = (DOCS / "quickstart.md").read_text(encoding="utf-8")
    banner = text[text.index("the-loop is serving on") :].split("```")[0]
    assert "/healthz (no token needed)" in banner and "/api/v1/health" not in banner
