"""GitHub webhook payloads modelled on GitHub's documented shapes, built from a few arguments.

Each builder returns a fresh ``dict`` as GitHub would send it for one event type (the fields
the-loop reads and a realistic set around them). Defaults describe ``octo/repo`` on github.com,
an issue #15 and a pull request #20 by ``alice``. Every comment, review and review comment
gets a fresh GitHub id unless one is given (GitHub never reuses one; the-loop ignores an id it
already processed, as a replay).
"""

from __future__ import annotations

import itertools
import os
from typing import Any

Json = dict[str, Any]

REPO = "octo/repo"
REPO_ID = 1296269
API = "https://api.github.com"
WEB = "https://github.com"
_IDS = itertools.count(10_000 + os.getpid() * 1_000_000)  # unique across live processes too


def fresh_id(given: int | None = None) -> int:
    """GIVEN, or an id no other payload of this process carries."""
    return next(_IDS) if given is None else given


def user(login: str = "alice", kind: str = "User", user_id: int = 583231) -> Json:
    return {
        "login": login,
        "id": user_id,
        "node_id": "MDQ6VXNlcjU4MzIzMQ==",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{user_id}?v=4",
        "html_url": f"{WEB}/{login}",
        "type": kind,
        "site_admin": False,
    }


def bot(login: str = "the-loop-bot[bot]") -> Json:
    return user(login, kind="Bot", user_id=41898282)


def repository(full_name: str = REPO, repo_id: int = REPO_ID, web: str = WEB) -> Json:
    owner, name = full_name.split("/")
    return {
        "id": repo_id,
        "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
        "name": name,
        "full_name": full_name,
        "private": False,
        "owner": user(owner, kind="Organization", user_id=9919),
        "html_url": f"{web}/{full_name}",
        "url": f"{API}/repos/{full_name}",
        "default_branch": "main",
    }


def label(name: str = "the-loop") -> Json:
    return {"id": 208045946, "name": name, "color": "f29513", "default": False}


def issue(
    number: int = 15,
    *,
    title: str = "Flaky test in the scheduler",
    body: str | None = "The scheduler test fails one run in ten.",
    state: str = "open",
    labels: list[str] | None = None,
    author: str = "alice",
    on_pr: bool = False,
    repo: str = REPO,
) -> Json:
    data: Json = {
        "url": f"{API}/repos/{repo}/issues/{number}",
        "html_url": f"{WEB}/{repo}/{'pull' if on_pr else 'issues'}/{number}",
        "id": 1347 + number,
        "number": number,
        "title": title,
        "user": user(author),
        "labels": [label(n) for n in labels or []],
        "state": state,
        "locked": False,
        "comments": 0,
        "created_at": "2026-11-01T10:00:00Z",
        "updated_at": "2026-11-01T10:00:00Z",
        "closed_at": None if state == "open" else "2026-11-02T10:00:00Z",
        "author_association": "MEMBER",
        "body": body,
    }
    if on_pr:
        data["pull_request"] = {
            "url": f"{API}/repos/{repo}/pulls/{number}",
            "html_url": f"{WEB}/{repo}/pull/{number}",
            "diff_url": f"{WEB}/{repo}/pull/{number}.diff",
            "merged_at": None,
        }
    return data


def pull_request(
    number: int = 20,
    *,
    title: str = "Fix the flaky scheduler test",
    body: str | None = "Fixes #15",
    head_ref: str = "fix-scheduler",
    state: str = "open",
    merged: bool = False,
    labels: list[str] | None = None,
    author: str = "alice",
    repo: str = REPO,
) -> Json:
    return {
        "url": f"{API}/repos/{repo}/pulls/{number}",
        "id": 1034 + number,
        "html_url": f"{WEB}/{repo}/pull/{number}",
        "number": number,
        "state": state,
        "locked": False,
        "title": title,
        "user": user(author),
        "body": body,
        "labels": [label(n) for n in labels or []],
        "draft": False,
        "created_at": "2026-11-01T11:00:00Z",
        "merged": merged,
        "merged_at": "2026-11-03T10:00:00Z" if merged else None,
        "head": {
            "label": f"octo:{head_ref}",
            "ref": head_ref,
            "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
            "repo": repository(repo),
        },
        "base": {
            "label": "octo:main",
            "ref": "main",
            "sha": "9049f1265b7d61be4a8904a9a27120d2064dab3b",
            "repo": repository(repo),
        },
    }


def comment(
    body: str, *, author: str = "alice", comment_id: int | None = None, number: int = 15
) -> Json:
    comment_id = fresh_id(comment_id)
    return {
        "url": f"{API}/repos/{REPO}/issues/comments/{comment_id}",
        "html_url": f"{WEB}/{REPO}/issues/{number}#issuecomment-{comment_id}",
        "id": comment_id,
        "user": user(author),
        "created_at": "2026-11-01T12:00:00Z",
        "updated_at": "2026-11-01T12:00:00Z",
        "author_association": "MEMBER",
        "body": body,
    }


def _envelope(action: str | None, sender: Json | None, repo: str = REPO, **rest: Any) -> Json:
    data: Json = {"action": action} if action is not None else {}
    data.update(rest)
    data["repository"] = repository(repo)
    data["sender"] = sender if sender is not None else user()
    return data


def issues_event(
    action: str = "opened",
    *,
    sender: str = "alice",
    added_label: str | None = None,
    repo: str = REPO,
    **issue_args: Any,
) -> Json:
    extra: Json = {"label": label(added_label)} if added_label else {}
    return _envelope(action, user(sender), repo, issue=issue(repo=repo, **issue_args), **extra)


def issue_comment_event(
    body: str,
    *,
    action: str = "created",
    sender: str = "alice",
    sender_json: Json | None = None,
    number: int = 15,
    on_pr: bool = False,
    issue_body: str | None = None,
    repo: str = REPO,
    state: str = "open",
    comment_id: int | None = None,
) -> Json:
    target = issue(
        number,
        on_pr=on_pr,
        repo=repo,
        state=state,
        body=issue_body
        if issue_body is not None
        else "Fixes #15"
        if on_pr
        else "The scheduler test fails one run in ten.",
    )
    who = sender_json or user(sender)
    return _envelope(
        action,
        who,
        repo,
        issue=target,
        comment=comment(body, author=who["login"], number=number, comment_id=comment_id),
    )


def pull_request_event(
    action: str = "opened",
    *,
    sender: str = "alice",
    added_label: str | None = None,
    repo: str = REPO,
    closing_refs: Any = None,
    **pr_args: Any,
) -> Json:
    pr = pull_request(repo=repo, **pr_args)
    if closing_refs is not None:
        pr["closingIssuesReferences"] = closing_refs
    extra: Json = {"label": label(added_label)} if added_label else {}
    return _envelope(action, user(sender), repo, number=pr["number"], pull_request=pr, **extra)


def review_event(
    body: str | None,
    *,
    state: str = "changes_requested",
    action: str = "submitted",
    sender: str = "alice",
    review_id: int | None = None,
    **pr_args: Any,
) -> Json:
    pr = pull_request(**pr_args)
    review_id = fresh_id(review_id)
    review = {
        "id": review_id,
        "user": user(sender),
        "body": body,
        "state": state,
        "html_url": f"{pr['html_url']}#pullrequestreview-{review_id}",
        "submitted_at": "2026-11-01T13:00:00Z",
        "commit_id": pr["head"]["sha"],
        "author_association": "MEMBER",
    }
    return _envelope(action, user(sender), pull_request=pr, review=review)


def review_comment_event(
    body: str,
    *,
    action: str = "created",
    sender: str = "alice",
    note_id: int | None = None,
    **pr_args: Any,
) -> Json:
    pr = pull_request(**pr_args)
    note_id = fresh_id(note_id)
    note = {
        "id": note_id,
        "pull_request_review_id": 80,
        "diff_hunk": "@@ -16,33 +16,40 @@ public class Connection : IConnection...",
        "path": "src/scheduler.py",
        "line": 42,
        "side": "RIGHT",
        "commit_id": pr["head"]["sha"],
        "user": user(sender),
        "body": body,
        "html_url": f"{pr['html_url']}#discussion_r{note_id}",
        "author_association": "MEMBER",
    }
    return _envelope(action, user(sender), pull_request=pr, comment=note)


def ci_pull_request(
    number: int = 20, head_ref: str = "fix-scheduler", repo_id: int = REPO_ID
) -> Json:
    """An entry of a CI payload's ``pull_requests`` array (no title, no body: GitHub's shape)."""
    base_repo = {"id": repo_id, "url": f"{API}/repos/{REPO}", "name": "repo"}
    return {
        "url": f"{API}/repos/{REPO}/pulls/{number}",
        "id": 1034 + number,
        "number": number,
        "head": {
            "ref": head_ref,
            "sha": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
            "repo": base_repo,
        },
        "base": {
            "ref": "main",
            "sha": "9049f1265b7d61be4a8904a9a27120d2064dab3b",
            "repo": base_repo,
        },
    }


def workflow_run_event(
    conclusion: str | None = "failure",
    *,
    action: str = "completed",
    pull_requests: list[Json] | None = None,
    head_branch: str = "fix-scheduler",
    sender: str = "alice",
) -> Json:
    run = {
        "id": 30433642,
        "name": "Build",
        "head_branch": head_branch,
        "head_sha": "acb5820ced9479c074f688cc328bf03f341a511d",
        "run_number": 562,
        "run_attempt": 1,
        "event": "pull_request",
        "status": "completed" if action == "completed" else "in_progress",
        "conclusion": conclusion,
        "workflow_id": 159038,
        "html_url": f"{WEB}/{REPO}/actions/runs/30433642",
        "pull_requests": [ci_pull_request()] if pull_requests is None else pull_requests,
        "display_title": "Fix the flaky scheduler test",
    }
    return _envelope(
        action,
        user(sender),
        workflow_run=run,
        workflow={"id": 159038, "name": "Build", "path": ".github/workflows/b.yml"},
    )


def check_run_event(
    conclusion: str | None = "failure",
    *,
    action: str = "completed",
    pull_requests: list[Json] | None = None,
    sender: Json | None = None,
) -> Json:
    prs = [ci_pull_request()] if pull_requests is None else pull_requests
    run = {
        "id": 128620228,
        "head_sha": "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
        "external_id": "",
        "html_url": f"{WEB}/{REPO}/runs/128620228",
        "status": "completed" if action == "completed" else "queued",
        "conclusion": conclusion,
        "name": "Octocoders-linter",
        "output": {
            "title": "3 problems",
            "summary": "Lint failed on src/scheduler.py",
            "text": None,
            "annotations_count": 3,
        },
        "check_suite": {
            "id": 118578147,
            "head_branch": "fix-scheduler",
            "head_sha": "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
            "pull_requests": prs,
        },
        "app": {"id": 29310, "slug": "octoapp", "name": "octo-app"},
        "pull_requests": prs,
    }
    return _envelope(action, sender or user("ghost"), check_run=run)


def check_suite_event(
    conclusion: str | None = "timed_out",
    *,
    action: str = "completed",
    pull_requests: list[Json] | None = None,
    head_branch: str = "fix-scheduler",
) -> Json:
    suite = {
        "id": 118578147,
        "head_branch": head_branch,
        "head_sha": "ec26c3e57ca3a959ca5aad62de7213c562f8c821",
        "status": "completed" if action == "completed" else "queued",
        "conclusion": conclusion,
        "pull_requests": [ci_pull_request()] if pull_requests is None else pull_requests,
        "app": {"id": 29310, "slug": "octoapp", "name": "octo-app"},
    }
    return _envelope(action, bot("octo-app[bot]"), check_suite=suite)


def status_event(state: str = "failure", *, branches: list[str] | None = None) -> Json:
    sha = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"
    return _envelope(
        None,
        user("ci-service", kind="Bot"),
        id=214015194,
        sha=sha,
        name=REPO,
        target_url="https://ci.example.com/builds/123",
        context="default",
        description="The build failed",
        state=state,
        branches=[
            {"name": b, "commit": {"sha": sha}, "protected": False}
            for b in (branches if branches is not None else ["issue-15"])
        ],
    )


def ping_event() -> Json:
    return {
        "zen": "Design for failure.",
        "hook_id": 109948940,
        "hook": {
            "type": "Repository",
            "id": 109948940,
            "active": True,
            "events": ["issues", "issue_comment"],
        },
        "repository": repository(),
        "sender": user(),
    }
