"""A fake interactive agent for the fast tests, and a reader for what it recorded.

Run as ``python tests/fakes/fake_agent.py [--session-id ID | --resume ID] [--] [prompt]``
inside a terminal (a tmux pane). Like an agent TUI it puts the terminal in raw mode, enables
bracketed paste (``ESC [?2004h``), takes pasted text verbatim (CR inside a paste is a line
break, as terminals paste LF as CR), treats CR outside a paste as "submit", and has no line
length limit. Every prompt, the argv prompt included, is appended with its arrival time to
``$FAKE_AGENT_DIR/<conversation id>.jsonl``; ``--resume ID`` appends to the same conversation.

Environment switches:

- ``FAKE_AGENT_DIR`` (required): where conversations are recorded;
- ``FAKE_AGENT_IGNORE_TERM=1``: ignore SIGTERM;
- ``FAKE_AGENT_CLEAR_ON_TERM=1``: clear the screen on SIGTERM, then exit (as Claude Code does);
- ``FAKE_AGENT_RESUME_FAILS=1``: exit 3 on ``--resume``;
- ``FAKE_AGENT_CRASH_AFTER=N``: exit 42 right after recording the N-th prompt;
- ``FAKE_AGENT_FOCUS=1``: ask the terminal for focus events, as Claude Code does (and ignore
  the focus-in and focus-out sequences tmux then sends);
- ``FAKE_AGENT_START_DELAY=S``: wait S seconds before taking the terminal (input sent before
  then is flushed, as a slow TUI would lose it).

It prints ``FAKE-AGENT READY <id>`` once it takes input and ``FAKE-AGENT GOT #n`` per prompt.
A prompt holding ``ASK-PERMISSION: <command>`` makes it show ``Permission needed: run
<command>? [y/n]``; the next submitted line (``y`` or ``n`` and Enter) is recorded as the answer
(``kind: answer``) and shown as ``FAKE-AGENT ALLOWED`` or ``FAKE-AGENT DENIED``. A line
``ANSWER: <words>`` in a prompt makes it say the words (its answer); ``ANSWER-LONG: <n>`` one
line of N numbered words.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import termios
import time
import tty
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"
READY = "FAKE-AGENT READY"
GOT = "FAKE-AGENT GOT"


@dataclass(frozen=True)
class PromptRecord:
    """One prompt the fake agent received."""

    seq: int
    text: str
    ts: float
    source: str
    pid: int


@dataclass(frozen=True)
class StartRecord:
    """One start of the fake agent for a conversation."""

    ts: float
    pid: int
    resumed: bool
    argv: list[str]
    cwd: str
    env: dict[str, str]


def conversation_file(directory: Path | str, conversation_id: str) -> Path:
    return Path(directory) / f"{conversation_id}.jsonl"


def read_records(directory: Path | str, conversation_id: str) -> list[dict[str, Any]]:
    """Every record of a conversation, in order (empty when there is none yet)."""
    path = conversation_file(directory, conversation_id)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    out: list[dict[str, Any]] = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            break  # a record being written right now
    return out


def read_prompts(directory: Path | str, conversation_id: str) -> list[PromptRecord]:
    """The prompts of a conversation in arrival order."""
    return [
        PromptRecord(r["seq"], r["text"], r["ts"], r["source"], r["pid"])
        for r in read_records(directory, conversation_id)
        if r.get("kind") == "prompt"
    ]


def read_starts(directory: Path | str, conversation_id: str) -> list[StartRecord]:
    """Each start (spawn or resume) of a conversation."""
    return [
        StartRecord(r["ts"], r["pid"], r["resumed"], r["argv"], r["cwd"], r["env"])
        for r in read_records(directory, conversation_id)
        if r.get("kind") == "start"
    ]


def command(*extra: str) -> list[str]:
    """Argv that runs the fake agent with this interpreter."""
    return [sys.executable, str(SCRIPT), *extra]


# -- the agent ---------------------------------------------------------------------------------


class InputParser:
    """Turns terminal input bytes into submitted prompts."""

    def __init__(self) -> None:
        self.pending = b""
        self.buffer = bytearray()
        self.in_paste = False

    def feed(self, data: bytes) -> list[str]:
        self.pending += data
        submitted: list[str] = []
        while self.pending:
            if not self._step(submitted):
                break
        return submitted

    def _step(self, submitted: list[str]) -> bool:
        """Consume one unit of input; False when more bytes are needed."""
        data = self.pending
        if self.in_paste:
            end = data.find(PASTE_END)
            if end < 0:
                keep = _partial_suffix(data, PASTE_END)
                self.buffer += data[: len(data) - keep].replace(b"\r", b"\n")
                self.pending = data[len(data) - keep :]
                return False
            self.buffer += data[:end].replace(b"\r", b"\n")
            self.pending = data[end + len(PASTE_END) :]
            self.in_paste = False
            return True
        if data.startswith(b"\x1b"):
            return self._escape(data)
        self.pending = data[1:]
        self._key(data[0], submitted)
        return True

    def _escape(self, data: bytes) -> bool:
        if PASTE_START.startswith(data[: len(PASTE_START)]) and len(data) < len(PASTE_START):
            return False
        if data.startswith(PASTE_START):
            self.in_paste = True
            self.pending = data[len(PASTE_START) :]
            return True
        match = re.match(rb"\x1b\[[0-9;?]*[@-~]|\x1b[^\[]", data)
        if match is None:
            return False
        self.pending = data[match.end() :]  # another escape sequence: ignored
        return True

    def _key(self, byte: int, submitted: list[str]) -> None:
        if byte == 0x0D:
            if self.buffer:
                submitted.append(self.buffer.decode("utf-8", "replace"))
            self.buffer = bytearray()
        elif byte in (0x7F, 0x08):
            del self.buffer[-1:]
        elif byte == 0x03:
            self.buffer = bytearray()
        elif byte == 0x04 and not self.buffer:
            raise EOFError
        elif byte >= 0x20 or byte in (0x09, 0x0A):
            self.buffer.append(byte)


def _partial_suffix(data: bytes, marker: bytes) -> int:
    """Length of the longest suffix of DATA that is a proper prefix of MARKER."""
    for size in range(min(len(marker) - 1, len(data)), 0, -1):
        if marker.startswith(data[-size:]):
            return size
    return 0


class Agent:
    """The running fake agent of one conversation."""

    def __init__(self, directory: Path, conversation: str, resumed: bool) -> None:
        self.path = conversation_file(directory, conversation)
        self.conversation = conversation
        self.resumed = resumed
        self.seq = sum(1 for r in read_records(directory, conversation) if r["kind"] == "prompt")
        self.crash_after = int(os.environ.get("FAKE_AGENT_CRASH_AFTER") or 0)
        self.asking: str | None = None

    def record(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def start(self, argv: list[str]) -> None:
        env = {k: v for k, v in os.environ.items() if k.startswith(("FAKE_", "LOOP_"))}
        env["TMUX_SET"] = "1" if os.environ.get("TMUX") else "0"
        self.record(
            {
                "kind": "start",
                "ts": time.time(),
                "pid": os.getpid(),
                "resumed": self.resumed,
                "argv": argv,
                "cwd": os.getcwd(),
                "env": env,
            }
        )

    def prompt(self, text: str, source: str) -> None:
        if self.asking is not None:
            answer = text.strip().lower()
            self.record(
                {"kind": "answer", "command": self.asking, "answer": answer, "ts": time.time()}
            )
            self.asking = None
            say("FAKE-AGENT ALLOWED" if answer == "y" else "FAKE-AGENT DENIED")
            return
        self.seq += 1
        self.record(
            {
                "kind": "prompt",
                "seq": self.seq,
                "text": text,
                "ts": time.time(),
                "source": source,
                "pid": os.getpid(),
            }
        )
        first = text.split("\n", 1)[0][:60]
        say(f"{GOT} #{self.seq} ({len(text)} chars): {first}")
        say_answer(text)
        if "ASK-PERMISSION:" in text:
            asked = text.split("ASK-PERMISSION:", 1)[1].strip().splitlines()
            self.asking = asked[0].strip() if asked else ""
            say(f"Permission needed: run {self.asking}? [y/n]")
        if self.crash_after and self.seq >= self.crash_after:
            say(f"FAKE-AGENT CRASH after {self.seq} prompts")
            os._exit(42)


def say_answer(text: str) -> None:
    """Say what TEXT asks to be answered: ``ANSWER: <words>`` says the words, ``ANSWER-LONG:
    <n>`` one line of N numbered words."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("ANSWER-LONG:"):
            count = int(line.removeprefix("ANSWER-LONG:").strip() or 0)
            say(" ".join(f"word{n:05d}" for n in range(count)))
        elif line.startswith("ANSWER:"):
            say(line.removeprefix("ANSWER:").strip())


def say(line: str) -> None:
    os.write(sys.stdout.fileno(), (line + "\r\n").encode("utf-8", "replace"))


def parse_args(argv: list[str]) -> tuple[str, bool, str | None]:
    conversation, resumed, words = "anonymous", False, list(argv)
    prompt: str | None = None
    while words:
        word = words.pop(0)
        if word in ("--session-id", "--resume") and words:
            conversation, resumed = words.pop(0), word == "--resume"
        elif word == "--":
            prompt = " ".join(words) if words else None
            break
        else:
            prompt = word
    if not ID_RE.match(conversation):
        raise SystemExit(f"fake-agent: unsafe conversation id {conversation!r}")
    return conversation, resumed, prompt


def main(argv: list[str]) -> int:
    directory = Path(os.environ["FAKE_AGENT_DIR"])
    directory.mkdir(parents=True, exist_ok=True)
    conversation, resumed, prompt = parse_args(argv)
    if resumed and os.environ.get("FAKE_AGENT_RESUME_FAILS") == "1":
        print(f"fake-agent: cannot resume {conversation}", file=sys.stderr)
        return 3
    if os.environ.get("FAKE_AGENT_IGNORE_TERM") == "1":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    elif os.environ.get("FAKE_AGENT_CLEAR_ON_TERM") == "1":
        signal.signal(signal.SIGTERM, _clear_and_exit)
    agent = Agent(directory, conversation, resumed)
    agent.start(argv)
    delay = float(os.environ.get("FAKE_AGENT_START_DELAY") or 0)
    if delay:
        time.sleep(delay)
    return run_terminal(agent, prompt)


def _clear_and_exit(signum: int, frame: object) -> None:
    """SIGTERM with ``FAKE_AGENT_CLEAR_ON_TERM``: clear the screen, then exit, as Claude Code
    does when it is ended."""
    os.write(sys.stdout.fileno(), b"\x1b[H\x1b[2J")
    os._exit(128 + signum)


def run_terminal(agent: Agent, prompt: str | None) -> int:
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd) if os.isatty(fd) else None
    if saved is not None:
        tty.setraw(fd, termios.TCSAFLUSH)
    try:
        focus = b"\x1b[?1004h" if os.environ.get("FAKE_AGENT_FOCUS") == "1" else b""
        os.write(sys.stdout.fileno(), b"\x1b[?2004h" + focus)
        say(f"{READY} {agent.conversation}")
        if prompt:
            agent.prompt(prompt, "argv")
        return read_loop(agent, fd)
    finally:
        if saved is not None:
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def read_loop(agent: Agent, fd: int) -> int:
    parser = InputParser()
    while True:
        data = os.read(fd, 65536)
        if not data:
            return 0
        data = data.replace(b"\x1b[I", b"").replace(b"\x1b[O", b"")  # focus in, out
        try:
            prompts = parser.feed(data)
        except EOFError:
            return 0
        for text in prompts:
            agent.prompt(text, "tty")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
