"""The global flags read without the CLI's parser (``cli.flags``), shared by ``serve`` and the
fast read-only commands: what they take, and everything they leave to the full CLI."""

from __future__ import annotations

import pytest

from the_loop.cli.flags import leading


@pytest.mark.parametrize(
    ("args", "config", "debug", "words"),
    [
        (["serve"], None, False, ["serve"]),
        (["--config", "a.yaml", "sessions", "list"], "a.yaml", False, ["sessions", "list"]),
        (["-c", "a.yaml", "--debug", "serve"], "a.yaml", True, ["serve"]),
        (
            ["--config=b.yaml", "events", "--limit", "5"],
            "b.yaml",
            False,
            ["events", "--limit", "5"],
        ),
        ([], None, False, []),
    ],
)
def test_what_the_flags_give(
    args: list[str], config: str | None, debug: bool, words: list[str]
) -> None:
    found = leading(args)
    assert found is not None
    assert (found.config, found.debug, found.words) == (config, debug, words)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--config"],
        ["-c", "--debug", "serve"],
        ["--config=", "serve"],
        ["-x", "status"],
    ],
)
def test_anything_else_before_the_command_is_the_full_clis(args: list[str]) -> None:
    assert leading(args) is None
