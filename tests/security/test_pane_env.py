"""What agents can see of the-loop's environment: its own secrets (API, cluster) never; the
GitHub token only while ``github.tokenToAgents`` is true (the default)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.fakes import fake_agent
from tests.fakes import payloads as P
from tests.work import Work

pytestmark = pytest.mark.security


@pytest.mark.parametrize("share", [True, False])
def test_the_github_token_reaches_agents_only_when_shared(work: Work, share: bool) -> None:
    work.configure(github={"tokenToAgents": share}, node={"clusterTokenEnv": "LOOP_CLUSTER"})
    cluster = "cluster-secret-7" * 3
    env = {
        **work.env.process_env(),
        "GITHUB_TOKEN": "gh-secret-5",
        "THE_LOOP_TOKEN": "api-6",
        "LOOP_CLUSTER": cluster,
    }
    payload = work.env.root / "start.json"
    payload.write_text(json.dumps(P.issue_comment_event("the-loop start")))
    done = subprocess.run(
        [sys.executable, "-m", "the_loop", "dispatch", "--event", "issue_comment", str(payload)],
        env=env,
        capture_output=True,
        text=True,
        cwd=work.env.root,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    sid = str(work.session_json("github:octo/repo#15")["id"])
    work.wait_prompts(sid, 1)
    shown = work.tmux("show-environment", "-g").stdout
    start = fake_agent.read_starts(work.agent_dir, sid)[0]
    assert "api-6" not in shown and "THE_LOOP_TOKEN" not in start.env
    assert cluster not in shown and "LOOP_CLUSTER" not in start.env
    assert ("GITHUB_TOKEN=gh-secret-5" in shown) is share, "every pane inherits this"
