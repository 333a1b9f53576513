"""Config: every error kind reported with its key path and exit 2; secrets never shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Env
from the_loop.config import Config, config_schema, load_config, parse_config_text
from the_loop.errors import ConfigInvalid

ERROR_CASES = [
    ("routing:\n  bogus: 1\n", "routing.bogus: unknown key (line 2)"),
    ("server:\n  port: lots\n", "server.port: Input should be a valid integer"),
    ("server:\n  port: 70000\n", "server.port: Input should be less than or equal to 65535"),
    ("routing:\n  runner: docker\n", "routing.runner: Input should be 'tmux' or 'process'"),
    ("tmux:\n  windowSize: big\n", "tmux.windowSize: 'big' is not COLSxROWS"),
    ("standing:\n  sessions:\n  - name: Bad_Name\n", "standing.sessions[0].name: invalid"),
    (
        "standing:\n  sessions:\n  - name: a\n  - name: a\n",
        "duplicate standing session name 'a' at sessions[0] and sessions[1]",
    ),
    (
        "standing:\n  sessions:\n  - name: a\n    prompt: x\n    promptFile: y\n",
        "standing.sessions[0].promptFile: give prompt or promptFile, not both (line 5)",
    ),
    ("github:\n  repos: [not-a-repo]\n", "github.repos[0]: 'not-a-repo' is not OWNER/REPO"),
    ("server:\n  tokenEnv: 'has space'\n", "server.tokenEnv: 'has space' is not an environment"),
    ("routing:\n  defaultHarness: nope\n", "routing.defaultHarness: 'nope' is not a known harness"),
    ("harnesses:\n  aider: {}\n", "harnesses: Value error" if False else "set adapter"),
    ("version: 2\n", "version: Input should be 1"),
    ("routing: [\n", "(yaml): "),
    ("- a\n- b\n", "(root): the config must be a mapping"),
]


@pytest.mark.parametrize(("text", "expected"), ERROR_CASES)
def test_each_error_kind_is_reported_with_its_key_path(text: str, expected: str) -> None:
    with pytest.raises(ConfigInvalid) as info:
        parse_config_text(text)
    assert any(expected in p for p in info.value.problems), info.value.problems


def test_every_error_is_listed_not_only_the_first() -> None:
    with pytest.raises(ConfigInvalid) as info:
        parse_config_text("server:\n  port: x\n  nope: 1\ntmux:\n  socket: 'a b'\nextra: 1\n")
    paths = sorted(p.split(":")[0] for p in info.value.problems)
    assert paths == ["extra", "server.nope", "server.port", "tmux.socket"]


def test_yaml_syntax_error_names_the_line() -> None:
    with pytest.raises(ConfigInvalid) as info:
        parse_config_text("server:\n  port: 1\n  host: [unclosed\nrouting: {}\n")
    assert "(line " in info.value.problems[0]


def test_validate_cli_exits_2_listing_each_problem(loop_env: Env) -> None:
    bad = loop_env.root / "bad.yaml"
    bad.write_text("routing:\n  bogus: 1\nserver:\n  port: -1\n", encoding="utf-8")
    result = loop_env.run("config", "validate", str(bad))
    assert result.exit_code == 2
    assert "error:" in result.stderr
    assert "routing.bogus: unknown key" in result.stderr
    assert "server.port: Input should be greater than or equal to 0" in result.stderr
    assert "Traceback" not in result.stderr


def test_validate_cli_ok_and_missing_file(cli) -> None:
    ok = cli("config", "validate")
    assert ok.exit_code == 0 and "is valid" in ok.stdout
    missing = cli("config", "validate", "/nonexistent/x.yaml")
    assert missing.exit_code == 2 and "does not exist" in missing.stderr


def test_defaults_when_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("THE_LOOP_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    loaded = load_config()
    assert loaded.path is None
    assert loaded.config.server.port == 8420
    assert loaded.config.tmux.socket == "the-loop"
    assert loaded.config.github.webhook.events[0] == "issues"
    assert loaded.config.routing.authorized_users == []


def test_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    home_cfg = tmp_path / ".config" / "the-loop" / "config.yaml"
    home_cfg.parent.mkdir(parents=True)
    home_cfg.write_text("server: {port: 1}\n")
    monkeypatch.delenv("THE_LOOP_CONFIG", raising=False)
    assert load_config().config.server.port == 1
    (tmp_path / "the-loop.yaml").write_text("server: {port: 2}\n")
    assert load_config().config.server.port == 2
    env_cfg = tmp_path / "env.yaml"
    env_cfg.write_text("server: {port: 3}\n")
    monkeypatch.setenv("THE_LOOP_CONFIG", str(env_cfg))
    assert load_config().config.server.port == 3
    explicit = tmp_path / "explicit.yaml"
    explicit.write_text("server: {port: 4}\n")
    assert load_config(explicit).config.server.port == 4


def test_show_never_prints_a_secret(loop_env: Env) -> None:
    secret = "s3cr3t-value-9f8e7d"
    loop_env.write_config(
        server={"tokenEnv": "MY_LOOP_TOKEN"},
        github={"tokenEnv": "MY_GH_TOKEN"},
        harnesses={"claude": {"env": {"ANTHROPIC_API_KEY": secret, "PLAIN": "visible"}}},
    )
    env = loop_env.process_env()
    env["MY_LOOP_TOKEN"] = secret
    env["MY_GH_TOKEN"] = secret
    for fmt in ("table", "json"):
        result = loop_env.run("config", "show", "--format", fmt, env=env)
        assert result.exit_code == 0, result.stderr
        assert secret not in result.stdout + result.stderr
        assert "visible" in result.stdout
        assert "(set)" not in result.stdout
    table = loop_env.run("config", "show", env=env).stdout
    assert "  tokenEnv: MY_LOOP_TOKEN  # set" in table
    assert "  readOnlyTokenEnv: THE_LOOP_READONLY_TOKEN  # unset" in table
    assert "ANTHROPIC_API_KEY:\n        redacted: true" in table


def test_show_json_prints_the_real_values_with_camel_case_keys(loop_env: Env) -> None:
    secret = "s3cr3t-value-9f8e7d"
    loop_env.write_config(
        server={"tokenEnv": "MY_LOOP_TOKEN"},
        harnesses={"claude": {"env": {"ANTHROPIC_API_KEY": secret, "PLAIN": "visible"}}},
        routing={"authorizedUsers": ["alice"], "maxConcurrentSessions": 3},
    )
    env = loop_env.process_env()
    env["MY_LOOP_TOKEN"] = secret
    result = loop_env.run("config", "show", "--format", "json", env=env)
    assert result.exit_code == 0, result.stderr
    assert secret not in result.stdout
    data = json.loads(result.stdout)
    assert data["server"]["tokenEnv"] == "MY_LOOP_TOKEN"
    assert data["server"]["readOnlyTokenEnv"] == "THE_LOOP_READONLY_TOKEN"
    assert data["github"]["webhook"]["secretEnv"] == "THE_LOOP_WEBHOOK_SECRET"
    assert data["harnesses"]["claude"]["env"] == {
        "ANTHROPIC_API_KEY": {"redacted": True},
        "PLAIN": "visible",
    }
    assert data["routing"]["authorizedUsers"] == ["alice"]
    assert data["routing"]["maxConcurrentSessions"] == 3
    assert data["stateDir"] == str(loop_env.state_dir)
    assert data["tmux"]["windowSize"] == "200x50"
    # what it prints is the config itself: it validates as one
    data["harnesses"]["claude"]["env"]["ANTHROPIC_API_KEY"] = "x"
    assert Config.model_validate(data).routing.max_concurrent_sessions == 3


def test_init_writes_a_valid_starter_and_refuses_to_overwrite(cli, loop_env: Env) -> None:
    target = loop_env.root / "new" / "the-loop.yaml"
    first = cli("init", str(target))
    assert first.exit_code == 0, first.stderr
    text = target.read_text()
    assert text.lstrip().startswith("#")
    assert isinstance(parse_config_text(text), Config)
    target.write_text("# mine\n")
    second = cli("init", str(target))
    assert second.exit_code == 2
    assert "already exists" in second.stderr
    assert target.read_text() == "# mine\n"


def test_schema_is_generated_and_committed(cli) -> None:
    result = cli("config", "schema")
    assert result.exit_code == 0
    served = json.loads(result.stdout)
    assert served == config_schema()
    committed = json.loads(
        (Path(__file__).resolve().parents[2] / "docs" / "config.schema.json").read_text()
    )
    assert committed == served, "docs/config.schema.json is stale: run `make docs`"
    assert "routing" in served["properties"]


def test_unknown_keys_get_the_closest_known_key() -> None:
    with pytest.raises(ConfigInvalid) as info:
        parse_config_text("server:\n  prot: 1\nstatedir: /x\ngithub:\n  webhook:\n    evnts: []\n")
    assert info.value.message == "<config> is invalid (3 problems)"
    assert info.value.problems == [
        "server.prot: unknown key; did you mean 'port'? (line 2)",
        "statedir: unknown key; did you mean 'stateDir'? (line 3)",
        "github.webhook.evnts: unknown key; did you mean 'events'? (line 6)",
    ]


def test_one_problem_is_one_problem() -> None:
    with pytest.raises(ConfigInvalid) as info:
        parse_config_text("server:\n  port: x\n")
    assert info.value.message == "<config> is invalid (1 problem)"
    assert len(info.value.problems) == 1


SEMANTIC_LINES = [
    (
        "server:\n  port: 1\nrouting:\n  label: x\n  defaultHarness: nope\n",
        "routing.defaultHarness: 'nope' is not a known harness",
        5,
    ),
    (
        "standing:\n  sessions:\n  - name: a\n  - name: b\n    harness: zz\n",
        "standing.sessions[1].harness: 'zz' is not a known harness",
        5,
    ),
    (
        "standing:\n  sessions:\n  - name: a\n  - name: b\n  - name: a\n",
        "standing.sessions[2].name: duplicate standing session name 'a'",
        5,
    ),
    ("routing:\n  keywords:\n    start: go\n    stop: go\n", "routing.keywords.stop:", 4),
    ("server: {}\nharnesses:\n  claude: {}\n  aider: {}\n", "harnesses.aider:", 4),
]


@pytest.mark.parametrize(("text", "expected", "line"), SEMANTIC_LINES)
def test_a_semantic_error_points_at_its_own_line(text: str, expected: str, line: int) -> None:
    with pytest.raises(ConfigInvalid) as info:
        parse_config_text(text)
    [problem] = info.value.problems
    assert problem.startswith(expected), problem
    assert problem.endswith(f"(line {line})"), problem


def test_a_value_that_fits_no_branch_of_a_union_is_one_problem() -> None:
    with pytest.raises(ConfigInvalid) as info:
        parse_config_text("workspaces:\n  repos:\n    5: [1]\n")
    assert len(info.value.problems) == 1, info.value.problems


def test_an_unterminated_quote_is_reported_where_it_opens() -> None:
    text = "server:\n  port: 1\nrouting:\n  label: x\n  botLogin: y\n  enabled: true\n"
    text += "  defaultHarness: 'claude\n"
    with pytest.raises(ConfigInvalid) as info:
        parse_config_text(text)
    [problem] = info.value.problems
    assert "quoted scalar" in problem and "(line 7;" in problem, problem


def test_validate_cli_names_the_yaml_line_where_the_construct_starts(loop_env: Env) -> None:
    bad = loop_env.root / "bad.yaml"
    bad.write_text("a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: 6\ng: 'open\n", encoding="utf-8")
    result = loop_env.run("config", "validate", str(bad))
    assert result.exit_code == 2
    assert "(line 7;" in result.stderr, result.stderr
    flow = loop_env.root / "flow.yaml"
    flow.write_text("server:\n  port: 1\n  host: [unclosed\nrouting: {}\n", encoding="utf-8")
    result = loop_env.run("config", "validate", str(flow))
    assert result.exit_code == 2
    assert "flow sequence" in result.stderr and "(line 3;" in result.stderr, result.stderr


def test_a_harness_added_to_attention_keeps_the_built_in_ones() -> None:
    """Listing one harness under ``attention.harnesses`` used to replace the whole built-in
    table: Claude Code lost its hooks (read from the screen instead) and Codex and Gemini their
    dialog patterns, so a message delivered into their dialogs answered them."""
    config = parse_config_text(
        "attention:\n"
        "  harnesses:\n"
        "    mytool: {permissionPatterns: ['Allow\\?']}\n"
        "    codex: {denyKeys: [n]}\n"
        "    gemini: {permission_patterns: []}\n"
    )
    harnesses = config.attention.harnesses
    assert harnesses["claude"].signals == "hooks"
    assert harnesses["codex"].signals == "notify" and harnesses["codex"].permission_patterns
    assert harnesses["codex"].deny_keys == ["n"]  # what is set wins
    assert harnesses["gemini"].permission_patterns == [] and harnesses["gemini"].allow_keys == ["1"]
    assert harnesses["mytool"].permission_patterns == ["Allow\\?"]


def test_a_harness_named_otherwise_reads_its_attention_as_its_adapter_does() -> None:
    """A harness configured under a name of its own (``claude-fast: {adapter: claude}``) has
    Claude Code's hooks and dialog patterns wherever an agent's attention is read; an entry of
    its own under ``attention.harnesses`` wins."""
    config = parse_config_text(
        "harnesses:\n"
        "  claude-fast: {adapter: claude, args: ['--model', 'haiku']}\n"
        "  codex-own: {adapter: codex}\n"
        "attention:\n"
        "  harnesses:\n"
        "    codex-own: {signals: screen}\n"
    )
    fast = config.attention_of("claude-fast")
    assert (
        fast.signals == "hooks"
        and fast.waiting_patterns == config.attention_of("claude").waiting_patterns
    )
    assert config.attention_of("codex-own").signals == "screen"
    assert config.attention_of("unknown").signals == "screen"  # read from the screen
