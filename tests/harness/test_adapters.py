"""Adapter contracts: argv per launch kind, id safety, runner support, the registry."""

from __future__ import annotations

import json
import tomllib
import uuid
from pathlib import Path

import pytest

from the_loop.config import HarnessConfig
from the_loop.errors import BadInput, Conflict, UnsupportedRunner
from the_loop.harness import (
    HarnessAdapter,
    LaunchKind,
    LaunchSpec,
    build_adapter,
    command,
    get_adapter,
    register_adapter,
    registered_adapters,
)
from the_loop.harness.base import options_before_separator
from the_loop.harness.claude import project_slug
from the_loop.harness.claude_hooks import settings_argv
from the_loop.harness.codex_notify import notify_args
from the_loop.runner.tmux_core import paste_command

U = str(uuid.UUID(int=42))
CWD = Path("/work/space")
HOSTILE_ID = "--dangerously-skip-permissions"


def spec(session_id: str | None = U, prompt: str | None = "fix it") -> LaunchSpec:
    return LaunchSpec(CWD, session_id, prompt)


def test_builtins_register_through_the_public_door() -> None:
    assert {"claude", "codex", "gemini", "cursor", "command"} <= set(registered_adapters())
    for name in ("claude", "codex", "gemini", "cursor"):
        assert build_adapter(name).adapter_name == name
    with pytest.raises(BadInput, match="unknown harness adapter"):
        get_adapter("nope")


def test_a_custom_adapter_registers_like_a_builtin() -> None:
    class EchoAdapter(HarnessAdapter):
        default_binary = "echo-agent"
        default_args = ("--quiet",)

        def _argv(
            self, kind: LaunchKind, session_id: str | None, prompt: str | None, spec: LaunchSpec
        ) -> list[str]:
            return [self.binary, *self.args, str(session_id), "--", str(prompt)]

    register_adapter("echo-test", EchoAdapter)
    with pytest.raises(Conflict):
        register_adapter("echo-test", type("Other", (EchoAdapter,), {}))
    with pytest.raises(BadInput):
        register_adapter("Bad Name", EchoAdapter)
    default = build_adapter("mine", HarnessConfig(adapter="echo-test"))
    assert default.interactive(spec()).argv == ("echo-agent", "--quiet", U, "--", "fix it")
    none = build_adapter("mine", HarnessConfig(adapter="echo-test", args=[]))
    assert none.interactive(spec()).argv == ("echo-agent", U, "--", "fix it")


def test_claude_argv() -> None:
    config = HarnessConfig(
        binary="/opt/claude",
        args=["--permission-mode", "acceptEdits"],
        model="opus",
        env={"A": "1"},
    )
    claude = build_adapter("claude", config)
    launch = claude.interactive(spec())
    assert launch.argv == (
        "/opt/claude",
        "--session-id",
        U,
        *settings_argv(),
        "--model",
        "opus",
        "--permission-mode",
        "acceptEdits",
        "--",
        "fix it",
    )
    settings = json.loads(settings_argv()[1])  # no recap asked of the model when a viewer
    assert settings["awaySummaryEnabled"] is False and settings["hooks"]  # comes and goes
    assert launch.env == {"A": "1"} and launch.chooses_session_id and launch.prompt_in_argv
    assert launch.ready_pattern and launch.session_id == U
    resume = claude.resume_interactive(spec(prompt=None))
    assert resume.argv == (
        "/opt/claude",
        "--resume",
        U,
        *settings_argv(),
        "--model",
        "opus",
        "--permission-mode",
        "acceptEdits",
    )
    headless = claude.headless(spec())
    assert headless.argv[:7] == (
        "/opt/claude",
        "-p",
        "--session-id",
        U,
        "--output-format",
        "stream-json",
        "--verbose",
    )
    assert headless.argv[-2:] == ("--", "fix it") and headless.output_format == "stream-json"
    assert claude.headless_resume(spec()).argv[1:4] == ("-p", "--resume", U)
    with pytest.raises(BadInput, match="UUID"):
        claude.interactive(spec(session_id="not-a-uuid"))


@pytest.mark.parametrize(
    ("harness", "mode", "flags"),
    [
        ("claude", None, ("--permission-mode", "default")),
        ("claude", "auto", ("--permission-mode", "acceptEdits")),
        ("claude", "bypass", ("--permission-mode", "bypassPermissions")),
        ("codex", None, ("--ask-for-approval", "on-request")),
        ("codex", "bypass", ("--dangerously-bypass-approvals-and-sandbox",)),
        ("gemini", None, ("--approval-mode", "default")),
        ("gemini", "auto", ("--approval-mode", "auto_edit")),
    ],
)
def test_every_built_in_asks_before_tools_unless_configured(
    harness: str, mode: str | None, flags: tuple[str, ...]
) -> None:
    config = HarnessConfig() if mode is None else HarnessConfig(permissionMode=mode)
    argv = build_adapter(harness, config).interactive(spec()).argv
    at = argv.index(flags[0])
    assert argv[at : at + len(flags)] == flags
    assert (
        sum(a.startswith(("--permission-mode", "--approval-mode", "--ask-for")) for a in argv) <= 1
    )


def test_the_operators_own_permission_flag_wins() -> None:
    config = HarnessConfig(args=["--permission-mode=plan"])
    argv = build_adapter("claude", config).interactive(spec()).argv
    assert "--permission-mode=plan" in argv and "default" not in argv


def test_codex_argv_always_avoids_daemons() -> None:
    codex = build_adapter("codex", HarnessConfig(model="o3"))
    launch = codex.interactive(spec(session_id=None))
    notify = tuple(notify_args(codex.env))
    assert launch.argv == (
        "codex",
        "--no-alt-screen",
        "--no-daemon",
        *notify,
        "--ask-for-approval",
        "on-request",
        "--model",
        "o3",
        "--",
        "fix it",
    )
    assert not launch.chooses_session_id and launch.session_id is None
    assert codex.resume_interactive(spec("th-1", None)).argv == (
        "codex",
        "resume",
        "--no-alt-screen",
        "--no-daemon",
        *notify,
        "--ask-for-approval",
        "on-request",
        "--model",
        "o3",
        "--",
        "th-1",
    )
    assert codex.headless(spec(None)).argv == (
        "codex",
        "exec",
        "--json",
        "--model",
        "o3",
        "--",
        "fix it",
    )
    assert codex.headless_resume(spec("th-1")).argv == (
        "codex",
        "exec",
        "--json",
        "--model",
        "o3",
        "resume",
        "--",
        "th-1",
        "fix it",
    )
    output = '{"type":"other"}\n{"type":"thread.started","thread_id":"0199a-b"}\n'
    assert codex.session_id_from_output(output) == "0199a-b"
    assert codex.session_id_from_output('{"type":"thread.started","thread_id":"-x"}') is None


def test_gemini_argv_glues_the_prompt_to_its_option() -> None:
    gemini = build_adapter("gemini")
    assert gemini.interactive(spec(prompt="--version")).argv == (
        "gemini",
        "--session-id",
        U,
        "--skip-trust",
        "--approval-mode",
        "default",
        "--prompt-interactive=--version",
    )
    assert gemini.resume_interactive(spec(prompt=None)).argv == (
        "gemini",
        "--resume",
        U,
        "--skip-trust",
        "--approval-mode",
        "default",
    )
    assert gemini.headless(spec()).argv == (
        "gemini",
        "--session-id",
        U,
        "--skip-trust",
        "--output-format",
        "stream-json",
        "--approval-mode",
        "default",
        "--prompt=fix it",
    )


def test_cursor_is_headless_only() -> None:
    cursor = build_adapter("cursor")
    with pytest.raises(UnsupportedRunner, match="process runner"):
        cursor.check_runner("tmux")
    with pytest.raises(UnsupportedRunner, match="process runner"):
        cursor.interactive(spec(None))
    cursor.check_runner("process")
    assert cursor.headless(spec(None)).argv == (
        "cursor-agent",
        "-p",
        "--output-format",
        "json",
        "--",
        "fix it",
    )
    assert cursor.headless_resume(spec("c-1")).argv == (
        "cursor-agent",
        "-p",
        "--output-format",
        "json",
        "--resume",
        "c-1",
        "--",
        "fix it",
    )
    assert cursor.session_id_from_output('{"type":"result","session_id":"c-9"}') == "c-9"


@pytest.mark.parametrize("name", ["claude", "codex", "gemini", "cursor", "command"])
def test_a_recorded_flag_never_reaches_an_argv(name: str) -> None:
    config = HarnessConfig(
        adapter="command",
        interactive=["agent", "{session_id}"],
        resume=["agent", "--resume", "{session_id}"],
        headless=["agent", "{session_id}", "{prompt}"],
    )
    adapter = build_adapter(name, config if name == "command" else None)
    kinds = [LaunchKind.HEADLESS_RESUME]
    if adapter.supports_interactive:
        kinds.append(LaunchKind.RESUME)
    if adapter.chooses_session_id:
        kinds += [LaunchKind.HEADLESS] + (
            [LaunchKind.INTERACTIVE] if adapter.supports_interactive else []
        )
    for kind in kinds:
        for hostile in (HOSTILE_ID, "-r", "a b", "x/../y", ""):
            with pytest.raises(BadInput):
                adapter.launch(kind, spec(session_id=hostile))


@pytest.mark.parametrize("name", ["claude", "codex", "cursor"])
def test_a_prompt_that_looks_like_a_flag_stays_a_prompt(name: str) -> None:
    adapter = build_adapter(name)
    launch = adapter.headless(spec(U if adapter.chooses_session_id else None, HOSTILE_ID))
    assert HOSTILE_ID not in options_before_separator(launch.argv)
    assert launch.argv[-2:] == ("--", HOSTILE_ID)


def test_resume_needs_an_id() -> None:
    with pytest.raises(BadInput, match="session id"):
        build_adapter("claude").resume_interactive(spec(session_id=None))
    with pytest.raises(BadInput, match="needs a prompt"):
        build_adapter("claude").headless(spec(prompt=None))


def test_command_templates() -> None:
    config = HarnessConfig(
        adapter="command",
        args=["--fast"],
        interactive=["aider", "--id={session_id}", "--", "{prompt}"],
        resume=["aider", "--resume", "{session_id}", "{prompt}"],
        headless=["aider", "--file", "{prompt_file}"],
    )
    adapter = build_adapter("aider", config)
    assert adapter.supports_interactive and adapter.wants_prompt_file
    assert adapter.interactive(spec()).prompt_in_argv
    assert adapter.launch(LaunchKind.HEADLESS, LaunchSpec(CWD, U, "p", Path("/f"))).prompt_in_argv
    stdin_only = build_adapter("batch", HarnessConfig(adapter="command", headless=["b", "-q"]))
    assert not stdin_only.headless(spec(prompt="p")).prompt_in_argv
    tricky = "use {session_id} and {prompt_file} literally"
    assert adapter.interactive(spec(prompt=tricky)).argv == (
        "aider",
        "--fast",
        f"--id={U}",
        "--",
        tricky,
    )
    assert adapter.resume_interactive(spec(prompt=None)).argv == ("aider", "--fast", "--resume", U)
    with pytest.raises(BadInput, match="prompt_file"):
        adapter.headless(spec())
    launch = adapter.headless(LaunchSpec(CWD, U, "p", Path("/tmp/p.txt")))
    assert launch.argv == ("aider", "--fast", "--file", "/tmp/p.txt")


def test_command_without_interactive_template_is_refused_under_tmux() -> None:
    adapter = build_adapter("batch", HarnessConfig(adapter="command", headless=["b", "{prompt}"]))
    assert not adapter.supports_interactive
    with pytest.raises(UnsupportedRunner, match="process runner"):
        adapter.check_runner("tmux")
    only_tui = build_adapter("tui", HarnessConfig(adapter="command", interactive=["t"]))
    with pytest.raises(UnsupportedRunner, match="tmux runner"):
        only_tui.headless(spec())


def test_an_interactive_launch_leaves_out_every_element_holding_a_prompt() -> None:
    config = HarnessConfig(
        adapter="command",
        interactive=["tui", "--id={session_id}", "--message={prompt}", "--in", "{prompt_file}"],
    )
    launch = build_adapter("tui", config).interactive(spec(prompt=None))
    assert launch.argv == ("tui", f"--id={U}", "--in") and not launch.prompt_in_argv


def test_explain_says_what_each_template_placeholder_gets() -> None:
    config = HarnessConfig(
        adapter="command",
        interactive=["tui", "--session", "{session_id}", "--message", "{prompt}"],
        resume=["tui", "--resume", "{session_id}"],
        headless=["batch", "--quiet"],
    )
    lines = command.explain("tui", config)
    interactive, warning, resume, headless = lines
    assert interactive.startswith("harnesses.tui.interactive: {session_id} is the id")
    assert "pasted once the agent takes input" in interactive and "left out" in interactive
    assert warning.startswith("warning: harnesses.tui.interactive: '--message'")
    assert resume.startswith("harnesses.tui.resume: {session_id}") and "left out" not in resume
    assert headless == (
        "harnesses.tui.headless: no {prompt} or {prompt_file}: the prompt is written to its "
        "standard input"
    )
    assert set(command.PLACEHOLDERS) == {"{prompt}", "{session_id}", "{prompt_file}"}


def test_only_gemini_waits_between_a_paste_and_its_enter() -> None:
    gaps = {name: build_adapter(name).submit_gap for name in ("claude", "codex", "gemini")}
    assert gaps["claude"] == gaps["codex"] == 0 and gaps["gemini"] >= 0.5
    waits = " ".join(paste_command("loop-x", "b", Path("/p"), gaps["gemini"]))
    assert "paste-buffer -p -d -b b -t =loop-x: ; run-shell 'sleep 1.000' ; paste-buffer" in waits
    assert "run-shell" not in " ".join(paste_command("loop-x", "b", Path("/p")))


def test_codex_notify_runs_the_hook_then_the_operators_own_program(tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text('notify = ["notify-send", "codex"]\n', encoding="utf-8")
    codex = build_adapter("codex", HarnessConfig(env={"CODEX_HOME": str(home)}))
    argv = codex.interactive(spec(session_id=None)).argv
    index = argv.index("-c")
    key, _, value = argv[index + 1].partition("=")
    program = tomllib.loads(f"v = {value}")["v"]
    assert key == "notify" and program[1:3] == ["-I", "-S"]
    assert program[-3:] == ["codex-notify", "notify-send", "codex"]
    assert "from the_loop.hook import main" in program[4]


def test_an_operators_notify_override_in_args_is_left_alone() -> None:
    mine = "notify=['my-notifier']"
    codex = build_adapter("codex", HarnessConfig(args=["-c", mine]))
    argv = codex.interactive(spec(session_id=None)).argv
    assert argv.count("-c") == 1 and mine in argv
    assert not any("attention_hook" in a for a in argv)


def test_claude_codes_transcript_is_under_its_folder_not_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file another node's transcript is restored to (``conversation_file``) is where
    Claude Code reads it: ``~/.claude/projects/…`` by default (it was ``~/projects/…``: the
    folder of ``.claude.json``), ``$CLAUDE_CONFIG_DIR/projects/…`` when set, the harness's own
    environment before the daemon's."""
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    home = tmp_path / "home"

    def transcript(**env: str) -> Path | None:
        adapter = build_adapter("claude", HarnessConfig(env={"HOME": str(home), **env}))
        return adapter.conversation_file(adapter.interactive(spec()))

    slug = project_slug(CWD)
    assert transcript() == home / ".claude" / "projects" / slug / f"{U}.jsonl"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "daemons"))
    assert transcript() == tmp_path / "daemons" / "projects" / slug / f"{U}.jsonl"
    own = tmp_path / "own"
    assert transcript(CLAUDE_CONFIG_DIR=str(own)) == own / "projects" / slug / f"{U}.jsonl"
