"""`command` harnesses whose templates take no prompt still get every prompt exactly once, and
`config validate` says what each placeholder of their templates gets. Driven through the real
CLI as a subprocess, with real tmux and the fake agent (interactive) or a small script
(headless)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Env
from tests.fakes import fake_agent
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.standing.conftest import Standing
from tests.work import Work

FAKE = str(fake_agent.SCRIPT)
REF = "github:octo/repo#15"

# A headless agent: records its argv-borne prompt file (when given) and its standard input.
HEADLESS_SCRIPT = """\
import json, pathlib, sys
out, sid, rest = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
prompt = pathlib.Path(rest[0]).read_text() if rest else sys.stdin.read()
with (out / (sid + ".jsonl")).open("a") as f:
    f.write(json.dumps({"prompt": prompt, "argv": sys.argv}) + "\\n")
print(json.dumps({"type": "result", "ok": True}))
"""


def prompt_less(agent_dir: Path) -> dict[str, Any]:
    """The fake agent as a `command` harness whose templates have no {prompt} at all."""
    return {
        "adapter": "command",
        "interactive": [sys.executable, FAKE, "--session-id", "{session_id}"],
        "resume": [sys.executable, FAKE, "--resume", "{session_id}"],
        "env": {"FAKE_AGENT_DIR": str(agent_dir)},
    }


def configure(env: Env, harness: dict[str, Any], **sections: Any) -> None:
    env.write_config(
        harnesses={"fake": harness},
        routing={"defaultHarness": "fake", "authorizedUsers": ["alice"]},
        **sections,
    )


def test_a_work_item_first_prompt_reaches_a_prompt_less_agent_once(work: Work) -> None:
    configure(work.env, prompt_less(work.agent_dir))
    first = work.dispatch(
        "issue_comment", P.issue_comment_event("the-loop do fix it"), "pl-1", subprocess_cli=True
    )
    assert first.exit_code == 0 and "spawned" in first.stdout, first.stdout + first.stderr
    sid = str(work.session_json(REF)["id"])
    assert "fix it" in work.wait_prompts(sid, 1)[0]
    start = fake_agent.read_starts(work.agent_dir, sid)[0]
    assert start.argv[-2:] == ["--session-id", sid], start.argv

    follow = work.dispatch(
        "issue_comment", P.issue_comment_event("and a test"), "pl-2", subprocess_cli=True
    )
    assert follow.exit_code == 0 and "delivered 1" in follow.stdout, follow.stdout
    prompts = work.wait_prompts(sid, 2)
    assert len(prompts) == 2 and "fix it" in prompts[0] and "and a test" in prompts[1], prompts


def test_a_standing_brief_reaches_a_prompt_less_agent_once(st: Standing) -> None:
    configure(st.env, prompt_less(st.agent_dir), standing={"enabled": False, "sessions": []})
    created = st.env.run("standing", "create", "probe", "--prompt", "brief tok-standing-brief")
    assert created.exit_code == 0, created.stdout + created.stderr
    conversation = st.conversation("probe")
    assert st.wait_prompts(conversation, 1)[0].rstrip().endswith("tok-standing-brief")

    said = st.env.run("standing", "say", "probe", "--text", "next one", "--actor", "alice")
    assert said.exit_code == 0, said.stdout + said.stderr
    prompts = st.wait_prompts(conversation, 2)
    assert len(prompts) == 2 and prompts[1].endswith("next one"), prompts
    assert sum("tok-standing-brief" in p for p in prompts) == 1


def _headless(work: Work, template_tail: list[str]) -> tuple[Path, str]:
    out = work.env.root / "headless"
    out.mkdir()
    script = work.env.root / "headless_agent.py"
    script.write_text(HEADLESS_SCRIPT)
    harness = {
        "adapter": "command",
        "headless": [sys.executable, str(script), str(out), "{session_id}", *template_tail],
    }
    work.env.write_config(
        harnesses={"fake": harness},
        routing={"defaultHarness": "fake", "authorizedUsers": ["alice"], "runner": "process"},
    )
    first = work.dispatch(
        "issue_comment",
        P.issue_comment_event("the-loop do tok-headless"),
        "h-1",
        subprocess_cli=True,
    )
    assert first.exit_code == 0 and "spawned" in first.stdout, first.stdout + first.stderr
    return out, str(work.session_json(REF)["id"])


def _records(out: Path, sid: str) -> list[dict[str, Any]]:
    path = out / f"{sid}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_headless_template_without_a_prompt_gets_it_on_stdin_once(work: Work) -> None:
    out, sid = _headless(work, [])
    records = _records(out, sid)
    assert len(records) == 1 and "tok-headless" in records[0]["prompt"], records
    assert not any("tok-headless" in item for item in records[0]["argv"])

    comment = P.issue_comment_event("tok-second")
    follow = work.dispatch("issue_comment", comment, "h-2", subprocess_cli=True)
    assert follow.exit_code == 0, follow.stdout + follow.stderr
    wait_until(lambda: len(_records(out, sid)) >= 2, what="the second headless run")
    prompts = [r["prompt"] for r in _records(out, sid)]
    assert len(prompts) == 2 and "tok-second" in prompts[1], prompts


def test_a_headless_prompt_file_is_written_for_the_run_and_removed(work: Work) -> None:
    out, sid = _headless(work, ["{prompt_file}"])
    (record,) = _records(out, sid)
    assert "tok-headless" in record["prompt"]
    assert not Path(record["argv"][-1]).exists()


def test_config_validate_explains_the_template_placeholders(loop_env: Env) -> None:
    loop_env.write_config(
        harnesses={
            "tui": {
                "adapter": "command",
                "interactive": ["tui", "--session", "{session_id}", "--message", "{prompt}"],
                "headless": ["tui", "--batch"],
            }
        }
    )
    result = loop_env.run("config", "validate")
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    for placeholder in ("{prompt}", "{session_id}", "{prompt_file}"):
        assert any(line.startswith(f"placeholder {placeholder}: ") for line in lines), lines
    assert any(
        line.startswith("harnesses.tui.interactive: {session_id} is the id the-loop minted")
        and "pasted once the agent takes input" in line
        for line in lines
    ), lines
    assert "warning: harnesses.tui.interactive: '--message' comes before {prompt}" in result.stdout
    assert "harnesses.tui.headless: no {prompt} or {prompt_file}: the prompt is written" in (
        result.stdout
    )

    loop_env.write_config()
    plain = loop_env.run("config", "validate")
    assert plain.exit_code == 0 and "placeholder" not in plain.stdout, plain.stdout
