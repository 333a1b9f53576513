"""The fake agent's terminal input parser: pastes split anywhere, long lines, keys."""

from __future__ import annotations

import pytest

from tests.fakes.fake_agent import InputParser, parse_args


def feed_in_pieces(data: bytes, size: int) -> list[str]:
    parser = InputParser()
    out: list[str] = []
    for start in range(0, len(data), size):
        out += parser.feed(data[start : start + size])
    return out


@pytest.mark.parametrize("size", [1, 2, 3, 7, 4096, 100_000])
def test_bracketed_paste_split_anywhere(size: int) -> None:
    long_line = "L" * 9000
    data = (
        b"\x1b[200~line one\rline two $`\\\r" + long_line.encode() + b"\x1b[201~\r"
        b"typed\x7fD\r"
        b"\x1b[I\x1b[200~\xc3\xa9\x1b[201~\r"
    )
    assert feed_in_pieces(data, size) == [
        f"line one\nline two $`\\\n{long_line}",
        "typeD",
        "é",
    ]


def test_keys_outside_a_paste() -> None:
    parser = InputParser()
    assert parser.feed(b"\r") == []
    assert parser.feed(b"abc\x03xyz\r") == ["xyz"]
    with pytest.raises(EOFError):
        parser.feed(b"\x04")


def test_parse_args() -> None:
    assert parse_args(["--session-id", "c1", "hi"]) == ("c1", False, "hi")
    assert parse_args(["--resume", "c1"]) == ("c1", True, None)
    assert parse_args(["--session-id", "c1", "--", "-x", "y"]) == ("c1", False, "-x y")
    with pytest.raises(SystemExit):
        parse_args(["--session-id", "../x"])
