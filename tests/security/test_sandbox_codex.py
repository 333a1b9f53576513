"""The real Codex CLI, confined (``sandbox.mode: bwrap``, ``network: allowlist``) under the
daemon, against the fake Responses API: it talks to the model provider its operator chose,
since the operator's ``config.toml`` (the provider, the model) is carried into the agent's own
home with its logins, and the provider's ``base_url`` is allowed by the default allowlist;
without a sign-in or a provider, Codex asks how to sign in before anything else, and the
session is ``blocked`` with that heading as its reason rather than seemingly working."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.daemon import Daemon, served
from tests.fakes.fake_openai import FakeOpenAI
from tests.harness.test_codex_e2e import CODEX_BIN
from tests.work import Work

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not CODEX_BIN.exists(), reason=f"no Codex CLI at {CODEX_BIN}"),
    pytest.mark.bwrap,
]
REF = "local:cdx"


@contextmanager
def confined(work: Work, api: FakeOpenAI, provider: bool) -> Iterator[Daemon]:
    operator = work.env.root / "operator-codex"
    env = api.codex_env(operator)  # the operator's config.toml: a provider of their own
    if not provider:
        (operator / "config.toml").unlink()
    work.configure(
        harnesses={"codex": {"binary": str(CODEX_BIN), "env": env}},
        routing={"defaultHarness": "codex"},
        sandbox={"mode": "bwrap", "network": "allowlist"},
        attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
    )
    with served(work) as daemon:
        yield daemon


def test_a_confined_codex_talks_to_the_provider_its_operator_chose(work: Work) -> None:
    with FakeOpenAI() as api, confined(work, api, provider=True):
        started = work.cli("sessions", "start", REF, "--prompt", "say hello")
        assert started.exit_code == 0, started.stderr
        found = work.wait_attention(REF, "waiting", 90)
        assert found["lastMessage"].startswith("FAKE-CODEX-REPLY-"), found
        assert api.user_prompts(), "the fake API was reached through the egress proxy"
        homes = list((work.env.state_dir / "homes").glob("*/.codex/config.toml"))
        assert len(homes) == 1 and homes[0].stat().st_mode & 0o777 == 0o600
        assert "[model_providers.fake]" in homes[0].read_text(encoding="utf-8")


def test_a_confined_codex_with_no_sign_in_is_blocked_and_says_why(work: Work) -> None:
    with FakeOpenAI() as api, confined(work, api, provider=False):
        work.cli("sessions", "start", REF, "--prompt", "say hello")
        found = work.wait_attention(REF, "blocked", 90)
        assert found["prompt"]["text"] == "Choose how you want to use Codex", found
        shown = work.cli("sessions", "logs", REF, "--lines", "60").stdout
        assert "Sign in with ChatGPT" in shown
        assert not api.user_prompts()
