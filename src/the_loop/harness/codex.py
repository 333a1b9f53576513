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
composer's footer (``? for shortcuts``) is ``ready_pattern``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from the_loop.errors import BadInput
from the_loop.harness.base import (
    HarnessAdapter,
    Launch,
    LaunchKind,
    LaunchSpec,
    first_json_field,
    prompt_tail,
    register_adapter,
)
from the_loop.harness.codex_notify import is_notify_override, notify_args
from the_loop.harness.codex_prep import prepare_codex_config

INTERACTIVE_FLAGS = ("--no-alt-screen", "--no-daemon")


class CodexAdapter(HarnessAdapter):
    """Codex CLI. ``chooses_session_id`` is false: the id comes from codex itself."""

    keeps_conversation = True
    frames_paste = True
    default_binary = "codex"
    chooses_session_id = False
    headless_output_format = "jsonl"
    ready_pattern = r"\? for shortcuts"
    permission_flags = {
        "ask": ("--ask-for-approval", "on-request"),
        "auto": ("--approve-for-me",),
        "bypass": ("--dangerously-bypass-approvals-and-sandbox",),
    }

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
            prepare_codex_config(launch.cwd, launch.env)

    def session_id_from_output(self, output: str) -> str | None:
        """The ``thread_id`` of the first ``thread.started`` event of ``codex exec --json``."""
        return first_json_field(output, "thread_id", event_type="thread.started")


register_adapter("codex", CodexAdapter)
