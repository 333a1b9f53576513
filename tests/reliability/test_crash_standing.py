"""A standing ``say`` is exactly-once across a SIGKILL at each step of its delivery.

The real CLI process is killed (SIGKILL, no clean-up) at a named step of the two-phase
delivery — after the message is queued, after it is loaded into a tmux buffer, after the buffer
is recorded as staged, after the paste — and the next ``say`` must deliver what the crash left
exactly once, in order, before its own message.
"""

from __future__ import annotations

import signal

import pytest

from tests.standing.conftest import Standing

pytestmark = pytest.mark.reliability

STEPS = ["after-enqueue", "after-stage", "after-staged", "after-paste"]


@pytest.mark.parametrize("step", STEPS)
def test_standing_say_is_exactly_once_across_a_sigkill(st: Standing, step: str) -> None:
    st.ok("standing", "create", "probe", "--prompt", "brief")
    conversation = st.conversation("probe")
    st.wait_prompts(conversation, 1)
    st.ok("standing", "say", "probe", "--text", "warm-up tok-warm")
    st.wait_prompts(conversation, 2)

    env = {**st.env.process_env(), "THE_LOOP_CRASH_AT": step}
    crashed = st.env.run("standing", "say", "probe", "--text", "first tok-one", env=env)
    assert crashed.exit_code == -signal.SIGKILL, (crashed.exit_code, crashed.stderr)

    st.ok("standing", "say", "probe", "--text", "second tok-two")
    texts = st.wait_prompts(conversation, 4)
    assert sum("tok-one" in t for t in texts) == 1, texts
    assert sum("tok-two" in t for t in texts) == 1, texts
    assert "tok-one" in texts[-2] and "tok-two" in texts[-1], "in order, the crashed one first"
    st.ok("standing", "say", "probe", "--text", "third tok-three")
    assert sum("tok-one" in t for t in st.wait_prompts(conversation, 5)) == 1
