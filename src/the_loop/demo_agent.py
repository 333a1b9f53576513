"""The offline demo agent: a small interactive program that behaves like an agent CLI in a
terminal, with no model and no account. It is what the built-in ``demo`` harness runs, so a
person can try the-loop end to end before any agent CLI is logged in
(docs/decisions/0045-offline-demo-agent.md).

Run as ``python -m the_loop.demo_agent (--session-id ID | --resume ID)`` in a terminal, or
``python -m the_loop.demo_agent --print --session-id ID -- PROMPT`` for one headless turn.
Like an agent TUI it puts the terminal in raw mode, enables bracketed paste, takes a pasted
message verbatim and treats Enter outside a paste as "submit". It prints ``READY_LINE`` once it
takes input, and for every message one answer: what it received and what it sees in its
working directory. The conversation is kept in ``$THE_LOOP_DEMO_DIR`` (default
``~/.local/state/the-loop-demo``) as ``<id>.jsonl``, so ``--resume`` continues it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import termios
import time
import tty
from pathlib import Path

READY_LINE = "the-loop demo agent: ready"
PROMPT = "demo> "
_PASTE_ON, _PASTE_OFF = b"\x1b[?2004h", b"\x1b[?2004l"
_PASTE_START, _PASTE_END = b"\x1b[200~", b"\x1b[201~"
_ID_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def _store() -> Path:
    root = os.environ.get("THE_LOOP_DEMO_DIR") or str(
        Path.home() / ".local" / "state" / "the-loop-demo"
    )
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


class Conversation:
    """The messages of one conversation, appended to its file as they come."""

    def __init__(self, conversation_id: str) -> None:
        self.path = _store() / f"{conversation_id}.jsonl"
        self.id = conversation_id

    def count(self) -> int:
        try:
            return len(self.path.read_text(encoding="utf-8").splitlines())
        except FileNotFoundError:
            return 0

    def add(self, text: str) -> int:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"ts": time.time(), "text": text}) + "\n")
        return self.count()


def answer(text: str, number: int, cwd: Path) -> str:
    """The demo agent's answer to message NUMBER holding TEXT."""
    words = len(text.split())
    lines = text.strip().splitlines() or [""]
    asked = [line for line in lines if "asked you to:" in line]
    first = (asked[0].split("asked you to:", 1)[1] if asked else lines[-1]).strip()[:120]
    try:
        entries = sorted(p.name for p in cwd.iterdir() if not p.name.startswith("."))
    except OSError:
        entries = []
    shown = ", ".join(entries[:8]) + (" …" if len(entries) > 8 else "") if entries else "empty"
    return "\n".join(
        [
            f"demo: message {number} received ({words} words, {len(lines)} lines).",
            f"demo: you asked: {first}",
            f"demo: I work in {cwd} ({shown}).",
            "demo: I am the-loop's offline demo agent, with no model: configure Claude Code,",
            "demo: Codex or Gemini (docs/harnesses.md) for an agent that does the work.",
        ]
    )


def _write(text: str) -> None:
    sys.stdout.write(text.replace("\n", "\r\n"))
    sys.stdout.flush()


class _Input:
    """Terminal bytes to submitted messages (bracketed paste taken verbatim)."""

    def __init__(self) -> None:
        self.pending = b""
        self.buffer = bytearray()
        self.in_paste = False

    def feed(self, data: bytes) -> list[str]:
        self.pending += data
        out: list[str] = []
        while self.pending and self._step(out):
            pass
        return out

    def _step(self, out: list[str]) -> bool:
        data = self.pending
        if self.in_paste:
            end = data.find(_PASTE_END)
            if end < 0:
                return False
            self.buffer += data[:end].replace(b"\r", b"\n")
            self.pending, self.in_paste = data[end + len(_PASTE_END) :], False
            return True
        if data.startswith(b"\x1b"):
            if data.startswith(_PASTE_START):
                self.pending, self.in_paste = data[len(_PASTE_START) :], True
                return True
            match = re.match(rb"\x1b\[[0-9;?]*[@-~]|\x1b[^\[]", data)
            if match is None:
                return False
            self.pending = data[match.end() :]
            return True
        byte, self.pending = data[0], data[1:]
        if byte == 0x0D:
            if self.buffer.strip():
                out.append(self.buffer.decode("utf-8", "replace"))
            self.buffer = bytearray()
        elif byte in (0x7F, 0x08):
            del self.buffer[-1:]
        elif byte == 0x04 and not self.buffer:
            raise EOFError
        elif byte >= 0x20 or byte in (0x09, 0x0A):
            self.buffer.append(byte)
        return True


def interactive(conversation: Conversation, resumed: bool) -> int:
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setraw(fd)
    sys.stdout.buffer.write(_PASTE_ON)
    try:
        earlier = conversation.count()
        how = f"resumed with {earlier} earlier messages" if resumed else "new conversation"
        _write(f"{READY_LINE} (session {conversation.id}, {how})\n{PROMPT}")
        parser = _Input()
        while True:
            data = os.read(fd, 65536)
            if not data:
                return 0
            try:
                messages = parser.feed(data)
            except EOFError:
                return 0
            for text in messages:
                number = conversation.add(text)
                _write(f"\n{answer(text, number, Path.cwd())}\n{PROMPT}")
    finally:
        sys.stdout.buffer.write(_PASTE_OFF)
        sys.stdout.flush()
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="the_loop.demo_agent", description=__doc__)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--session-id")
    which.add_argument("--resume")
    parser.add_argument("--print", action="store_true", help="one headless turn, then exit")
    parser.add_argument("prompt", nargs="?")
    args = parser.parse_args(argv)
    conversation_id = args.session_id or args.resume
    if not _ID_RE.match(conversation_id):
        parser.error(f"invalid session id {conversation_id!r}")
    conversation = Conversation(conversation_id)
    if args.print:
        if not args.prompt:
            parser.error("--print needs a prompt")
        number = conversation.add(args.prompt)
        print(answer(args.prompt, number, Path.cwd()))
        return 0
    return interactive(conversation, resumed=args.resume is not None)


if __name__ == "__main__":
    sys.exit(main())
