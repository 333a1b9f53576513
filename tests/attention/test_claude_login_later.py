"""A person's way out of "Not logged in", with the real Claude Code confined (the default
sandbox): the daemon ran without a key, so the agent cannot work and a message waits; the
person exports the key and the gateway (``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``),
restarts the-loop and the session. The restarted agent gets the daemon's environment as it is
now (the tmux server, which outlived the daemon, still holds the old one), reaches the gateway
through the sandbox's allowlist, and is no longer ``blocked`` although the resumed
conversation still shows the old "Not logged in" answer: the first message, which the failed
turn never gave the model, and the message that waited are delivered and answered. A work
item's agent started without the key is restarted the same way (`sessions restart`) and its
request reaches the model."""

from __future__ import annotations

import pytest

from tests.daemon import served
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent.attention.reports import RESEND_NOTE

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.bwrap,
]
REF = "standing:helper"
ITEM = "local:first"


def test_a_key_exported_after_not_logged_in_reaches_the_restarted_agent(
    work: Work, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The person's shell is this process's environment: the CLI starts and restarts the
    agents itself, the daemon is started from it."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with FakeAnthropic() as api:
        env = api.claude_env(work.env.root / "operator-claude")
        key, gateway = env.pop("ANTHROPIC_API_KEY"), env.pop("ANTHROPIC_BASE_URL")
        work.configure(
            routing={"defaultHarness": "claude"},
            harnesses={"claude": {"binary": str(CLAUDE_BIN)}},
            sandbox={"mode": "bwrap", "network": "allowlist"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        )
        with served(work, **env):
            # a work item's agent outlives the daemon, and so does the tmux server with the
            # environment it was started with
            kept = work.cli(
                "sessions", "start", "local:keeper", "--harness", "demo", "--prompt", "hi"
            )
            assert kept.exit_code == 0, kept.stderr
            created = work.cli("standing", "create", "helper", "--prompt", "help the operator")
            assert created.exit_code == 0, created.stderr
            item = work.cli("sessions", "start", ITEM, "--prompt", "FIRST-REQUEST of the item")
            assert item.exit_code == 0, item.stderr
            assert work.wait_attention(ITEM, "blocked", 90)["signal"] == "claude-hook:StopFailure"
            stuck = work.wait_attention(REF, "blocked", 90)
            assert stuck["prompt"]["text"].startswith("authentication_failed: Not logged in")
            said = work.cli("standing", "say", "helper", "WAITED-FOR-THE-KEY")
            assert said.exit_code == 0 and "held" in said.stdout, said.stdout
            assert "delivered once it can work" in said.stdout, said.stdout
            resent = wait_until(  # their first messages never reached a model
                lambda: len(e := work.events("session.resent")) == 2 and e,
                10,
                what="the first messages queued again",
            )
            assert [e["payload"]["count"] for e in resent] == [1, 1], resent
        assert not api.conversation_requests()

        monkeypatch.setenv("ANTHROPIC_API_KEY", key)  # exported, and the-loop restarted
        monkeypatch.setenv("ANTHROPIC_BASE_URL", gateway)
        with served(work, **env):
            assert work.cli("sessions", "show", "local:keeper").exit_code == 0
            restarted = work.cli("standing", "restart", "helper")
            assert restarted.exit_code == 0, restarted.stderr
            wait_until(
                lambda: any("WAITED-FOR-THE-KEY" in p for p in api.user_prompts()),
                120,
                what="the held message at the gateway",
            )
            done = wait_until(
                lambda: (a := work.attention(REF)).get("signal") == "claude-hook:Stop" and a,
                60,
                what="the answered turn",
            )
            assert done["state"] == "waiting", done
            shown = work.cli("standing", "logs", "helper").stdout
            assert "Not logged in" in shown, "the resumed conversation shows the old answer"
            # the first message, which met "Not logged in", reached the model too: once, marked
            # as sent again, before the message that waited behind it
            sent = "\n".join(api.conversation_requests()[-1].user_texts())
            note = RESEND_NOTE.strip()
            assert sent.count(note) == 1, sent
            again, waited = sent.index(note), sent.index("WAITED-FOR-THE-KEY")
            assert again < sent.index("help the operator", again) < waited, sent
            assert len(work.events("session.resent")) == 2

            # the work item's agent, restarted with the key: its request reaches the model
            restarted = work.cli("sessions", "restart", ITEM)
            assert restarted.exit_code == 0, restarted.stderr
            wait_until(
                lambda: any(
                    note in t and "FIRST-REQUEST of the item" in t
                    for r in api.conversation_requests()
                    for t in r.user_texts()
                ),
                120,
                what="the item's first request at the gateway",
            )
            work.wait_attention(ITEM, "waiting", 60, "claude-hook:Stop")
