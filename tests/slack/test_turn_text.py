"""The text of an agent's answer in Slack (``outbox.slack_turns``): escaped, Markdown rewritten as
Slack writes it, and split into parts Slack takes whole without breaking an escape or a code
block."""

from __future__ import annotations

from the_loop.outbox.slack_turns import FENCE, mrkdwn, split


def test_nothing_the_agent_writes_pings_or_hides_a_link() -> None:
    text = mrkdwn("Done <!channel> @here <@U123> <https://evil.example|harmless> & [docs](x)")
    assert text == (
        "Done &lt;!channel&gt; @\u2060here &lt;@U123&gt; "
        "&lt;https://evil.example|harmless&gt; &amp; [docs](x)"
    )
    assert "<" not in mrkdwn("```\n<!here>\n```")


def test_markdown_becomes_mrkdwn_outside_code() -> None:
    text = "# Result\n- **fixed** the ~~old~~ bug, see [the PR](https://h.example/p?a=1&b=2)"
    assert mrkdwn(text) == (
        "*Result*\n• *fixed* the ~old~ bug, see the PR (https://h.example/p?a=1&amp;b=2)"
    )
    assert mrkdwn("`**x**` and **y**") == "`**x**` and *y*"
    assert mrkdwn("```python\n**kept** # as is\n```") == "```\n**kept** # as is\n```"


def test_a_long_answer_is_cut_between_lines_and_never_inside_an_escape() -> None:
    lines = [f"line {n} " + "&" * 40 for n in range(200)]
    parts = split(mrkdwn("\n".join(lines)), 1000)
    assert len(parts) > 1 and all(len(p) <= 1000 for p in parts)
    assert "\n".join(parts) == mrkdwn("\n".join(lines))
    one = split(mrkdwn("x" * 1500 + "&" * 1000), 1000)
    assert all(len(p) <= 1000 for p in one)
    assert all(p.count("&amp;") * 5 == len(p.replace("x", "")) for p in one)
    assert "".join(one) == mrkdwn("x" * 1500 + "&" * 1000)


def test_a_code_block_cut_in_two_stays_code_in_both_parts() -> None:
    body = "\n".join(f"print({n})" for n in range(300))
    parts = split(f"Here:\n{FENCE}\n{body}\n{FENCE}\nDone.", 1000)
    assert len(parts) > 2
    for part in parts:
        assert part.count(FENCE) % 2 == 0, part
    assert parts[1].startswith(FENCE) and parts[0].endswith(FENCE)
    assert parts[-1].endswith("Done.")


def test_an_empty_answer_is_no_post() -> None:
    assert split(mrkdwn("  \n\n ")) == []
