"""Cursor's agent CLI (``cursor-agent``): headless only; cursor assigns the id.

- headless: ``cursor-agent -p --output-format json [--model M] [args] -- <prompt>``
- headless resume: ``cursor-agent -p --output-format json --resume <id> ... -- <prompt>``

Asking for it under the tmux runner raises ``UnsupportedRunner`` naming the process runner.
"""

from __future__ import annotations

from the_loop.errors import BadInput
from the_loop.harness.base import (
    HarnessAdapter,
    LaunchKind,
    LaunchSpec,
    first_json_field,
    prompt_tail,
    register_adapter,
)


class CursorAdapter(HarnessAdapter):
    """Cursor agent CLI (process runner only)."""

    default_binary = "cursor-agent"
    supports_interactive = False
    chooses_session_id = False
    headless_output_format = "json"

    def _argv(
        self, kind: LaunchKind, session_id: str | None, prompt: str | None, spec: LaunchSpec
    ) -> list[str]:
        if prompt is None:
            raise BadInput(f"harness {self.harness!r}: a headless run needs a prompt")
        resume = ["--resume", session_id] if session_id is not None else []
        return [
            self.binary,
            "-p",
            "--output-format",
            "json",
            *resume,
            *self.model_args(),
            *self.args,
            *prompt_tail(prompt),
        ]

    def session_id_from_output(self, output: str) -> str | None:
        """The ``session_id`` of the JSON result."""
        return first_json_field(output, "session_id")


register_adapter("cursor", CursorAdapter)
