"""Where a refusal sends a person to answer in the agent's own terminal: the attach command of
that agent's kind (a standing session's is not ``sessions attach``)."""

from __future__ import annotations

from the_loop.refs import attach_command, standing_key


def test_the_attach_command_is_the_one_for_the_agents_kind() -> None:
    assert attach_command(standing_key("ops")) == "the-loop standing attach ops"
    session = "94971a0a-6e70-4132-ad16-6d06e10ad538"
    assert attach_command(session) == f"the-loop sessions attach {session}"
