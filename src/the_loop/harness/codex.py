"""OpenAI Codex (``codex``): codex assigns the conversation id; the-loop learns it.

- interactive: ``codex --no-alt-screen --no-daemon [--model M] [args] [-- <prompt>]``
- resume: ``codex resume --no-alt-screen --no-daemon [--model M] [args] -- <id> [<prompt>]``
- headless: ``codex exec --json [--model M] [args] -- <prompt>``; the id is the ``thread_id``
  of the first ``thread.started`` event
- headless resume: ``codex exec --json [--model M] [args] resume -- <id> <prompt>``

``--no-daemon`` keeps the interactive TUI from starting (and leaving behind) the shared
background server; ``codex exec`` runs in-process and has no such flag. ``--no-alt-screen``
keeps the scrollback capturable. Interactive launches get ``-c notify=[…]``: Codex runs
``the-loop hook`` after every turn (``codex_notify``), which is how the-loop learns the turn
finished; an operator's own ``notify`` override in ``args`` is left alone. Before an
interactive spawn, ``prepare`` marks the workspace trusted in ``$CODEX_HOME/config.toml``
(see ``codex_prep``): the folder-trust question would block an unattended start. The
composer at the bottom of the screen (``config.attention.CODEX_COMPOSER``) is
``ready_pattern``, and ``input_box`` reads it: a message left in it is submitted again, and
one that comes while a person's draft is there, or while the box is in shell mode (a ``!``
typed into it: what is sent then runs as a shell command), waits (decision 0107).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from the_loop.config.attention import CODEX_COMPOSER
from the_loop.errors import BadInput
from the_loop.harness.base import (
    HarnessAdapter,
    InputBox,
    Launch,
    LaunchKind,
    LaunchSpec,
    continued,
    first_json_field,
    prompt_tail,
    register_adapter,
)
from the_loop.harness.codex_notify import is_notify_override, notify_args
from the_loop.harness.codex_prep import prepare_codex_config

INTERACTIVE_FLAGS = ("--no-alt-screen", "--no-daemon")
_COMPOSER = re.compile(f"(?m){CODEX_COMPOSER}")
_MARKED = re.compile(r"^\u203a(?: |$)")
"""A message's first line: the composer's, and each one sent above it in the conversation."""
_PLACEHOLDERS = frozenset({"Ask Codex to do anything", "Ask a follow-up question"})
"""What the pinned CLI draws in its composer while it holds no text."""
_FOLDED = "[Pasted Content "
_SHELL = "!"
"""The composer's marker in shell mode: what is sent from it runs as a shell command."""


class CodexAdapter(HarnessAdapter):
    """Codex CLI. ``chooses_session_id`` is false: the id comes from codex itself."""

    keeps_conversation = True
    frames_paste = True
    default_binary = "codex"
    chooses_session_id = False
    headless_output_format = "jsonl"
    ready_pattern = f"(?m){CODEX_COMPOSER}"
    reads_input_box = True
    drafts_by_words = True  # its placeholder shows only while the composer is empty
    permission_flags = {
        "ask": ("--ask-for-approval", "on-request"),
        "auto": ("--approve-for-me",),
        "bypass": ("--dangerously-bypass-approvals-and-sandbox",),
    }

    def input_box(self, screen: str) -> InputBox | None:
        """The composer at the bottom of SCREEN: the text on its marked line and the lines
        that go on it (up to the blank line over its footer), whether it is in shell mode, and
        the last message sent above it; None when it is not drawn there (a dialog replaces
        it). Its rows are not told: a draft is told by its words (``drafts_by_words``), not by
        their colours."""
        found = _COMPOSER.search(screen)
        if found is None:
            return None
        first = screen.count("\n", 0, found.start())
        lines = screen.split("\n")
        held = _message(lines, first)
        sent = [at for at in range(first) if _MARKED.match(lines[at])]
        last_sent = "\n".join(_message(lines, sent[-1], sent=True)) if sent else ""
        text = "\n".join(held).strip()
        shell = lines[first].startswith(_SHELL)
        if text in _PLACEHOLDERS:
            return InputBox("", last_sent, shell=shell)
        return InputBox(text, last_sent, folded=text.startswith(_FOLDED), shell=shell)

    def _argv(
        self, kind: LaunchKind, session_id: str | None, prompt: str | None, spec: LaunchSpec
    ) -> list[str]:
        options = [*self.model_args(), *self.args]
        if kind.is_interactive or self.permission_mode == "bypass":  # `exec` never asks
            options = [*self.permission_args(), *options]
        if kind is LaunchKind.INTERACTIVE:
            flags = [*INTERACTIVE_FLAGS, *self._notify(), *options]
            return [self.binary, *flags, *prompt_tail(prompt)]
        if kind is LaunchKind.RESUME:
            assert session_id is not None
            tail = [session_id] if prompt is None else [session_id, prompt]
            flags = [*INTERACTIVE_FLAGS, *self._notify(), *options]
            return [self.binary, "resume", *flags, "--", *tail]
        if prompt is None:
            raise BadInput(f"harness {self.harness!r}: a headless run needs a prompt")
        if kind is LaunchKind.HEADLESS:
            return [self.binary, "exec", "--json", *options, *prompt_tail(prompt)]
        assert session_id is not None
        return [self.binary, "exec", "--json", *options, "resume", "--", session_id, prompt]

    def _notify(self) -> list[str]:
        """The turn-complete ``notify`` override, unless the operator passes one."""
        if any(is_notify_override(a) for a in self.args):
            return []
        return notify_args(self.env)

    def prepare(self, launch: Launch, roots: Sequence[Path] = ()) -> None:
        """Mark the workspace trusted for the TUI (interactive launches only)."""
        if launch.kind.is_interactive:
            prepare_codex_config(launch.cwd, launch.env, agents=launch.agent_home is not None)

    def session_id_from_output(self, output: str) -> str | None:
        """The ``thread_id`` of the first ``thread.started`` event of ``codex exec --json``."""
        return first_json_field(output, "thread_id", event_type="thread.started")


def _message(lines: list[str], at: int, sent: bool = False) -> list[str]:
    """The lines of the message whose marked line is LINES[AT] (its marker left out), with the
    indented lines that go on it: in the composer up to the first blank line (its footer is
    under it, indented the same); SENT in the conversation, all its paragraphs (what follows is
    not indented: the answer)."""
    return [lines[at][1:].strip(), *continued(lines, at, "  ", across_blanks=sent)]


register_adapter("codex", CodexAdapter)
