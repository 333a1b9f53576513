"""A multi-line message into a harness that reads lines (and never enables bracketed paste)
stays one submission when its ``multiline`` setting says how: joined, or through a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import wait_until
from tests.standing.conftest import Standing

SCRIPT = 'echo ready; while IFS= read -r line; do printf "%s\\n" "$line" >> "$LOG"; done'
TEXT = "first line\nsecond line\nthird line"


def _line_reader(st: Standing, log: Path, multiline: str | None) -> None:
    harness: dict[str, object] = {
        "adapter": "command",
        "interactive": ["sh", "-c", SCRIPT, "sh", "{prompt}"],
        "env": {"LOG": str(log)},
    }
    if multiline is not None:
        harness["multiline"] = multiline
    st.configure(harnesses={"lines": harness})


def _submissions(log: Path, count: int) -> list[str]:
    wait_until(
        lambda: log.exists() and len(log.read_text().splitlines()) >= count,
        timeout=10,
        what=f"{count} lines read by the harness",
    )
    return log.read_text().splitlines()


@pytest.mark.parametrize("mode", ["join", "file"])
def test_a_multi_line_message_is_one_submission(st: Standing, tmp_path: Path, mode: str) -> None:
    log = tmp_path / "read.log"
    _line_reader(st, log, mode)
    st.ok("standing", "create", "probe", "--harness", "lines", "--prompt", "brief")
    assert len(_submissions(log, 1)) == 1, "the boot directive is one submission too"
    st.ok("standing", "say", "probe", "--text", TEXT, "--actor", "alice")
    assert len(_submissions(log, 2)) == 2, log.read_text()
    st.ok("standing", "say", "probe", "--text", "a single line", "--actor", "alice")
    lines = _submissions(log, 3)[1:]
    assert len(lines) == 2, lines
    if mode == "join":
        assert "first line / second line / third line" in lines[0]
        assert "a single line" in lines[1]
        return
    first, second = (Path(line.split(" is in ", 1)[1].split(" - ", 1)[0]) for line in lines)
    assert first.read_text() == f"Message from alice to standing session `probe`:\n\n{TEXT}"
    assert first.stat().st_mode & 0o077 == 0, "the message file is private"
    assert second.read_text().endswith("\n\na single line")


def test_without_a_setting_each_line_of_a_paste_is_submitted_on_its_own(
    st: Standing, tmp_path: Path
) -> None:
    """What the setting is for (documented in docs/harnesses.md)."""
    log = tmp_path / "read.log"
    _line_reader(st, log, None)
    st.ok("standing", "create", "probe", "--harness", "lines", "--prompt", "brief")
    st.ok("standing", "say", "probe", "--text", TEXT, "--actor", "alice")
    assert len(_submissions(log, 6)) >= 6
