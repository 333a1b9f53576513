"""The harness adapter contract and the adapter registry.

An adapter turns (session id, prompt, cwd, config) into argv and environment; it never runs
anything. Every id that reaches an argv passes ``the_loop.refs.safe_session_id`` first, and a
prompt is always placed after ``--`` (or glued to its option with ``=``) so that no prompt can
be taken for a flag. Built-in adapters register themselves with ``register_adapter`` exactly as
a user's custom adapter would; the core looks adapters up by name only through the registry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

from the_loop.config import HarnessConfig
from the_loop.config import RunnerKind as RunnerKind
from the_loop.errors import BadInput, Conflict, UnsupportedRunner
from the_loop.refs import SESSION_ID_RE, safe_session_id
from the_loop.runner.tmux_screens import default_drawn, without_colours

_ADAPTER_NAME_RE = re.compile(r"\A[a-z0-9][a-z0-9_-]{0,39}\Z")


class LaunchKind(StrEnum):
    """What a launch is for."""

    INTERACTIVE = "interactive"
    RESUME = "resume"
    HEADLESS = "headless"
    HEADLESS_RESUME = "headless_resume"

    @property
    def is_interactive(self) -> bool:
        return self in (LaunchKind.INTERACTIVE, LaunchKind.RESUME)

    @property
    def is_resume(self) -> bool:
        return self in (LaunchKind.RESUME, LaunchKind.HEADLESS_RESUME)


@dataclass(frozen=True, slots=True)
class InputBox:
    """What a harness's input box holds, read from its screen (``HarnessAdapter.input_box``)."""

    held: str
    """The text in the box as drawn ("" when empty: its placeholder shows)."""
    last_sent: str
    """The last message the conversation above the box shows sent ("" when none shows)."""
    folded: bool = False
    """The box shows a paste folded to a label (its text is not on screen)."""
    busy: bool = False
    """The screen shows a turn at work under the box (a message taken now waits its turn)."""
    shell: bool = False
    """The box is in the harness's shell mode: what is sent from it runs as a shell command,
    not as a message to the model (a person typed ``!`` into the empty box)."""
    rows: range = range(0)
    """The rows of the screen the box's text is drawn on (empty: not told)."""


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """The inputs of one launch.

    ``session_id`` is the id minted by the-loop for a new conversation (adapters whose
    ``chooses_session_id`` is true pass it to the harness) or the recorded harness id to resume.
    ``prompt_file`` is only needed by ``command`` templates that use ``{prompt_file}``; the
    caller writes it (``HarnessAdapter.wants_prompt_file`` says when).
    """

    cwd: Path
    session_id: str | None = None
    prompt: str | None = None
    prompt_file: Path | None = None


@dataclass(frozen=True, slots=True)
class Launch:
    """Argv and environment for one harness run; the runner adds ``env`` to its own.

    ``session_id`` is the conversation id known at launch (chosen by the-loop, or resumed), or
    None when the harness assigns it (learn it with ``HarnessAdapter.session_id_from_output``).
    ``prompt_in_argv`` is false when a prompt was given but the argv does not carry it (in an
    argument or in the ``{prompt_file}`` it names): a headless ``command`` template without
    either; the process runner then writes the prompt to the program's standard input.
    Interactive launches are built without a prompt: the tmux runner pastes every prompt.
    ``ready_pattern`` is a regular expression that matches the pane's screen once the agent
    takes input (None: any text on the screen will do). ``agent_home`` is the agent's own home
    when it is confined (its ``HOME``): what the-loop prepares there goes through
    ``the_loop.agent_files`` as the agent's (no link there is followed); None: the operator's.
    """

    harness: str
    kind: LaunchKind
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    session_id: str | None
    prompt_in_argv: bool
    supports_interactive: bool
    chooses_session_id: bool
    ready_pattern: str | None = None
    output_format: str = "text"
    agent_home: Path | None = None


class HarnessAdapter:
    """Base of every adapter. Subclasses set the class attributes and implement ``_argv``.

    Public methods validate their inputs and raise ``BadInput`` (unsafe id, missing id) or
    ``UnsupportedRunner`` (an interactive launch of a headless-only harness).
    """

    default_binary: ClassVar[str] = ""
    default_args: ClassVar[tuple[str, ...]] = ()
    headless_output_format: ClassVar[str] = "text"
    supports_interactive: bool = True
    supports_headless: bool = True
    chooses_session_id: bool = True
    ready_pattern: str | None = None
    idle_pattern: ClassVar[str | None] = None
    """A regular expression that matches the end of the screen (its last non-blank lines) while
    the agent takes input and runs nothing: for a harness that reports its turns through hooks,
    a turn that ended with no report (interrupted in its terminal) is read from it
    (``agent.attention.silent``). None: not read."""
    permission_flags: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    """Per ``permissionMode`` (ask, auto, bypass), the argv that puts the harness in it."""
    submit_gap: ClassVar[float] = 0.0
    """Seconds between a paste and the Enter that submits it (0: in the same instant)."""
    frames_paste: ClassVar[bool] = False
    """Whether the harness reads bracketed-paste markers itself: the-loop then frames every
    paste with them, also before the program asked the terminal for bracketed paste (its input
    box can be drawn before it did; a paste that came unframed then would be typed — each line
    submitted on its own, and in Gemini a ``!`` switching to shell mode, which runs the rest
    without asking). A program that reads lines (a custom command) is left unframed."""
    reads_input_box: ClassVar[bool] = False
    """Whether ``input_box`` reads this harness's input box: a delivery then makes sure its
    message left the box (``agent.submit``)."""
    drafts_by_words: ClassVar[bool] = False
    """Whether the harness draws nothing in its empty input box but placeholders that
    ``input_box`` knows (and reads as empty): any other text there is then a draft, whatever
    colours it is drawn in (decision 0105). Otherwise a draft is told by its colour (0101)."""
    reports_submit: ClassVar[bool] = False
    """Whether the harness's hooks report each prompt it takes (Claude Code's
    ``UserPromptSubmit``): a delivery's watch then takes that report for its message sent, and
    reads the box only for whether the message stays in it."""
    keeps_conversation: ClassVar[bool] = False
    """Whether the harness writes its conversation to a file the-loop reads (the meter, the
    Conversation tab); one that does not shows only its screen."""

    def __init__(self, harness: str, config: HarnessConfig | None = None) -> None:
        self.harness = harness
        self.config = config or HarnessConfig()

    @property
    def adapter_name(self) -> str:
        return self.config.adapter or self.harness

    @property
    def binary(self) -> str:
        return self.config.binary or self.default_binary

    @property
    def args(self) -> list[str]:
        """Configured extra argv: None means the adapter's default, [] means none."""
        if self.config.args is None:
            return list(self.default_args)
        return list(self.config.args)

    @property
    def env(self) -> dict[str, str]:
        return dict(self.config.env)

    @property
    def wants_prompt_file(self) -> bool:
        """True when the caller must write the prompt to ``LaunchSpec.prompt_file``."""
        return False

    def model_args(self) -> list[str]:
        return ["--model", self.config.model] if self.config.model else []

    @property
    def permission_mode(self) -> str:
        """The configured ``permissionMode``: ask (the default), auto or bypass."""
        return self.config.permission_mode

    def permission_args(self) -> list[str]:
        """The argv for the configured ``permissionMode``; none when the operator's ``args``
        already carry the same flag (their choice wins)."""
        flags = self.permission_flags.get(self.config.permission_mode, ())
        if (
            not flags
            or flags[0] in self.args
            or any(a.startswith(f"{flags[0]}=") for a in self.args)
        ):
            return []
        return list(flags)

    def check_runner(self, runner: RunnerKind) -> None:
        """Raise ``UnsupportedRunner`` when this harness cannot run under RUNNER."""
        if runner == "tmux" and not self.supports_interactive:
            raise UnsupportedRunner(
                f"harness {self.harness!r} (adapter {self.adapter_name}) has no interactive "
                "mode and cannot run under the tmux runner; use the process runner "
                "(routing.runner: process)"
            )
        if runner == "process" and not self.supports_headless:
            raise UnsupportedRunner(
                f"harness {self.harness!r} (adapter {self.adapter_name}) has no headless "
                "mode and cannot run under the process runner; use the tmux runner "
                "(routing.runner: tmux)"
            )

    def interactive(self, spec: LaunchSpec) -> Launch:
        """A new interactive conversation (tmux runner)."""
        return self.launch(LaunchKind.INTERACTIVE, spec)

    def resume_interactive(self, spec: LaunchSpec) -> Launch:
        """Resume conversation ``spec.session_id`` interactively (tmux runner)."""
        return self.launch(LaunchKind.RESUME, spec)

    def headless(self, spec: LaunchSpec) -> Launch:
        """One headless delivery that starts a conversation (process runner)."""
        return self.launch(LaunchKind.HEADLESS, spec)

    def headless_resume(self, spec: LaunchSpec) -> Launch:
        """One headless delivery into conversation ``spec.session_id`` (process runner)."""
        return self.launch(LaunchKind.HEADLESS_RESUME, spec)

    def launch(self, kind: LaunchKind, spec: LaunchSpec) -> Launch:
        """Validate SPEC for KIND and build the launch."""
        self.check_runner("tmux" if kind.is_interactive else "process")
        session_id = self._checked_id(kind, spec.session_id)
        prompt = spec.prompt or None
        argv = self._argv(kind, session_id, prompt, spec)
        return Launch(
            harness=self.harness,
            kind=kind,
            argv=tuple(argv),
            env=self.env,
            cwd=spec.cwd,
            session_id=session_id,
            prompt_in_argv=prompt is not None and self._places_prompt(kind),
            supports_interactive=self.supports_interactive,
            chooses_session_id=self.chooses_session_id,
            ready_pattern=self.ready_pattern if kind.is_interactive else None,
            output_format="text" if kind.is_interactive else self.headless_output_format,
        )

    def _checked_id(self, kind: LaunchKind, session_id: str | None) -> str | None:
        if kind.is_resume:
            if session_id is None:
                raise BadInput(f"harness {self.harness!r}: resuming needs a session id")
            return safe_session_id(session_id)
        if not self.chooses_session_id:
            return None
        if session_id is None:
            raise BadInput(f"harness {self.harness!r}: a new conversation needs a session id")
        return safe_session_id(session_id)

    def _argv(
        self, kind: LaunchKind, session_id: str | None, prompt: str | None, spec: LaunchSpec
    ) -> list[str]:
        raise NotImplementedError

    def _places_prompt(self, kind: LaunchKind) -> bool:
        """True when a given prompt goes into the argv of KIND (else deliver it after spawn)."""
        return True

    def prepare(self, launch: Launch, roots: Sequence[Path] = ()) -> None:
        """Prepare the harness's own settings before LAUNCH is spawned (default: nothing).
        ROOTS are the directories the-loop makes workspaces in: a harness that asks whether
        to trust a directory may settle that once for a root instead of for every workspace."""

    def conversation_file(self, launch: Launch) -> Path | None:
        """The file a resume LAUNCH reads its conversation from on this host, when the harness
        keeps it in one file the-loop can put back (default: None, it does not)."""
        return None

    def conversation_log(
        self, cwd: Path | None, conversation_id: str, env: Mapping[str, str]
    ) -> Path | None:
        """Where this harness writes conversation CONVERSATION_ID (started in CWD, with the
        extra environment ENV over the daemon's: a confined agent's ``HOME``) when no hook
        names the file, if it exists; None when the harness keeps none the-loop reads (the
        default). The meter counts its usage from it and the Conversation tab shows it."""
        return None

    def input_box(self, screen: str) -> InputBox | None:
        """What the input box holds on SCREEN (a capture of the pane), for a harness that
        ``reads_input_box``; None when the screen shows no input box (the default)."""
        return None

    def draft(self, styled: str) -> InputBox | None:
        """The input box on STYLED (a capture of the pane with the escapes of its colours)
        when it holds text typed or pasted there and not sent: a message pasted now would join
        it, and its Enter send both as one; or when it is in shell mode, where a message
        pasted would run as a shell command. For a harness that ``drafts_by_words``, any text
        that is not a placeholder; otherwise only text drawn in the terminal's default colour
        counts, so the dim or coloured hints a harness draws in an empty box never do. None
        also when ``input_box`` does not tell where its text is drawn (the default)."""
        box = self.input_box(without_colours(styled))
        if box is not None and (box.shell or self.drafts_by_words):
            return box if box.shell or any(c.isalnum() for c in box.held) else None
        if box is None or not box.held or not box.rows:
            return None
        rows = styled.split("\n")
        drawn = "".join(default_drawn(rows[at]) for at in box.rows if at < len(rows))
        return box if any(c.isalnum() for c in drawn) else None

    def session_id_from_output(self, output: str) -> str | None:
        """The harness-assigned conversation id found in headless OUTPUT, if any."""
        return None


def continued(lines: list[str], at: int, indent: str, *, across_blanks: bool) -> list[str]:
    """The lines that go on LINES[AT], a message's marked line on a harness's screen: the ones
    after it indented by INDENT, stripped. ACROSS_BLANKS, the blank lines between them are
    passed over (a message's paragraphs) and it ends at the first line not so indented;
    otherwise it ends at the first blank line too."""
    found: list[str] = []
    for line in lines[at + 1 :]:
        if not line.strip() and across_blanks:
            continue
        if not line.strip() or not line.startswith(indent):
            break
        found.append(line.strip())
    return found


def first_json_field(output: str, key: str, event_type: str | None = None) -> str | None:
    """KEY of the first JSON-object line of OUTPUT (of type EVENT_TYPE when given) that holds
    a safe session id; None when there is none."""
    for line in output.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        if event_type is not None and event.get("type") != event_type:
            continue
        value = event.get(key)
        if isinstance(value, str) and SESSION_ID_RE.match(value):
            return value
    return None


def prompt_tail(prompt: str | None) -> list[str]:
    """``["--", prompt]`` or nothing: after ``--`` a prompt can never be read as a flag."""
    return ["--", prompt] if prompt is not None else []


def options_before_separator(argv: Sequence[str]) -> list[str]:
    """The elements of ARGV before the first ``--`` (the part a harness reads as options)."""
    out: list[str] = []
    for item in argv:
        if item == "--":
            break
        out.append(item)
    return out


_REGISTRY: dict[str, type[HarnessAdapter]] = {}


def register_adapter(name: str, cls: type[HarnessAdapter], *, replace: bool = False) -> None:
    """Make adapter class CLS available as NAME (the value of ``harnesses.<h>.adapter``)."""
    if not _ADAPTER_NAME_RE.match(name):
        raise BadInput(f"invalid adapter name {name!r}")
    if not (isinstance(cls, type) and issubclass(cls, HarnessAdapter)):
        raise BadInput(f"adapter {name!r} must be a HarnessAdapter subclass")
    if name in _REGISTRY and _REGISTRY[name] is not cls and not replace:
        raise Conflict(f"adapter {name!r} is already registered")
    _REGISTRY[name] = cls


def get_adapter(name: str) -> type[HarnessAdapter]:
    """The adapter class registered as NAME; ``BadInput`` naming the known ones otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise BadInput(f"unknown harness adapter {name!r} (known: {known})") from None


def registered_adapters() -> list[str]:
    return sorted(_REGISTRY)


def build_adapter(harness: str, config: HarnessConfig | None = None) -> HarnessAdapter:
    """The adapter for harness HARNESS: ``config.adapter`` when set, else the harness name."""
    config = config or HarnessConfig()
    return get_adapter(config.adapter or harness)(harness, config)
