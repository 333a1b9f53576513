"""Write-backs queued by CLI commands are posted before they exit; ``the-loop outbox``."""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.fake_github import FakeGitHub
from tests.outbox.conftest import REPO, asked, github_section, start_payload
from tests.work import Work


def rows(work: Work, *args: str) -> list[dict[str, Any]]:
    result = work.cli("outbox", "list", "--format", "json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_dispatch_posts_what_it_queued_before_it_exits(work: Work, gh: FakeGitHub) -> None:
    work.configure(github=github_section(gh))
    item = asked(gh)
    result = work.dispatch("issue_comment", start_payload(item), "d-cli")
    assert result.exit_code == 0, result.stdout + result.stderr
    contents = sorted(r["content"] for r in gh.reactions(REPO, comment_id=item.comment_id))
    assert contents == ["eyes", "hooray"]
    assert [c for c in gh.comments(REPO, item.number) if "started an agent" in c["body"]]
    found = rows(work)
    assert {r["status"] for r in found} == {"done"} and len(found) == 3
    assert {"id", "what", "kind", "workItem", "attempts", "createdAt"} <= set(found[0])
    assert found[0]["createdAt"].endswith("Z") or "+00:00" in found[0]["createdAt"]


def test_list_and_replay_a_refused_write_back(work: Work, gh: FakeGitHub) -> None:
    work.configure(github=github_section(gh))
    item = asked(gh)
    gh.fail_next(1, status=422, path="*/reactions")
    assert work.dispatch("issue_comment", start_payload(item), "d-422").exit_code == 0
    (failed,) = rows(work, "--status", "failed")
    assert failed["what"] == "pickup" and "422" in failed["lastError"]
    assert "failed" in work.cli("outbox", "list").stdout
    assert gh.count(method="POST", path="*/reactions") == 2  # the refused 👀 and the 🎉
    replayed = work.cli("outbox", "replay", str(failed["id"]))
    assert replayed.exit_code == 0, replayed.stdout + replayed.stderr
    assert "done" in replayed.stdout
    contents = sorted(r["content"] for r in gh.reactions(REPO, comment_id=item.comment_id))
    assert contents == ["eyes", "hooray"]
    again = work.cli("outbox", "replay", str(failed["id"]))
    assert again.exit_code != 0 and "already posted" in again.stderr
    missing = work.cli("outbox", "replay", "9999")
    assert missing.exit_code == 1 and missing.stderr.startswith("error: no outbox item 9999")
    bad = work.cli("outbox", "list", "--status", "bogus")
    assert bad.exit_code == 2 and "invalid --status" in bad.stderr


def test_a_transient_failure_is_left_for_the_daemon(work: Work, gh: FakeGitHub) -> None:
    work.configure(github=github_section(gh))
    item = asked(gh)
    gh.fail_next(1, status=502, path=f"/repos/{REPO}/issues/{item.number}/comments")
    assert work.dispatch("issue_comment", start_payload(item), "d-502").exit_code == 0
    (waiting,) = rows(work, "--status", "pending")
    assert waiting["what"] == "announce" and waiting["attempts"] == 1 and waiting["verify"]
    assert not [c for c in gh.comments(REPO, item.number) if "started an agent" in c["body"]]
    replayed = work.cli("outbox", "replay", str(waiting["id"]))
    assert replayed.exit_code == 0, replayed.stdout + replayed.stderr
    assert len([c for c in gh.comments(REPO, item.number) if "started an agent" in c["body"]]) == 1
