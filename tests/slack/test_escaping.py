"""Text stays text in Slack and on GitHub (issue 29 item 4): a permission prompt whose words
come from untrusted text (``<!channel>``, a ``<url|label>`` link, ``@here``) reaches the fake
Slack escaped, so it pings no one and hides nothing; the reply mirrored to GitHub mentions no
one."""

from __future__ import annotations

import pytest

from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.outbox.conftest import REPO
from tests.slack.conftest import Slack
from tests.slack.test_buttons import asking, state  # noqa: F401  (the fixture)
from tests.slack.test_work_items import spawn

pytestmark = pytest.mark.security

HOSTILE = "<!channel> <https://evil.example/x|make test> @here cc @octocat"


def test_a_prompt_built_from_channel_text_pings_no_one(asking: Slack, gh: FakeGitHub) -> None:  # noqa: F811
    slack = asking
    ref, number, _ = spawn(slack, gh)
    thread = slack.announcement(ref).ts
    wait_until(lambda: state(slack.work, ref).get("state") == "waiting", 30, what="waiting")
    assert slack.reply(f"ASK-PERMISSION: {HOSTILE}", thread).status_code == 200
    wait_until(lambda: state(slack.work, ref).get("state") == "needs-permission", 30, what="asking")
    prompt_id = state(slack.work, ref)["prompt"]["id"]
    notice = slack.prompt_message(thread, prompt_id)
    shown = [notice.text] + [
        b["text"]["text"] for b in notice.blocks or [] if b.get("type") == "section"
    ]
    for text in shown:
        assert "&lt;!channel&gt;" in text, text
        assert "<!channel>" not in text and "<https://evil" not in text
        assert "@here" not in text

    def mirrored() -> list[dict[str, str]]:
        return [c for c in gh.comments(REPO, number) if "From Slack" in c["body"]]

    wait_until(mirrored, 30, what="the reply mirrored to GitHub")
    body = mirrored()[0]["body"]
    assert "@octocat" not in body and "@&#8203;octocat" in body
