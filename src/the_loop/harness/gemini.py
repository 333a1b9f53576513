"""Google Gemini CLI (``gemini``): the-loop chooses the id (``--session-id <uuid>``).

- interactive: ``gemini --session-id <uuid> --skip-trust [--model M] [args]
  [--prompt-interactive=<prompt>]``
- resume: ``gemini --resume <id> --skip-trust [--model M] [args] [--prompt-interactive=<prompt>]``
- headless: ``gemini --session-id <uuid> --skip-trust --output-format stream-json ...
  --prompt=<prompt>`` and ``gemini --resume <id> ...``

The prompt is glued to its option with ``=``: gemini's parser would read ``-p --version`` as
the version flag, while ``--prompt=--version`` is always a prompt. ``--skip-trust`` trusts the
workspace for the session (the folder-trust dialog would block an unattended start). The input
box's placeholder (``Type your message or @path/to/file``) under the idle footer (``? for
shortcuts``, absent while it still initializes or finishes a turn) is ``ready_pattern``; under
80 columns, where Gemini draws no such footer, the placeholder under the box's rule with no
spinner over it (decision 0106).
Gemini takes an Enter that comes within 40 ms of a paste as a new line (its paste
protection), so the Enter that submits a pasted message waits ``submit_gap`` seconds; a
Gemini held up past that reads both together all the same, so its input box is read
(``input_box``: the lines under the last rule, from the one its ``>`` marks; a long paste
shows folded as ``[Pasted Text: N lines]``) and a message left in it is submitted again.
Gemini draws a placeholder in that box only while it is empty, so any other text there is a
person's draft, which a delivery waits behind (``drafts_by_words``, decision 0105), and so
is a box in shell mode (``InputBox.shell``).
An interactive run inherits no ``CI``, ``CONTINUOUS_INTEGRATION`` or ``CI_*`` variable (the
tmux runner's launch script drops them for every agent, ``runner.tmux_core.PIPELINE_ENV``):
with one set (as on a CI machine) the CLI takes itself for a pipeline, skips its interactive
interface and exits ("No input provided via stdin"); with ``CI=false`` it starts, but draws
no colour.
The pinned CLI (0.61) keeps each conversation as a log of one JSON record per line,
``<GEMINI home>/tmp/<project>/chats/session-<time>-<first 8 of the id>.jsonl``
(``conversation_log``; older releases wrote one ``.json`` document there): the person's
prompts (``type: user``) and the model's answers (``type: gemini``, with their ``tokens``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from the_loop.config.attention import GEMINI_NARROW_IDLE
from the_loop.errors import BadInput
from the_loop.harness.base import (
    HarnessAdapter,
    InputBox,
    LaunchKind,
    LaunchSpec,
    continued,
    register_adapter,
)
from the_loop.harness.homes import harness_dir

_RULE = re.compile(r"^\s*─{8,}\s*$")
"""The rule Gemini draws above its input box."""
_BOX_LINE = re.compile(r"^ [>!*] (.*)$")
"""The input box's first line: its marker (``>``; ``!`` in shell mode, ``*`` in yolo mode)."""
_PLACEHOLDERS = frozenset(
    {
        "Type your message or @path/to/file",
        "Type your shell command",
        "Press 'Esc' for NORMAL mode.",
        "Press 'i' for INSERT mode.",
        "Type your message or hold space to talk (Esc to exit)",
        "Type your message or space to talk (Esc to exit)",
    }
)
"""What the pinned CLI draws in its input box while it holds no text, by mode (plain, shell,
vim's two, voice's two): only then, so anything else there is text in the box."""
_FOLDED = "[Pasted Text:"
_SHELL = "!"
"""The box's marker in shell mode: what is sent from it runs as a shell command."""


class GeminiAdapter(HarnessAdapter):
    """Gemini CLI."""

    keeps_conversation = True
    frames_paste = True
    default_binary = "gemini"
    chooses_session_id = True
    headless_output_format = "stream-json"
    permission_flags = {
        "ask": ("--approval-mode", "default"),
        "auto": ("--approval-mode", "auto_edit"),
        "bypass": ("--approval-mode", "yolo"),
    }
    ready_pattern = rf"(?ms)\? for shortcuts.*Type your message or @path|{GEMINI_NARROW_IDLE}"
    submit_gap = 1.0  # measured: 0.3 s still lost the first Enter after start-up, 0.5 s did not
    reads_input_box = True
    drafts_by_words = True  # decision 0105: a placeholder only while the box is empty

    def input_box(self, screen: str) -> InputBox | None:
        """The box under the last rule (its marked line and the indented lines that go on it),
        whether it is in shell mode (its ``!`` marker), and the last message above it (marked
        the same way in the conversation)."""
        found = _box(screen)
        if found is None:
            return None
        marker, held, last_sent = found
        shell = marker == _SHELL
        if held in _PLACEHOLDERS:
            return InputBox("", last_sent, shell=shell)
        return InputBox(held, last_sent, folded=held.startswith(_FOLDED), shell=shell)

    def conversation_log(
        self, cwd: Path | None, conversation_id: str, env: Mapping[str, str]
    ) -> Path | None:
        """The newest chat log (or document) of CONVERSATION_ID under Gemini's home in ENV."""
        chats = harness_dir("", ".gemini", env) / "tmp"
        found = sorted(chats.glob(f"*/chats/session-*{conversation_id[:8]}.json*"))
        return found[-1] if found else None

    def _argv(
        self, kind: LaunchKind, session_id: str | None, prompt: str | None, spec: LaunchSpec
    ) -> list[str]:
        assert session_id is not None
        id_flag = "--resume" if kind.is_resume else "--session-id"
        head = [self.binary, id_flag, session_id, "--skip-trust"]
        options = [*self.permission_args(), *self.model_args(), *self.args]
        if kind.is_interactive:
            tail = [] if prompt is None else [f"--prompt-interactive={prompt}"]
            return [*head, *options, *tail]
        if prompt is None:
            raise BadInput(f"harness {self.harness!r}: a headless run needs a prompt")
        return [*head, "--output-format", "stream-json", *options, f"--prompt={prompt}"]


def _box(screen: str) -> tuple[str, str, str] | None:
    """The input box on SCREEN: its marker (``>``, ``!`` in shell mode, ``*`` in yolo mode),
    the text on its marked line and the indented lines that go on it, and the last message
    sent above it; None when the screen shows no box."""
    lines = screen.splitlines()
    rules = [at for at, line in enumerate(lines) if _RULE.match(line)]
    if not rules:
        return None
    below = lines[rules[-1] + 1 :]
    starts = [at for at, line in enumerate(below) if _BOX_LINE.match(line)]
    if not starts:
        return None
    sent = [at for at, line in enumerate(lines[: rules[-1]]) if _BOX_LINE.match(line)]
    last_sent = _marked(lines, sent[-1]) if sent else ""
    return below[starts[0]][1], _marked(below, starts[0]), last_sent


def _marked(lines: list[str], at: int) -> str:
    """The text of the message whose marked line is LINES[AT], with the indented lines that go
    on it, all its paragraphs (Gemini draws a blank line between them, in its box and in the
    conversation; what follows either is not indented so: its footer, the model's answer)."""
    first = _BOX_LINE.match(lines[at])
    held = [first.group(1) if first else "", *continued(lines, at, "   ", across_blanks=True)]
    return "\n".join(part.strip() for part in held).strip()


register_adapter("gemini", GeminiAdapter)
