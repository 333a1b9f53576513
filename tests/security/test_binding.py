"""Binding is what it says: only real loopback addresses count as loopback, and off loopback
every configured token must be at least 32 characters (issue 12 item 6, SPEC §11)."""

from __future__ import annotations

import pytest

from tests.conftest import Env
from the_loop.context import open_ctx
from the_loop.errors import BadInput
from the_loop.web.auth import MIN_TOKEN_LENGTH, check_bind, is_loopback

pytestmark = pytest.mark.security

LONG = "t" * MIN_TOKEN_LENGTH


@pytest.mark.parametrize("host", ["", "0.0.0.0", "::", "192.0.2.1", "localhost.example"])
def test_wildcard_and_foreign_hosts_are_not_loopback(host: str) -> None:
    assert not is_loopback(host)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.9.8.7", "::1", "[::1]"])
def test_real_loopback_hosts_are_loopback(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("command", ["serve", "start"])
def test_empty_host_without_a_token_is_refused(loop_env: Env, command: str) -> None:
    loop_env.write_config(server={"host": "", "port": 0})
    result = loop_env.run(command, timeout=30)
    assert result.exit_code != 0
    assert result.stderr.startswith("error: "), result.stderr
    assert "without a token" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (loop_env.state_dir / "daemon.json").exists()


@pytest.mark.parametrize("command", ["serve", "start"])
@pytest.mark.parametrize("which", ["THE_LOOP_TOKEN", "THE_LOOP_READONLY_TOKEN"])
def test_short_token_off_loopback_is_refused(loop_env: Env, command: str, which: str) -> None:
    loop_env.write_config(server={"host": "0.0.0.0", "port": 0})
    env = loop_env.process_env()
    env["THE_LOOP_TOKEN"] = LONG
    env[which] = "x"
    result = loop_env.run(command, env=env, timeout=30)
    assert result.exit_code != 0
    assert result.stderr.startswith("error: "), result.stderr
    assert f"${which} is 1 characters" in result.stderr
    assert f"at least {MIN_TOKEN_LENGTH}" in result.stderr
    assert "Traceback" not in result.stderr


def test_long_tokens_off_loopback_pass_the_check(
    loop_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_env.write_config(server={"host": "0.0.0.0", "port": 0})
    monkeypatch.setenv("THE_LOOP_TOKEN", LONG)
    monkeypatch.setenv("THE_LOOP_READONLY_TOKEN", "r" * MIN_TOKEN_LENGTH)
    ctx = open_ctx(loop_env.config_path)
    check_bind(ctx)  # no refusal
    monkeypatch.setenv("THE_LOOP_TOKEN", LONG[:-1])
    with pytest.raises(BadInput, match="at least 32"):
        check_bind(ctx)


def test_short_token_on_loopback_is_allowed(loop_env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    loop_env.write_config(server={"host": "127.0.0.1", "port": 0})
    monkeypatch.setenv("THE_LOOP_TOKEN", "x")
    check_bind(open_ctx(loop_env.config_path))
