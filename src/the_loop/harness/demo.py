"""The offline ``demo`` harness: the-loop's own demo agent (``the_loop.demo_agent``), run with
the interpreter the-loop runs on. No model, no account, nothing to install: it is the offline
path of the quickstart (docs/decisions/0045-offline-demo-agent.md).

- interactive: ``<python> -m the_loop.demo_agent --session-id <uuid> [args]``
- resume: ``<python> -m the_loop.demo_agent --resume <id> [args]``
- headless: ``<python> -m the_loop.demo_agent --print --session-id <uuid> [args] -- <prompt>``
  (and ``--resume <id>``)
"""

from __future__ import annotations

import sys

from the_loop.errors import BadInput
from the_loop.harness.base import HarnessAdapter, LaunchKind, LaunchSpec, register_adapter


class DemoAdapter(HarnessAdapter):
    """The offline demo agent."""

    default_binary = sys.executable
    chooses_session_id = True
    ready_pattern = r"the-loop demo agent: ready"

    def _argv(
        self, kind: LaunchKind, session_id: str | None, prompt: str | None, spec: LaunchSpec
    ) -> list[str]:
        assert session_id is not None
        id_flag = "--resume" if kind.is_resume else "--session-id"
        head = [self.binary, "-m", "the_loop.demo_agent", id_flag, session_id, *self.args]
        if kind.is_interactive:
            return head
        if prompt is None:
            raise BadInput(f"harness {self.harness!r}: a headless run needs a prompt")
        return [*head, "--print", "--", prompt]


register_adapter("demo", DemoAdapter)
