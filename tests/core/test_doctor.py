"""Doctor: what is missing, with one line of install guidance per platform."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from tests.conftest import Env


def _path_without(tmp_path: Path, *missing: str) -> str:
    """A PATH holding links to the usual tools except MISSING."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("tmux", "git", "sh", "env"):
        if tool in missing:
            continue
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def test_doctor_without_tmux_exits_1_with_install_line(loop_env: Env) -> None:
    env = loop_env.process_env()
    env["PATH"] = _path_without(loop_env.root, "tmux")
    result = loop_env.run("doctor", env=env)
    assert result.exit_code == 1
    assert "apt install tmux · brew install tmux · dnf install tmux" in result.stdout
    assert "MISSING  tmux" in result.stdout


def test_doctor_ok_when_everything_is_there(loop_env: Env) -> None:
    fake_claude = loop_env.root / "bin" / "claude"
    env = loop_env.process_env()
    env["PATH"] = _path_without(loop_env.root)
    fake_claude.write_text("#!/bin/sh\nexit 0\n")
    fake_claude.chmod(0o755)
    result = loop_env.run("doctor", "--format", "json", env=env)
    assert result.exit_code == 0, result.stdout
    report = json.loads(result.stdout)
    assert report["ok"] is True
    names = {c["name"]: c["status"] for c in report["checks"]}
    assert names["tmux"] == "ok" and names["git"] == "ok" and names["harness claude"] == "ok"
    assert names["state dir"] == "ok" and names["port"] == "ok"


def test_doctor_reports_missing_harness_and_busy_port(loop_env: Env) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        loop_env.write_config(  # a binary that is nowhere (a bare `claude` is also looked
            # for in the project's node_modules/.bin, where `make setup` installs it)
            server={"port": port},
            github={"enabled": True, "tokenEnv": "NO_SUCH_TOKEN_VAR"},
            harnesses={"claude": {"binary": str(loop_env.root / "nowhere" / "claude")}},
        )
        env = loop_env.process_env()
        env["PATH"] = _path_without(loop_env.root)
        result = loop_env.run("doctor", "--format", "json", env=env)
        table = loop_env.run("doctor", env=env).stdout
    assert result.exit_code == 1
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["harness claude"]["status"] == "missing"
    assert checks["harness claude"]["detail"] == f"{loop_env.root}/nowhere/claude not found"
    assert "npm install -g @anthropic-ai/claude-code" in checks["harness claude"]["hint"]
    assert checks["port"]["status"] == "failed"
    assert checks["github token"]["status"] == "missing"
    assert os.environ.get("NO_SUCH_TOKEN_VAR") is None
    assert "install: npm install -g @anthropic-ai/claude-code" in table
    assert "fix: stop what uses it or set server.port" in table
    assert "install: stop what uses it" not in table
    assert "fix: export NO_SUCH_TOKEN_VAR=<token>" in table


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_doctor_recognises_the_port_of_its_own_running_daemon(loop_env: Env) -> None:
    from the_loop.daemon.serve import read_info

    loop_env.write_config(server={"port": _free_port()})
    assert loop_env.run("start").exit_code == 0
    try:
        info = read_info(loop_env.state_dir)
        assert info is not None
        result = loop_env.run("doctor", "--format", "json")
        port = {c["name"]: c for c in json.loads(result.stdout)["checks"]}["port"]
        assert port["status"] == "ok", port
        assert port["detail"] == f"127.0.0.1:{info.port} in use by the-loop (pid {info.pid})"
        table = loop_env.run("doctor").stdout
        assert f"in use by the-loop (pid {info.pid})" in table and "unavailable" not in table
    finally:
        assert loop_env.run("stop").exit_code == 0
    after = {
        c["name"]: c
        for c in json.loads(loop_env.run("doctor", "--format", "json").stdout)["checks"]
    }
    assert after["port"]["status"] == "ok" and after["port"]["detail"].endswith("is free")


def test_webhook_without_a_secret_and_slack_are_warned(loop_env: Env) -> None:
    loop_env.write_config(
        github={"enabled": True, "webhook": {"secretEnv": "NO_SUCH_SECRET_VAR"}},
        slack={"enabled": True},
        routing={"authorizedUsers": ["alice"]},
    )
    env = loop_env.process_env()
    env["PATH"] = _path_without(loop_env.root)
    env["GITHUB_TOKEN"] = "t"
    secret = "github.webhook is enabled but $NO_SUCH_SECRET_VAR is unset"
    slack = "slack.enabled but $SLACK_SIGNING_SECRET is unset"
    report = json.loads(loop_env.run("doctor", "--format", "json", env=env).stdout)
    warned = [c["detail"] for c in report["checks"] if c["name"] == "config"]
    assert any(w.startswith(secret) for w in warned) and any(w.startswith(slack) for w in warned)
    assert all(c["status"] == "warning" for c in report["checks"] if c["name"] == "config")
    validate = loop_env.run("config", "validate", env=env)
    assert validate.exit_code == 0
    assert f"warning: {secret}" in validate.stdout + validate.stderr
    assert f"warning: {slack}" in validate.stdout + validate.stderr
    started = loop_env.run("start", env=env)
    try:
        assert started.exit_code == 0, started.stderr
        assert f"warning: {secret}" in started.stderr and f"warning: {slack}" in started.stderr
    finally:
        loop_env.run("stop")
    env["NO_SUCH_SECRET_VAR"] = "s3cret"
    loop_env.write_config(github={"enabled": True, "webhook": {"secretEnv": "NO_SUCH_SECRET_VAR"}})
    quiet = loop_env.run("config", "validate", env=env)
    assert "NO_SUCH_SECRET_VAR" not in quiet.stdout + quiet.stderr
    assert "Slack" not in quiet.stdout + quiet.stderr


def test_nobody_authorized_is_warned_without_saying_nobody_can_start_an_agent(
    loop_env: Env,
) -> None:
    """The embedded defaults authorize nobody on GitHub: the warning says what that closes
    (comments) and what still starts an agent, since the README's next step is a start by
    hand (it said "nobody can start an agent", and a newcomer then did)."""
    loop_env.write_config(routing={"authorizedUsers": []})
    told = loop_env.run("config", "validate")
    assert told.exit_code == 0, told.stderr
    assert (
        "warning: routing.authorizedUsers is empty: no GitHub comment can start or steer an "
        "agent (fail closed); `the-loop sessions start`, the API and the dashboard still can"
    ) in told.stdout + told.stderr
    loop_env.write_config(routing={"authorizedUsers": ["alice"]})
    assert "authorizedUsers" not in (quiet := loop_env.run("config", "validate")).stderr
    assert "authorizedUsers" not in quiet.stdout


def _fake_tmux(tmp_path: Path, script: str) -> str:
    binary = tmp_path / "old-tmux"
    binary.write_text(f"#!/bin/sh\n{script}\n")
    binary.chmod(0o755)
    return str(binary)


def test_doctor_asks_the_tmux_doorway_for_the_version(tmp_path: Path) -> None:
    from the_loop.config import Config
    from the_loop.runner.tmux import TmuxRunner
    from the_loop.views.doctor import run_doctor

    config = Config.model_validate({"stateDir": str(tmp_path / "state"), "server": {"port": 0}})
    old = TmuxRunner("doctor-test", binary=_fake_tmux(tmp_path, 'echo "tmux 3.1"'))
    check = {c.name: c for c in run_doctor(config, tmux=old).checks}["tmux"]
    assert check.status == "failed" and check.detail == "tmux 3.1 is older than 3.2"
    broken = TmuxRunner("doctor-test", binary=_fake_tmux(tmp_path, "echo boom >&2; exit 3"))
    check = {c.name: c for c in run_doctor(config, tmux=broken).checks}["tmux"]
    assert check.status == "failed" and check.detail.endswith("-V failed: tmux error: boom")
    good = TmuxRunner("doctor-test", binary=_fake_tmux(tmp_path, 'echo "tmux 3.4"'))
    check = {c.name: c for c in run_doctor(config, tmux=good).checks}["tmux"]
    assert check.status == "ok" and check.detail.startswith("tmux 3.4 (")


def test_doctor_says_when_gemini_has_no_sign_in_chosen(loop_env: Env, tmp_path: Path) -> None:
    """With a key but no sign-in chosen in its settings, Gemini asks how to sign in before
    anything else and its agents are blocked (decision 0078): doctor says so, and how to fix
    it; once a sign-in is chosen, the check is ok."""
    home = tmp_path / "operator"
    (home / ".gemini").mkdir(parents=True)
    env = {"HOME": str(home), "GEMINI_API_KEY": "a-key"}
    loop_env.write_config(harnesses={"gemini": {"env": env}}, routing={"defaultHarness": "gemini"})

    def sign_in() -> dict[str, str]:
        report = json.loads(loop_env.run("doctor", "--format", "json").stdout)
        return next(c for c in report["checks"] if c["name"] == "harness gemini sign-in")

    missing = sign_in()
    assert missing["status"] == "warning" and "no sign-in chosen" in missing["detail"], missing
    assert "run `gemini` once" in missing["hint"]
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    chosen = sign_in()
    assert chosen["status"] == "ok" and chosen["detail"].startswith("gemini-api-key"), chosen


def test_doctor_takes_a_codex_provider_of_its_own_for_a_login(
    loop_env: Env, tmp_path: Path
) -> None:
    """A Codex whose ``config.toml`` chooses a model provider of its own needs no OpenAI
    login: doctor checks the key that provider reads instead (its ``env_key``)."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model_provider = "local"\n[model_providers.local]\nname = "local"\n'
        'base_url = "http://127.0.0.1:9/v1"\nenv_key = "LOCAL_MODEL_KEY"\n',
        encoding="utf-8",
    )
    env = {"CODEX_HOME": str(home), "HOME": str(tmp_path)}
    loop_env.write_config(harnesses={"codex": {"env": env}}, routing={"defaultHarness": "codex"})

    def login() -> dict[str, str]:
        report = json.loads(loop_env.run("doctor", "--format", "json").stdout)
        return next(c for c in report["checks"] if c["name"] == "harness codex login")

    missing = login()
    assert missing["status"] == "warning", missing
    assert (
        missing["detail"]
        == "model provider local reads its key from LOCAL_MODEL_KEY, which is not set"
    )
    env["LOCAL_MODEL_KEY"] = "a-key"
    loop_env.write_config(harnesses={"codex": {"env": env}}, routing={"defaultHarness": "codex"})
    found = login()
    assert found["status"] == "ok", found
    assert found["detail"] == "model provider local of its own config.toml, LOCAL_MODEL_KEY is set"
