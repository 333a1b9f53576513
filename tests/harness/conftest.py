"""Fixtures shared with other folders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.tmux_server import private_runner
from tests.standing.conftest import st  # noqa: F401  (the standing fixture)
from the_loop.runner.tmux import TmuxRunner


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[TmuxRunner]:
    """A tmux runner on a private server, with a window large enough for an agent CLI's UI."""
    with private_runner(tmp_path / "work", columns=160, rows=50) as tmux:
        yield tmux
