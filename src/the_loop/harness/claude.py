"""Claude Code (``claude``): the-loop chooses the conversation id (``--session-id <uuid>``).

- interactive: ``claude --session-id <uuid> [--model M] [args] -- <prompt>``
- resume: ``claude --resume <id> [--model M] [args] [-- <prompt>]``
- headless: ``claude -p --session-id <uuid> --output-format stream-json --verbose ... -- <prompt>``
  and ``claude -p --resume <id> ...``

Before an interactive spawn, ``prepare`` settles the first-run dialogs in the config directory
the harness will use (see ``claude_prep``).
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from the_loop.errors import BadInput
from the_loop.harness.base import (
    HarnessAdapter,
    InputBox,
    Launch,
    LaunchKind,
    LaunchSpec,
    first_json_field,
    options_before_separator,
    prompt_tail,
    register_adapter,
)
from the_loop.harness.claude_hooks import settings_argv
from the_loop.harness.claude_prep import prepare_claude_config
from the_loop.harness.homes import claude_dir

# The input box: a horizontal rule (U+2500) directly followed by the prompt line that starts
# with U+276F and a (non-breaking) space. Dialogs use that sign as their cursor too, but
# indented, never right under a rule.
CLAUDE_READY_PATTERN = "(?m)^\u2500{10,}[ \t]*\n\u276f(?:[ \t\u00a0]|$)"
# Idle: that input box (empty, or holding a message a person typed or one an interrupt put
# back) closed by its lower rule at the bottom of the screen, under it at most two lines of
# footer, none offering "esc to interrupt", which Claude Code shows there while it works
# (thinking, a tool running).
CLAUDE_IDLE_PATTERN = (
    "(?m)^\u2500{10,}[ \t]*\n\u276f(?:[ \t\u00a0][^\n]*)?(?:\n(?!\u2500{10,})[^\n]*)*"
    "\n\u2500{10,}[ \t]*(?:\n(?![^\n]*esc to interrupt)[^\n]*){0,2}\\Z"
)
# That input box at the bottom of the screen whatever its footer offers: what it holds (the
# prompt line's text and the lines under it) and its footer.
_BOX = re.compile(
    "(?m)^\u2500{10,}[ \t]*\n\u276f(?P<held>(?:[ \t\u00a0][^\n]*)?(?:\n(?!\u2500{10,})[^\n]*)*)"
    "\n\u2500{10,}[ \t]*(?P<footer>(?:\n[^\n]*){0,2})\\Z"
)
_FOLDED = "[Pasted text #"
"""How Claude Code shows a long paste in its input box: folded to a label."""
_BUSY = "esc to interrupt"
_QUEUED = ("Press up to ", "Press Enter to edit ", "Taking your message back")
"""Hints Claude Code draws in an empty input box while messages wait for the turn at work
(dim: a capture shows them as text). An Enter there sends the waiting messages at once."""
_EXAMPLE = 'Try "'
"""How an example prompt Claude Code may draw in an empty input box begins."""


class ClaudeAdapter(HarnessAdapter):
    """Claude Code. New conversations need a UUID minted by the-loop."""

    keeps_conversation = True
    frames_paste = True
    default_binary = "claude"
    chooses_session_id = True
    ready_pattern = CLAUDE_READY_PATTERN
    idle_pattern = CLAUDE_IDLE_PATTERN
    reads_input_box = True
    reports_submit = True
    headless_output_format = "stream-json"
    permission_flags = {
        "ask": ("--permission-mode", "default"),
        "auto": ("--permission-mode", "acceptEdits"),
        "bypass": ("--permission-mode", "bypassPermissions"),
    }

    def _argv(
        self, kind: LaunchKind, session_id: str | None, prompt: str | None, spec: LaunchSpec
    ) -> list[str]:
        assert session_id is not None
        if kind.is_resume:
            id_args = ["--resume", session_id]
        else:
            id_args = ["--session-id", _uuid(session_id)]
        if kind.is_interactive:
            hooks = settings_argv()  # attention hooks (no-ops outside the-loop's agents)
            return [
                self.binary,
                *id_args,
                *hooks,
                *self.permission_args(),
                *self.model_args(),
                *self.args,
                *prompt_tail(prompt),
            ]
        if prompt is None:
            raise BadInput(f"harness {self.harness!r}: a headless run needs a prompt")
        return [
            self.binary,
            "-p",
            *id_args,
            "--output-format",
            "stream-json",
            "--verbose",
            *self.permission_args(),
            *self.model_args(),
            *self.args,
            *prompt_tail(prompt),
        ]

    def prepare(self, launch: Launch, roots: Sequence[Path] = ()) -> None:
        """Mark the workspace (or the root holding it) trusted and onboarding done
        (interactive launches only)."""
        if launch.kind.is_interactive:
            options = options_before_separator(launch.argv)
            prepare_claude_config(
                launch.cwd, launch.env, options, roots=roots, agents=launch.agent_home is not None
            )

    def conversation_file(self, launch: Launch) -> Path | None:
        """``<CLAUDE_CONFIG_DIR or ~/.claude>/projects/<slug of the cwd>/<id>.jsonl``, the
        transcript the CLI resumes from."""
        if launch.session_id is None:
            return None
        return transcript_path(launch.env, launch.cwd, launch.session_id)

    def conversation_log(
        self, cwd: Path | None, conversation_id: str, env: Mapping[str, str]
    ) -> Path | None:
        """The transcript a resume reads (``conversation_file``), where Claude Code writes
        it for CWD (None: not known)."""
        if cwd is None:
            return None
        path = transcript_path(env, cwd, conversation_id)
        return path if path.is_file() else None

    def session_id_from_output(self, output: str) -> str | None:
        """The ``session_id`` of the first stream-json event that carries one."""
        return first_json_field(output, "session_id")

    def input_box(self, screen: str) -> InputBox | None:
        """The box at the bottom of SCREEN, under its rule and over its footer: the text it
        holds (a long paste shows folded to a label), and whether the footer offers to
        interrupt a turn at work. None when no box is drawn there (a dialog replaces it). The
        conversation above is not read: Claude Code's hook reports each prompt it takes."""
        found = _BOX.search(screen.rstrip())
        if found is None:
            return None
        held = "\n".join(line.strip(" \t\u00a0") for line in found["held"].splitlines()).strip()
        queued = held.startswith(_QUEUED)
        if queued or held.startswith(_EXAMPLE):
            held = ""  # a hint in an empty box
        busy = queued or _BUSY in found["footer"]
        first = screen.count("\n", 0, found.start("held"))
        rows = range(first, first + found["held"].count("\n") + 1)
        return InputBox(held, "", folded=held.startswith(_FOLDED), busy=busy, rows=rows)


def transcript_path(env: Mapping[str, str], cwd: Path, session_id: str) -> Path:
    """``<CLAUDE_CONFIG_DIR or ~/.claude>/projects/<slug of CWD>/<SESSION_ID>.jsonl`` (ENV: the
    harness's environment over the daemon's)."""
    return claude_dir(env) / "projects" / project_slug(cwd) / f"{session_id}.jsonl"


def project_slug(cwd: Path) -> str:
    """The directory name Claude Code keeps a working directory's transcripts under: the
    absolute path with every character other than an ASCII letter or digit turned into ``-``
    (seen with 2.1.x: ``/w/github_octo.repo#15`` -> ``-w-github-octo-repo-15``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", os.path.abspath(cwd))


def _uuid(value: str) -> str:
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise BadInput(f"Claude Code needs a UUID as a new session id, got {value!r}") from None


register_adapter("claude", ClaudeAdapter)
