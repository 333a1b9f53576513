"""The typed configuration model: validation, defaults, JSON Schema and docs in one place.

Resolution: ``--config PATH``, then ``$THE_LOOP_CONFIG``, then ``./the-loop.yaml``, then
``~/.config/the-loop/config.yaml``; none found means all defaults. Keys ending in ``Env`` name
environment variables that hold secrets; secrets never live in the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from the_loop import instance
from the_loop.config import warnings as config_warnings
from the_loop.config.attention import AttentionConfig, HarnessAttention
from the_loop.config.database import DatabaseConfig
from the_loop.config.errors import (
    AtPath,
    problems_word,
    validation_problems,
    yaml_problem,
)
from the_loop.config.limits import LimitsConfig
from the_loop.config.node import NodeConfig, node_name_field
from the_loop.config.sandbox import SandboxConfig
from the_loop.config.slack import SlackConfig, StandingSlackConfig
from the_loop.config.spend import AdmissionConfig, BudgetsConfig, SessionsConfig
from the_loop.config.workspaces import RepoName, WorkspacesConfig
from the_loop.errors import ConfigInvalid
from the_loop.refs import STANDING_GRAMMAR, STANDING_NAME_RE

BUILTIN_HARNESSES = ("claude", "codex", "gemini", "cursor", "demo")
DEFAULT_WEBHOOK_EVENTS = [
    "issues",
    "issue_comment",
    "pull_request",
    "pull_request_review",
    "pull_request_review_comment",
    "workflow_run",
    "check_run",
    "check_suite",
    "status",
]
_HARNESS_NAME_RE = re.compile(r"\A[a-z0-9][a-z0-9_-]{0,39}\Z")
_ENV_NAME_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_WINDOW_RE = re.compile(r"\A[1-9][0-9]{1,3}x[1-9][0-9]{0,3}\Z")
SECRETISH = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)


RunnerKind = Literal["tmux", "process"]
"""Where a harness runs: ``tmux`` (interactive) or ``process`` (headless)."""


class Model(BaseModel):
    """Base of every config model: camelCase keys, unknown keys refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_default=True,
        defer_build=True,
    )


def _env_name(value: str) -> str:
    if not _ENV_NAME_RE.match(value):
        raise ValueError(f"{value!r} is not an environment variable name")
    return value


EnvName = Annotated[str, AfterValidator(_env_name)]


class ServerConfig(Model):
    """The HTTP server: webhooks, REST, MCP, dashboard."""

    host: str = Field("127.0.0.1", description="Bind address; non-loopback requires a token.")
    port: int = Field(8420, ge=0, le=65535, description="TCP port (0 picks a free one).")
    public_url: str = Field("", description="URL people use to reach the dashboard.")
    token_env: str = Field("THE_LOOP_TOKEN", description="Env var holding the API token.")
    read_only_token_env: str = Field(
        "THE_LOOP_READONLY_TOKEN", description="Env var holding the read-only API token."
    )
    limits: LimitsConfig = Field(
        default_factory=LimitsConfig, description="Bounds on what any client can make it hold."
    )

    _env = field_validator("token_env", "read_only_token_env")(_env_name)


class TmuxConfig(Model):
    """The private tmux server every agent runs on."""

    socket: str = Field(
        "the-loop",
        pattern=r"^[A-Za-z0-9._-]{1,64}$",
        description="Name of the private tmux socket (tmux -L).",
    )
    keep_session_on_close: bool = Field(True, description="Keep the dead pane as a record.")
    remain_on_exit: bool = Field(True, description="Keep panes whose program exited.")
    kill_harness_on_close: bool = Field(True, description="Terminate the agent on close.")
    harness_kill_grace_seconds: float = Field(
        5, ge=0, le=300, description="SIGTERM to SIGKILL grace."
    )
    resume_on_respawn: bool = Field(True, description="Resume the conversation on respawn.")
    resume_probe_seconds: float = Field(
        2,
        ge=0,
        le=120,
        description=(
            "How long a resumed agent must stay alive; it ends early once the harness's "
            "ready pattern shows (the agent takes input)."
        ),
    )
    window_size: str = Field("200x50", description="Fixed agent window size, COLSxROWS.")

    @field_validator("window_size")
    @classmethod
    def _window(cls, value: str) -> str:
        if not _WINDOW_RE.match(value):
            raise ValueError(f"{value!r} is not COLSxROWS (for example 200x50)")
        return value

    @property
    def columns(self) -> int:
        return int(self.window_size.split("x")[0])

    @property
    def rows(self) -> int:
        return int(self.window_size.split("x")[1])


class HarnessConfig(Model):
    """One agent CLI. Built-ins: claude, codex, gemini, cursor; others use adapter: command."""

    adapter: str | None = Field(None, description="Adapter name; defaults to the harness name.")
    binary: str | None = Field(None, description="Executable; defaults to the adapter's.")
    args: list[str] | None = Field(
        None, description="Extra argv. Omitted means the adapter's default; [] means none."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment.")
    model: str | None = Field(None, description="Model name passed to the harness.")
    permission_mode: Literal["ask", "auto", "bypass"] = Field(
        "ask",
        description=(
            "ask: the harness asks before it runs a tool (Claude Code `--permission-mode "
            "default`, Codex `--ask-for-approval on-request`, Gemini `--approval-mode default`), "
            "and the-loop takes the answer from the person who started the session; auto: "
            "edits are accepted without asking (Claude Code `acceptEdits`, Codex "
            "`--approve-for-me`, Gemini `auto_edit`); bypass: nothing is asked. auto and "
            "bypass are shown wherever the session is shown. A permission flag already in "
            "`args` wins."
        ),
    )
    interactive: list[str] | None = Field(None, description="command adapter: interactive argv.")
    resume: list[str] | None = Field(None, description="command adapter: argv to resume.")
    headless: list[str] | None = Field(None, description="command adapter: headless argv.")
    multiline: Literal["paste", "join", "file"] = Field(
        "paste",
        description=(
            "How a multi-line message reaches an interactive agent: paste (bracketed paste; "
            "for programs that enable it, as Claude Code, Codex and Gemini do), join (lines "
            "joined with ' / ' into one line, for programs that read lines), or file (the "
            "message is written to a private file and one line naming it is pasted)."
        ),
    )

    @field_validator("env")
    @classmethod
    def _env_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            _env_name(key)
        return value


class KeywordsConfig(Model):
    """The commands people write in a comment (allow and deny answer a permission prompt,
    answer a question)."""

    start: str = "the-loop start"
    do: str = "the-loop do"
    stop: str = "the-loop stop"
    pause: str = "the-loop pause"
    resume: str = "the-loop resume"
    allow: str = "the-loop allow"
    deny: str = "the-loop deny"
    answer: str = "the-loop answer"

    @model_validator(mode="after")
    def _distinct(self) -> KeywordsConfig:
        seen: dict[str, str] = {}
        for name in ("start", "do", "stop", "pause", "resume", "allow", "deny", "answer"):
            value = str(getattr(self, name)).strip().lower()
            if not value:
                raise AtPath([name], "keywords must not be blank")
            if value in seen:
                raise AtPath(
                    [name], f"keywords must be different from each other (same as {seen[value]})"
                )
            seen[value] = name
        return self


class PromptsConfig(Model):
    """Template overrides (Jinja2 files); built-ins when unset."""

    spawn: Path | None = None
    event: Path | None = None


class RoutingConfig(Model):
    """Who may drive agents and how work items become sessions."""

    enabled: bool = True
    default_harness: str = "claude"
    runner: RunnerKind = "tmux"
    max_concurrent_sessions: int = Field(8, ge=1, le=10000)
    authorized_users: list[str] = Field(
        default_factory=list, description="GitHub logins; empty means nobody (fail closed)."
    )
    bot_login: str | None = None
    keywords: KeywordsConfig = Field(default_factory=KeywordsConfig)
    label: str = "the-loop"
    require_start_command: bool = True
    ci_conclusions: list[str] = Field(
        default_factory=lambda: ["failure", "timed_out", "action_required"]
    )
    prompts: PromptsConfig = Field(default_factory=PromptsConfig)


class WebhookConfig(Model):
    enabled: bool = True
    path: str = Field("/webhooks/github", pattern=r"^/[A-Za-z0-9._~/-]*$")
    secret_env: str = "THE_LOOP_WEBHOOK_SECRET"
    allow_unsigned: bool = False
    events: list[str] = Field(default_factory=lambda: list(DEFAULT_WEBHOOK_EVENTS))

    _env = field_validator("secret_env")(_env_name)


class PollerConfig(Model):
    enabled: bool = False
    interval_seconds: float = Field(60, ge=1, le=86400)


class GitHubConfig(Model):
    enabled: bool = False
    api_url: str = Field("https://api.github.com", pattern=r"^https?://")
    token_env: str = "GITHUB_TOKEN"
    token_to_agents: bool = Field(
        True,
        description=(
            "Pass the GitHub token variable on to the agents (they reply with `gh`); false "
            "withholds it from every pane."
        ),
    )
    repos: list[RepoName] = Field(
        default_factory=list, description="OWNER/REPO; empty accepts all."
    )
    webhook: WebhookConfig = Field(default_factory=WebhookConfig)
    poller: PollerConfig = Field(default_factory=PollerConfig)
    reactions: bool = True
    announce: bool = True
    timeout_seconds: float = Field(10, gt=0, le=300, description="Per-request timeout.")
    retries: int = Field(2, ge=0, le=10, description="Retries of 5xx, timeouts, refused.")

    _env = field_validator("token_env")(_env_name)


class StandingSessionConfig(Model):
    """A declared standing session. harness, args and cwd inherit from routing when omitted."""

    name: str
    description: str = ""
    harness: str | None = None
    args: list[str] | None = Field(None, description="Omitted inherits; [] means none.")
    cwd: Path | None = None
    prompt: str | None = None
    prompt_file: Path | None = None
    auto_start: bool = True
    node: str | None = Field(
        None,
        description=(
            "On a shared database (PostgreSQL), the node that runs it (unset: the first node "
            "that starts it). Only that node starts, resumes and stops its agent."
        ),
    )
    slack: StandingSlackConfig = Field(default_factory=StandingSlackConfig)

    _node = field_validator("node")(node_name_field)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not STANDING_NAME_RE.match(value):
            raise ValueError(f"invalid standing session name {value!r}: {STANDING_GRAMMAR}")
        return value

    @model_validator(mode="after")
    def _prompt_xor(self) -> StandingSessionConfig:
        if self.prompt is not None and self.prompt_file is not None:
            raise AtPath(["promptFile"], "give prompt or promptFile, not both")
        return self


class StandingConfig(Model):
    enabled: bool = False
    sessions: list[StandingSessionConfig] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> StandingConfig:
        seen: dict[str, int] = {}
        for index, session in enumerate(self.sessions):
            if session.name in seen:
                raise AtPath(
                    ["sessions", index, "name"],
                    f"duplicate standing session name {session.name!r} at "
                    f"sessions[{seen[session.name]}] and sessions[{index}]",
                )
            seen[session.name] = index
        return self


class EventsConfig(Model):
    retention_days: float = Field(90, gt=0, le=36500)


class Config(Model):
    """The whole configuration of one the-loop installation."""

    version: Literal[1] = 1
    state_dir: Path = Field(
        Path("~/.local/state/the-loop"), description="SQLite database, logs, transcripts."
    )
    server: ServerConfig = Field(default_factory=ServerConfig)
    tmux: TmuxConfig = Field(default_factory=TmuxConfig)
    harnesses: dict[str, HarnessConfig] = Field(default_factory=dict)
    routing: RoutingConfig = Field(default_factory=RoutingConfig)
    workspaces: WorkspacesConfig = Field(default_factory=WorkspacesConfig)
    github: GitHubConfig = Field(default_factory=GitHubConfig)
    standing: StandingConfig = Field(default_factory=StandingConfig)
    slack: SlackConfig = Field(default_factory=SlackConfig)
    events: EventsConfig = Field(default_factory=EventsConfig)
    attention: AttentionConfig = Field(default_factory=AttentionConfig)
    budgets: BudgetsConfig = Field(default_factory=BudgetsConfig)
    sessions: SessionsConfig = Field(default_factory=SessionsConfig)
    admission: AdmissionConfig = Field(default_factory=AdmissionConfig)
    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    node: NodeConfig = Field(default_factory=NodeConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)

    @field_validator("harnesses")
    @classmethod
    def _harness_names(cls, value: dict[str, HarnessConfig]) -> dict[str, HarnessConfig]:
        for name, harness in value.items():
            if not _HARNESS_NAME_RE.match(name):
                raise AtPath([name], f"invalid harness name {name!r}")
            if name not in BUILTIN_HARNESSES and harness.adapter is None:
                raise AtPath(
                    [name], f"harness {name!r} is not built in: set adapter (e.g. command)"
                )
            if (harness.adapter or name) == "command" and not (
                harness.interactive or harness.headless
            ):
                raise AtPath(
                    [name],
                    f"harness {name!r}: the command adapter needs interactive or headless argv",
                )
        return value

    @model_validator(mode="after")
    def _harness_refs(self) -> Config:
        known = set(BUILTIN_HARNESSES) | set(self.harnesses)
        if self.routing.default_harness not in known:
            raise AtPath(
                ["routing", "defaultHarness"],
                f"{self.routing.default_harness!r} is not a known harness "
                f"({', '.join(sorted(known))})",
            )
        for index, session in enumerate(self.standing.sessions):
            if session.harness is not None and session.harness not in known:
                raise AtPath(
                    ["standing", "sessions", index, "harness"],
                    f"{session.harness!r} is not a known harness ({', '.join(sorted(known))})",
                )
        return self

    @property
    def state_path(self) -> Path:
        """The state directory, absolute, with ``~`` expanded."""
        return self.state_dir.expanduser().absolute()

    @property
    def workspace_root(self) -> Path:
        root = self.workspaces.root or (self.state_path / "workspaces")
        return root.expanduser().absolute()

    @property
    def workspace_roots(self) -> list[Path]:
        """The directories the-loop makes workspaces in: worktrees, and scratch directories."""
        return [self.workspace_root, self.state_path / "scratch"]

    def harness(self, name: str) -> HarnessConfig:
        """The configuration of harness NAME (defaults for a built-in not configured)."""
        return self.harnesses.get(name) or HarnessConfig()

    def attention_of(self, name: str) -> HarnessAttention:
        """How harness NAME's attention is read: its own ``attention.harnesses`` entry, else
        its adapter's (a harness configured as another name for ``claude`` reads as Claude)."""
        configured = self.harnesses.get(name)
        return self.attention.harness(name, configured.adapter if configured else None)

    def warnings(self) -> list[str]:
        """Accepted-but-risky settings, reported at start and on reload."""
        return config_warnings.of(self)


@dataclass(frozen=True, slots=True)
class LoadedConfig:
    """A validated config and the file it came from (None when all defaults).

    ``digest`` identifies the file's bytes (None for all defaults). When the file on disk is
    invalid and a daemon recorded the config it runs on, commands that only read state or
    reach the daemon get that recorded config: ``invalid`` then holds the file's problems and
    ``recorded_by`` the recording daemon's pid.
    """

    config: Config
    path: Path | None
    digest: str | None = None
    invalid: ConfigInvalid | None = None
    recorded_by: int | None = None

    def require_valid_file(self) -> None:
        """Raise the file's problems if this config is the recorded one, not the file's."""
        if self.invalid is not None:
            raise self.invalid


def load_config(explicit: Path | None = None) -> LoadedConfig:
    """Resolve, read and validate the config; raise ``ConfigInvalid`` listing every error."""
    path = instance.resolve_config_path(explicit)
    return config_from_bytes(path, b"" if path is None else read_config_bytes(path))


def config_from_bytes(path: Path | None, raw: bytes) -> LoadedConfig:
    """Validate RAW, the bytes of the config file PATH (None: all defaults); raise
    ``ConfigInvalid`` listing every error."""
    if path is None:
        return LoadedConfig(Config(), None)
    config = parse_config_text(_decode(raw, path), source=str(path))
    return LoadedConfig(config, path, instance.config_digest(raw))


def read_config_bytes(path: Path) -> bytes:
    """The config file's bytes; ``ConfigInvalid`` when it is missing or unreadable."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ConfigInvalid(
            f"config file {path} does not exist", [f"(file): {path} does not exist"]
        ) from None
    except OSError as exc:
        raise ConfigInvalid(
            f"cannot read config file {path}: {exc.strerror}",
            [f"(file): cannot read {path}: {exc.strerror}"],
        ) from None


def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigInvalid(
            f"cannot read config file {path}: {exc}", [f"(file): {path} is not UTF-8: {exc}"]
        ) from None


def load_recorded(path: Path, invalid: ConfigInvalid) -> LoadedConfig | None:
    """The config a daemon recorded for the config file PATH (now INVALID), or None."""
    found = instance.recorded(path)
    if found is None:
        return None
    state_dir, body = found
    try:
        config = Config.model_validate(body["config"])
    except ValidationError:
        return None  # recorded by a version whose models differ: nothing safe to fall back on
    if config.state_path != state_dir:
        return None
    pid = body.get("pid")
    return LoadedConfig(
        config, path, None, invalid=invalid, recorded_by=pid if isinstance(pid, int) else None
    )


def record_running(state_dir: Path, loaded: LoadedConfig, pid: int) -> None:
    """Record LOADED as what the daemon PID serving STATE_DIR runs on (see ``load_recorded``)."""
    data = loaded.config.model_dump(mode="json", by_alias=True)
    data["stateDir"] = str(state_dir)
    instance.record_running(state_dir, loaded.path, loaded.digest, data, pid)


def parse_config_text(text: str, source: str = "<config>") -> Config:
    """Validate YAML TEXT into a ``Config``; raise ``ConfigInvalid`` listing every error."""
    import yaml  # lazy: start-up (all defaults need no parser)

    try:
        data = yaml.safe_load(text)
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise ConfigInvalid(f"{source} is not valid YAML", [yaml_problem(exc)]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigInvalid(
            f"{source} is invalid (1 problem)", ["(root): the config must be a mapping of keys"]
        )
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, root, Config, data)
        raise ConfigInvalid(
            f"{source} is invalid ({problems_word(len(problems))})", problems
        ) from None


def config_schema() -> dict[str, Any]:
    """The JSON Schema of the config file, generated from the model."""
    schema = Config.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "the-loop configuration"
    return schema


__all__ = [
    "BUILTIN_HARNESSES",
    "DEFAULT_WEBHOOK_EVENTS",
    "SECRETISH",
    "Config",
    "GitHubConfig",
    "HarnessConfig",
    "KeywordsConfig",
    "LoadedConfig",
    "RunnerKind",
    "StandingSessionConfig",
    "attention",
    "config_from_bytes",
    "config_schema",
    "errors",
    "limits",
    "load_config",
    "load_recorded",
    "read_config_bytes",
    "record_running",
    "spend",
]
