"""A daemon driving the real Gemini CLI (pinned) against the fake Gemini API, as the default
harness of local work items: the set-up the Gemini end-to-end tests share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.daemon import Daemon, served
from tests.fakes.fake_gemini import FakeGemini
from tests.harness.test_gemini_e2e import GEMINI_BIN
from tests.work import Work

NEEDS_GEMINI = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not GEMINI_BIN.exists(), reason=f"no Gemini CLI at {GEMINI_BIN}"),
]
"""The marks of a test that runs the real Gemini CLI under a daemon."""


@contextmanager
def gemini_daemon(work: Work, api: FakeGemini, **sections: Any) -> Iterator[Daemon]:
    """Configure Gemini, pointed at API, as the default harness (attention passes every
    0.1 s, no notice for an hour, unless SECTIONS' ``attention`` says otherwise), and SECTIONS;
    serve a daemon until the block ends."""
    env = api.gemini_env(work.env.root / "gemini-home")
    attention = {"pollSeconds": 0.1, "notifyAfterSeconds": 3600, **sections.pop("attention", {})}
    work.configure(
        harnesses={"gemini": {"binary": str(GEMINI_BIN), "env": env}},
        routing={"defaultHarness": "gemini"},
        attention=attention,
        **sections,
    )
    with served(work) as daemon:
        yield daemon
