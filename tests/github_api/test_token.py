"""Token resolution: the configured environment variable, else ``gh auth token``."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tests.fakes.fake_github import FakeGitHub
from tests.github_api.conftest import REPO
from the_loop.config import GitHubConfig
from the_loop.github.api import GitHubClient, GitHubTokenMissing, resolve_token

ENV = "THE_LOOP_TEST_GH_TOKEN"


def _fake_gh(bin_dir: Path, script: str) -> Path:
    """Write an executable ``gh`` into BIN_DIR running SCRIPT (sh); it logs its argv."""
    bin_dir.mkdir(exist_ok=True)
    gh = bin_dir / "gh"
    gh.write_text(f'#!/bin/sh\necho "$@" >> "{bin_dir}/argv.log"\n{script}\n', encoding="utf-8")
    gh.chmod(gh.stat().st_mode | stat.S_IXUSR)
    return gh


def test_env_var_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "  from-env \n")
    assert resolve_token(ENV) == "from-env"


async def test_gh_auth_token_fallback_reaches_the_fake(
    gh: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    _fake_gh(bin_dir, f'echo "{gh.token}"')
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    config = GitHubConfig(api_url=gh.api_url, token_env=ENV)
    gh.add_issue(REPO, "x", labels=["the-loop"])
    async with GitHubClient.from_config(config, backoff=0.001) as client:
        listing = await client.list_open_items(REPO, "the-loop")
    assert [i.title for i in listing.items] == ["x"]
    argv = (bin_dir / "argv.log").read_text(encoding="utf-8").split()
    assert argv == ["auth", "token", "--hostname", f"127.0.0.1:{gh.port}"]


def test_gh_for_github_com_has_no_hostname(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    _fake_gh(bin_dir, "echo gho_fromgh")
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert resolve_token(ENV) == "gho_fromgh"
    assert (bin_dir / "argv.log").read_text(encoding="utf-8").split() == ["auth", "token"]


def test_missing_gh_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GitHubTokenMissing) as caught:
        resolve_token(ENV)
    assert f"${ENV} is unset" in str(caught.value) and "not installed" in str(caught.value)
    assert "gh auth login" in str(caught.value)


def test_gh_not_logged_in_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    _fake_gh(bin_dir, 'echo "no oauth token found for github.com" >&2; exit 1')
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(GitHubTokenMissing, match="no oauth token found"):
        resolve_token(ENV)


def test_gh_that_hangs_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    _fake_gh(bin_dir, "exec sleep 30")
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    with pytest.raises(GitHubTokenMissing, match="did not answer"):
        resolve_token(ENV, gh_timeout=0.3)


async def test_missing_token_surfaces_from_the_first_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    client = GitHubClient.from_config(GitHubConfig(token_env=ENV))  # nothing resolved yet
    async with client:
        with pytest.raises(GitHubTokenMissing):
            await client.get_issue(REPO, 1)
