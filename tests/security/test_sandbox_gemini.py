"""The real Gemini CLI, confined (``sandbox.mode: bwrap``, ``network: allowlist``) under the
daemon, against the fake Gemini API (reached through the egress proxy): it signs in as its
operator does, since the sign-in the operator chose (``~/.gemini/settings.json``) is carried
into the agent's own home with its logins; without one, Gemini asks how to sign in before
anything else, and the session is ``blocked`` with that question as its reason rather than
seemingly waiting for a prompt it would never take."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.daemon import Daemon, served
from tests.fakes.fake_gemini import FakeGemini, GeminiRequest
from tests.harness.test_gemini_e2e import GEMINI_BIN
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not GEMINI_BIN.exists(), reason=f"no Gemini CLI at {GEMINI_BIN}"),
    pytest.mark.bwrap,
]
REF = "local:gem"


def reply(request: GeminiRequest) -> str:
    return f"FAKE-GEMINI-REPLY-{request.seq}"


@contextmanager
def confined(work: Work, api: FakeGemini, settings: bool) -> Iterator[Daemon]:
    operator = work.env.root / "operator"
    env = api.gemini_env(operator)  # writes the operator's settings: API-key sign-in
    if not settings:
        (operator / ".gemini" / "settings.json").unlink()
    work.configure(
        harnesses={"gemini": {"binary": str(GEMINI_BIN), "env": env}},
        routing={"defaultHarness": "gemini"},
        sandbox={"mode": "bwrap", "network": "allowlist"},
        attention={"pollSeconds": 0.1, "quietSeconds": 1, "notifyAfterSeconds": 3600},
    )
    with served(work) as daemon:
        yield daemon


def test_a_confined_gemini_signs_in_as_its_operator_does(work: Work) -> None:
    with FakeGemini(reply=reply) as api, confined(work, api, settings=True):
        started = work.cli("sessions", "start", REF, "--prompt", "say hello")
        assert started.exit_code == 0, started.stderr
        wait_until(
            lambda: any("FAKE-GEMINI-REPLY" in line for line in _screen(work)),
            90,
            what="the model's reply on the agent's screen",
        )
        assert api.user_prompts(), "the fake API was reached through the egress proxy"
        homes = list((work.env.state_dir / "homes").glob("*/.gemini/settings.json"))
        assert len(homes) == 1 and homes[0].stat().st_mode & 0o777 == 0o600


def test_a_confined_gemini_with_no_sign_in_chosen_is_blocked_and_says_why(work: Work) -> None:
    with FakeGemini(reply=reply) as api, confined(work, api, settings=False):
        work.cli("sessions", "start", REF, "--prompt", "say hello")
        found = work.wait_attention(REF, "blocked", 90)
        assert "How would you like to authenticate" in found["prompt"]["text"], found
        assert not api.user_prompts()


def _screen(work: Work) -> list[str]:
    shown = work.cli("sessions", "logs", REF, "--lines", "60")
    return shown.stdout.splitlines() if shown.exit_code == 0 else []
