"""The real Claude Code, confined (``sandbox.mode: bwrap``, ``network: allowlist``): the
operator's own ``settings.json`` (their model, and the gateway their ``env`` names in
``ANTHROPIC_BASE_URL``) is carried into the agent's own home with their login, and the default
allowlist reaches that gateway, so the confined agent talks to the model its operator chose
where they chose it; the-loop's hooks still report (they come on the command line)."""

from __future__ import annotations

import json

import pytest

from tests.daemon import served
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent.confine import agent_hash

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.bwrap,
]
REF = "local:settled"
MODEL = "claude-operators-own-choice"


def test_a_confined_claude_code_keeps_its_operators_settings(work: Work) -> None:
    with FakeAnthropic() as api:
        config_dir = work.env.root / "operator-claude"
        env = api.claude_env(config_dir)
        gateway = env.pop("ANTHROPIC_BASE_URL")  # named only in the operator's settings
        config_dir.mkdir(parents=True)
        settings = {"model": MODEL, "env": {"ANTHROPIC_BASE_URL": gateway}}
        (config_dir / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        env["HOME"] = str(work.env.root / "operator-home")
        work.configure(
            harnesses={"claude": {"binary": str(CLAUDE_BIN), "env": env}},
            routing={"defaultHarness": "claude"},
            sandbox={"mode": "bwrap", "network": "allowlist"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        )
        with served(work):
            started = work.cli("sessions", "start", REF, "--prompt", "say hello")
            assert started.exit_code == 0, started.stderr
            asked = wait_until(
                lambda: api.conversation_requests(), 90, what="a turn at the operator's gateway"
            )
            assert {r.body.get("model") for r in asked} == {MODEL}
            work.wait_attention(REF, "waiting", 60, "claude-hook:Stop")  # hooks report as before
            homes = list((work.env.state_dir / "homes").glob("*/.claude/settings.json"))
            assert len(homes) == 1 and homes[0].stat().st_mode & 0o777 == 0o600


def test_links_left_in_a_confined_agents_home_are_not_followed_by_its_next_start(
    work: Work,
) -> None:
    """What an agent left in its own home (a link from ``.claude.json`` to a JSON file of the
    daemon's, a link from the lock file to a file to create) is replaced at its next start, not
    followed: the daemon's file is not merged into the agent's settings, nothing is created
    where the link pointed, and the agent starts and works."""
    daemons = work.env.root / "daemons-own"
    daemons.mkdir()
    (daemons / "secret.json").write_text(json.dumps({"apiToken": "NEVER-THE-AGENTS"}))
    home = work.env.state_dir / "homes" / agent_hash("standing:planted")
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".claude.json").symlink_to(daemons / "secret.json")
    (home / ".claude" / ".claude.json.the-loop.lock").symlink_to(daemons / "created")
    with FakeAnthropic() as api:
        work.configure(
            harnesses={
                "claude": {
                    "binary": str(CLAUDE_BIN),
                    "env": api.claude_env(work.env.root / "operator-claude"),
                }
            },
            routing={"defaultHarness": "claude"},
            sandbox={"mode": "bwrap", "network": "allowlist"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        )
        with served(work):
            created = work.cli("standing", "create", "planted", "--prompt", "say hello")
            assert created.exit_code == 0, created.stderr
            wait_until(lambda: api.conversation_requests(), 90, what="the agent at work")
    settings = home / ".claude" / ".claude.json"
    assert not settings.is_symlink() and "NEVER-THE-AGENTS" not in settings.read_text()
    assert sorted(p.name for p in daemons.iterdir()) == ["secret.json"]
