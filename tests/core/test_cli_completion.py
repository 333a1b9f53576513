"""Shell completion works (issue 30.4): a real bash loads `the-loop completion bash`, and its
completion function, run as bash runs it on TAB, completes commands, subcommands and option
values from the installed CLI; `--install-completion` adds one line to the rc file, once."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Env
from tests.core.test_cli import CLI


def _complete(env: dict[str, str], words: list[str]) -> list[str]:
    """What bash offers after WORDS (the last one being typed), through the loaded script."""
    line = " ".join(words)
    script = (
        f'eval "$({CLI} completion bash)"\n'
        f"COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}\n"
        f'[ -z "{words[-1]}" ] && COMP_WORDS+=("")\n'
        "_the_loop_completion the-loop  # as bash calls it: the command's name first\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**env, "PATH": f"{Path(CLI).parent}:{env.get('PATH', '')}"}
    out = subprocess.run(
        ["bash", "--norc", "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return [w for w in out.stdout.splitlines() if w]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_bash_completes_commands_subcommands_and_values(loop_env: Env) -> None:
    env = loop_env.process_env()
    assert _complete(env, ["the-loop", "sess"]) == ["sessions"]
    assert _complete(env, ["the-loop", "sessions", "l"]) == ["list", "logs"]
    assert _complete(env, ["the-loop", "events", "--format", ""]) == ["table", "json", "jsonl"]
    assert "--keep-standing" in _complete(env, ["the-loop", "stop", "--"])


def test_every_shell_gets_a_script_and_an_unknown_one_a_plain_error(loop_env: Env) -> None:
    for shell in ("bash", "zsh", "fish"):
        shown = loop_env.run("completion", shell)
        assert shown.exit_code == 0 and "_THE_LOOP_COMPLETE" in shown.stdout, shell
    env = {**loop_env.process_env(), "SHELL": "/bin/zsh"}
    assert loop_env.run("--show-completion", env=env).stdout.startswith("#compdef the-loop")
    bad = loop_env.run("completion", "tcsh")
    assert bad.exit_code == 2 and bad.stderr.startswith("error: shell must be bash, zsh or fish")


def test_install_completion_adds_one_line_once(loop_env: Env) -> None:
    env = {**loop_env.process_env(), "SHELL": "/bin/bash"}
    rc = loop_env.root / "home" / ".bashrc"
    rc.write_text("alias ll='ls -l'")
    for _ in range(2):
        done = loop_env.run("--install-completion", env=env)
        assert done.exit_code == 0, done.stderr
    assert rc.read_text() == "alias ll='ls -l'\neval \"$(the-loop completion bash)\"\n"
