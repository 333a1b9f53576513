"""What the GitHub broker lets a confined agent's git and API requests do (SPEC §18), decided
on the requests themselves: the item's repository only, fetch with ``read``, a push of the
item's own branch with ``write``, comments on the item marked. (The end-to-end path through
bubblewrap, the daemon and real git is tests/security/test_sandbox_github.py.)"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from the_loop.agent.github_broker import (
    GIT_CONFIG,
    Grant,
    Refused,
    Request,
    agent_git_config,
    check_api,
    check_git,
    grant_of,
    pushed_refs,
)
from the_loop.agent_files import write_in_home
from the_loop.config import Config
from the_loop.refs import WorkItemRef
from the_loop.store.hook_tokens import HookToken
from the_loop.work import SELF_MARKER

REF = WorkItemRef(owner="octo", repo="app", number=7)
BRANCH = "the-loop/github-octo-app-7"
OLD, NEW = "1" * 40, "2" * 40


def grant(access: str = "write") -> Grant:
    return Grant(REF, BRANCH, access, "https://github.com/octo/app.git", "https://api.x/v3")


def pkt(text: str) -> bytes:
    data = text.encode()
    return b"%04x" % (len(data) + 4) + data


def push(*refs: str, encoding: str = "") -> Request:
    body = pkt(f"{OLD} {NEW} {refs[0]}\0report-status side-band-64k\n")
    body += b"".join(pkt(f"{OLD} {NEW} {ref}\n") for ref in refs[1:]) + b"0000PACK..."
    headers = [("Content-Type", "application/x-git-receive-pack-request")]
    if encoding:
        body = gzip.compress(body)
        headers.append(("Content-Encoding", encoding))
    return Request("POST", "/octo/app.git/git-receive-pack", "", headers, body)


def get(path: str, query: str = "") -> Request:
    return Request("GET", path, query, [], b"")


def post(path: str, payload: object) -> Request:
    return Request("POST", path, "", [], json.dumps(payload).encode())


def test_a_push_may_update_only_the_items_branch() -> None:
    url = check_git(grant(), push(f"refs/heads/{BRANCH}"))
    assert url == "https://github.com/octo/app.git/git-receive-pack"
    assert check_git(grant(), push(f"refs/heads/{BRANCH}", encoding="gzip"))
    for refs in (("refs/heads/main",), (f"refs/heads/{BRANCH}", "refs/tags/v1")):
        with pytest.raises(Refused, match="may update only"):
            check_git(grant(), push(*refs))


def test_pushed_refs_reads_the_commands_and_nothing_else() -> None:
    assert pushed_refs(push("refs/heads/a", "refs/heads/b").body) == [
        "refs/heads/a",
        "refs/heads/b",
    ]
    assert pushed_refs(pkt(f"shallow {OLD}\n") + pkt(f"{OLD} {NEW} refs/heads/x\n") + b"0000") == [
        "refs/heads/x"
    ]
    for unreadable in (b"", b"zzzz", pkt("push-cert\0caps\n") + b"0000", pkt("a b\n") + b"0000"):
        assert pushed_refs(unreadable) is None
    with pytest.raises(Refused, match="cannot be read"):
        check_git(grant(), Request("POST", "/octo/app.git/git-receive-pack", "", [], b"junk"))


def test_fetch_needs_read_and_push_needs_write() -> None:
    advert = "service=git-upload-pack"
    assert check_git(grant("read"), get("/octo/app.git/info/refs", advert)).endswith(
        "/octo/app.git/info/refs?service=git-upload-pack"
    )
    assert check_git(grant("read"), Request("POST", "/octo/App/git-upload-pack", "", [], b""))
    with pytest.raises(Refused, match=r"sandbox\.github is read"):
        check_git(grant("read"), get("/octo/app.git/info/refs", "service=git-receive-pack"))
    with pytest.raises(Refused, match=r"sandbox\.github is read"):
        check_git(grant("read"), push(f"refs/heads/{BRANCH}"))


def test_only_the_items_repository_and_smart_http() -> None:
    for path in ("/octo/other.git/info/refs", "/octo/app-x.git/info/refs", "/evil/app/info/refs"):
        with pytest.raises(Refused, match="not the item's repository"):
            check_git(grant(), get(path, "service=git-upload-pack"))
    with pytest.raises(Refused, match="smart HTTP"):
        check_git(grant(), get("/octo/app.git/objects/info/packs"))


def test_api_reads_the_items_repository_only() -> None:
    url, _ = check_api(grant("read"), get("/repos/octo/app/issues/7/comments", "per_page=5"))
    assert url == "https://api.x/v3/repos/octo/app/issues/7/comments?per_page=5"
    for path in ("/repos/octo/other/issues", "/user", "/graphql", "/repos/octo/app-x"):
        with pytest.raises(Refused, match="only the item's repository"):
            check_api(grant(), get(path))
    for path in ("/repos/octo/app/../../user", "/repos/octo/app/%2e%2e/x", "/repos/octo/app/.\\x"):
        with pytest.raises(Refused, match="dot segments"):
            check_api(grant(), get(path))


def test_a_comment_on_the_item_is_marked_and_nothing_else_is_posted() -> None:
    _, body = check_api(grant(), post("/repos/octo/app/issues/7/comments", {"body": "x"}))
    assert json.loads(body) == {"body": f"x\n\n{SELF_MARKER}"}
    refused = [
        (grant("read"), post("/repos/octo/app/issues/7/comments", {"body": "x"}), "is read"),
        (grant(), post("/repos/octo/app/issues/8/comments", {"body": "x"}), "not brokered"),
        (grant(), post("/repos/octo/app/issues/7/comments", {"body": " "}), "text body"),
        (grant(), post("/repos/octo/app/issues/7/comments", ["x"]), "JSON object"),
        (grant(), post("/repos/octo/app/pulls", {"head": "main", "base": "main"}), "branch"),
        (grant(), Request("PATCH", "/repos/octo/app/issues/comments/1", "", [], b"{}"), "PATCH"),
        (grant(), Request("DELETE", "/repos/octo/app/git/refs/heads/x", "", [], b""), "DELETE"),
    ]
    for given, request, reason in refused:
        with pytest.raises(Refused, match=reason):
            check_api(given, request)
    _, body = check_api(grant(), post("/repos/octo/app/pulls", {"head": f"octo:{BRANCH}"}))
    assert json.loads(body)["body"] == SELF_MARKER


def test_grants_need_a_github_work_item_and_a_policy() -> None:
    config = Config.model_validate({"sandbox": {"github": "read"}})
    found = grant_of(config, HookToken("s1", "github:octo/app#7", None))
    assert (found.ref, found.branch, found.access) == (REF, BRANCH, "read")
    assert found.git_url == "https://github.com/octo/app.git"
    for work_item in (None, "local:notes", "not a ref"):
        with pytest.raises(Refused, match="repository"):
            grant_of(config, HookToken("s1", work_item, None))
    none = Config.model_validate({"sandbox": {"github": "none"}})
    with pytest.raises(Refused, match=r"sandbox\.github is none"):
        grant_of(none, HookToken("s1", "github:octo/app#7", None))


def test_the_agents_git_config_leads_its_repository_to_the_broker() -> None:
    text = agent_git_config(Config(), "github:octo/app#7", 3130)
    assert '[url "http://127.0.0.1:3130/octo/app"]' in text
    for url in ("https://github.com/octo/app", "git@github.com:octo/app"):
        assert f"insteadOf = {url}\n" in text
    assert "[url" not in agent_git_config(Config(), None, 3130)


def test_the_git_config_is_written_in_the_home_never_through_a_symlink(tmp_path: Path) -> None:
    home, outside = tmp_path / "home", tmp_path / "outside"
    for path in (home, outside / "git"):
        path.mkdir(parents=True)
    (outside / "git" / "config").write_text("the daemon's own file\n")
    (home / ".config").symlink_to(outside)  # left by the agent
    write_in_home(home, GIT_CONFIG, "one\n")
    assert (outside / "git" / "config").read_text() == "the daemon's own file\n"
    assert (home / GIT_CONFIG).read_text() == "one\n"
    (home / GIT_CONFIG).unlink()
    (home / GIT_CONFIG).symlink_to(outside / "git" / "config")
    write_in_home(home, GIT_CONFIG, "two\n")
    assert (outside / "git" / "config").read_text() == "the daemon's own file\n"
    assert not (home / GIT_CONFIG).is_symlink()
    assert (home / GIT_CONFIG).read_text() == "two\n"
