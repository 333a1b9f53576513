"""Starting by hand (SPEC §10, issue 28): the documented quickstart reaches a working agent
offline (the demo harness, as a subprocess on a clean state); `sessions start` on GitHub and
local items, start-or-deliver, case-insensitive refs, `dispatch --comment`, the example
payloads, and the refusals."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.conftest import REPO, Env
from tests.helpers import wait_until
from tests.work import Work

QUICKSTART = REPO / "docs" / "quickstart.md"
MARKER = "<!-- quickstart:offline"


def offline_block() -> list[list[str]]:
    """The commands of the quickstart's offline block, each as argv without `the-loop`."""
    text = QUICKSTART.read_text(encoding="utf-8")
    after = text[text.index(MARKER) :]
    block = re.search(r"```sh\n(.*?)```", after, re.S)
    assert block is not None, "the offline block of docs/quickstart.md has no ```sh block"
    commands = []
    for line in block.group(1).splitlines():
        argv = shlex.split(line, comments=True)
        if argv:
            assert argv[0] == "the-loop", line
            commands.append(argv[1:])
    return commands


def screen(env: Env, ref: str) -> str:
    return env.run("sessions", "logs", ref).stdout


def test_the_documented_offline_quickstart_reaches_a_working_agent(loop_env: Env) -> None:
    assert not loop_env.state_dir.exists()  # a clean state: nothing ran here before
    started = loop_env.run("start", timeout=90)
    assert started.exit_code == 0, started.stdout + started.stderr
    try:
        outputs = []
        for argv in offline_block():
            result = loop_env.run(*argv)
            assert result.exit_code == 0, f"{argv}: {result.stdout}{result.stderr}"
            outputs.append(result.stdout)
        assert outputs[0].startswith("spawned local:hello"), outputs[0]
        assert "delivered local:hello" in outputs[2], outputs[2]
        # the agent answered both messages (the first one is the spawn prompt)
        wait_until(
            lambda: "demo: message 2 received" in screen(loop_env, "local:hello"),
            20,
            what="the demo agent's second answer",
        )
        shown = screen(loop_env, "local:hello")
        assert "demo: you asked: say hello and list your files" in shown, shown
        listed = loop_env.run("sessions", "list", "--format", "json")
        (row,) = json.loads(listed.stdout)
        assert (row["workItem"], row["harness"], row["status"]) == (
            "local:hello",
            "demo",
            "active",
        )

        # it waits as soon as it answered (its prompt alone on the last line), not after the
        # quiet time, with the answer to the second message as its last message although the
        # screen never showed it working: it answers at once
        def attention() -> dict[str, str]:
            shown = loop_env.run("sessions", "show", "local:hello", "--format", "json")
            return json.loads(shown.stdout)["attention"]  # type: ignore[no-any-return]

        wait_until(
            lambda: "demo: message 2 received" in attention()["lastMessage"],
            20,
            what="the second answer as the last message",
        )
        now = attention()
        assert now["state"] == "waiting" and now["rule"].startswith("waitingPatterns[0]"), now
        assert "demo: you asked: and now?" in now["lastMessage"], now
    finally:
        assert loop_env.run("stop", timeout=60).exit_code == 0


def test_sessions_start_spawns_then_delivers_and_refs_ignore_case(work: Work) -> None:
    first = work.env.run("sessions", "start", "Octo/Repo#21", "--prompt", "count the stars")
    assert first.exit_code == 0, first.stderr
    assert first.stdout.startswith("spawned github:octo/repo#21"), first.stdout
    session = work.session_json("github:octo/repo#21")
    sid = session["id"]
    assert session["tmuxTarget"] == "loop-github-octo-repo-21"
    prompts = work.wait_prompts(sid, 1)
    assert "count the stars" in prompts[0]

    again = work.env.run(
        "sessions", "start", "github:octo/repo#21", "--prompt", "and the planets", "--as", "bob"
    )
    assert again.exit_code == 0, again.stderr
    assert again.stdout.startswith(f"delivered github:octo/repo#21 (session {sid}"), again.stdout
    prompts = work.wait_prompts(sid, 2)
    assert "Message from bob" in prompts[1] and "and the planets" in prompts[1]

    # a webhook comment on the same item in other case reaches the same live session
    commented = work.env.run(
        "dispatch", "--comment", "and the moons", "--item", "OCTO/REPO#21", "--as", "alice"
    )
    assert commented.exit_code == 0, commented.stdout + commented.stderr
    assert "delivered" in commented.stdout, commented.stdout
    assert "and the moons" in work.wait_prompts(sid, 3)[2]
    listed = json.loads(work.env.run("sessions", "list", "--format", "json").stdout)
    assert [r["id"] for r in listed] == [sid]


def test_a_local_item_needs_no_github_and_writes_nothing_back(work: Work) -> None:
    work.configure(github={"enabled": True, "apiUrl": "http://127.0.0.1:9/"})
    result = work.env.run("sessions", "start", "local:Scratch-1", "--prompt", "tidy up")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("spawned local:scratch-1"), result.stdout
    session = work.session_json("local:scratch-1")
    assert session["tmuxTarget"] == "loop-local-scratch-1"
    assert Path(session["cwd"]).name == "local-scratch-1"
    prompt = work.wait_prompts(session["id"], 1)[0]
    assert "tidy up" in prompt and "github.com" not in prompt and "comment" not in prompt
    outbox = work.env.run("outbox", "list", "--format", "json")
    assert outbox.exit_code == 0 and json.loads(outbox.stdout) == [], outbox.stdout


def test_dispatch_comment_goes_through_the_rules(work: Work) -> None:
    stranger = work.env.run(
        "dispatch", "--comment", "the-loop do it", "--item", "octo/repo#4", "--as", "mallory"
    )
    assert stranger.exit_code == 0 and "unauthorized (mallory)" in stranger.stdout, stranger
    allowed = work.env.run(
        "dispatch", "--comment", "the-loop do fix it", "--item", "octo/repo#4", "--as", "alice"
    )
    assert allowed.exit_code == 0 and "spawned" in allowed.stdout, allowed.stdout
    sid = work.session_json("github:octo/repo#4")["id"]
    assert "fix it" in work.wait_prompts(sid, 1)[0]


def test_the_example_payloads_exist_and_do_what_their_readme_says(work: Work) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    named = re.findall(r"the-loop dispatch --event \S+ (\S+\.json)", readme)
    assert named and all((REPO / path).is_file() for path in named), named
    examples = REPO / "docs" / "examples"
    opened = work.env.run("dispatch", "--event", "issue_comment", str(examples / "comment.json"))
    assert "spawned" in opened.stdout, opened.stdout + opened.stderr
    sid = work.session_json("github:octo/repo#15")["id"]
    follow = work.env.run("dispatch", "--event", "issue_comment", str(examples / "follow-up.json"))
    assert "delivered" in follow.stdout, follow.stdout
    assert "regression test" in work.wait_prompts(sid, 2)[1]
    closed = work.env.run("dispatch", "--event", "issues", str(examples / "issue-closed.json"))
    assert "closed github:octo/repo#15" in closed.stdout, closed.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sessions", "start", "local:-x", "--prompt", "p"], "local:NAME"),
        (["sessions", "start", "octo#1", "--prompt", "p"], "github:OWNER/REPO#N"),
        (["sessions", "start", "local:a", "--prompt", "  "], "empty prompt"),
        (["sessions", "start", "local:a", "--prompt", "p", "--harness", "nope"], "unknown harness"),
        (["sessions", "start", "local:a", "--prompt", "p", "--as", "-bob"], "invalid --as"),
        (["dispatch", "--comment", "hi"], "--comment needs --item"),
        (["dispatch", "--comment", "hi", "--item", "local:a"], "has no tracker"),
        (["dispatch", "--comment", "hi", "--item", "o/r#1", "--as", "a b"], "invalid --as"),
        (["dispatch"], "give a payload file"),
    ],
)
def test_bad_input_is_refused_with_the_grammar(
    loop_env: Env, args: list[str], message: str
) -> None:
    result = loop_env.run(*args)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert loop_env.run("sessions", "list", "--format", "json").stdout.strip() == "[]"


def test_sessions_show_prints_no_python_reprs(work: Work) -> None:
    assert work.env.run("sessions", "start", "local:show", "--prompt", "hi").exit_code == 0
    shown = work.env.run("sessions", "show", "local:show")
    assert shown.exit_code == 0, shown.stderr
    for repr_mark in ("{'", "['", "': ", "None", "True", "False"):
        assert repr_mark not in shown.stdout, shown.stdout
    usage = next(line for line in shown.stdout.splitlines() if line.startswith("usage "))
    assert "0 turns" in usage and "0 input" in usage, usage
    attention = next(line for line in shown.stdout.splitlines() if line.startswith("attention"))
    assert "state=working" in attention, attention
