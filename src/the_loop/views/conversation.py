"""The conversation view: an agent's conversation read from the transcript its harness keeps.

``turns_of`` is the whole parser: transcript lines in, turns out — a person's prompt, then the
agent's messages and tool calls (name, input, result) in order. It reads, line by line and
mixed if need be, Claude Code's JSONL transcript (interactive, and ``stream-json`` of a
headless run), Codex's rollout file (interactive) and ``codex exec --json`` (headless), and
Gemini's ``stream-json`` (headless) and chat log (one record per line, or a JSON document).
Anything else is skipped. ``session_conversation`` / ``standing_conversation`` find the file
(the path the harness's hooks reported, else where the harness writes it, else the headless
run's spool) and read its newest part. The pending permission or question is attention's, not
the transcript's.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from the_loop.agent.spend import meter
from the_loop.agent_files import open_agent_file
from the_loop.context import Ctx
from the_loop.harness import recorded_adapter
from the_loop.refs import standing_key
from the_loop.views import sessions as views
from the_loop.wire import Wire
from the_loop.work_items.records import resolve

TAIL_BYTES = 2 << 20
"""The newest part of a transcript read for the view (older turns are left out)."""
MAX_TEXT = 8000
"""Characters of one message, tool input or tool result shown; the rest is cut."""
MAX_TURNS = 200
_HIDDEN_PROMPT = re.compile(
    r"\A\s*<(environment_context|user_instructions|permissions|local-command|command-|system)"
)
_PASTED = re.compile(
    r'\A\s*<pasted_content id="([^"]*)">\n?(.*)\n?</pasted_content id="\1">\s*\Z', re.S
)
"""Claude Code's transcript keeps a long paste (every message the-loop delivers is one whole
paste) inside this wrapper; the view shows what was pasted. Anchored at both ends: one match
attempt, linear in the prompt's size, whatever the prompt holds."""


class ToolCall(Wire):
    """One tool call: its name, its input as text, and its result once there is one."""

    id: str = ""
    name: str
    input: str = ""
    result: str | None = None
    is_error: bool = False


class Step(Wire):
    """One thing the agent did in a turn: a message (``text``) or a tool call (``tool``)."""

    kind: Literal["text", "tool"]
    text: str = ""
    tool: ToolCall | None = None


class Turn(Wire):
    """A person's prompt (None when the transcript does not hold it) and what followed."""

    prompt: str | None = None
    steps: list[Step] = []


class Conversation(Wire):
    """What the view shows of one agent: its turns, oldest first, and ``version`` (changes
    whenever the transcript does). ``note`` says why there are no turns to show."""

    harness: str
    turns: list[Turn] = []
    version: str = ""
    truncated: bool = False
    note: str = ""


@dataclass(frozen=True, slots=True)
class AgentFiles:
    """What finds an agent's transcript: its key, harness and working directory."""

    key: str
    harness: str
    cwd: Path


# --- parsing --------------------------------------------------------------------------------


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + " …"


def _as_text(value: Any) -> str:
    """A tool input or result as a person reads it."""
    if value is None:
        return ""
    if isinstance(value, str):
        return _cut(value)
    if isinstance(value, list):  # content blocks
        parts = [
            str(b.get("text", "")) if isinstance(b, dict) else str(b)
            for b in value
            if not isinstance(b, dict)
            or b.get("type") in (None, "text", "input_text", "output_text")
        ]
        return _cut("\n".join(p for p in parts if p))
    if isinstance(value, dict) and set(value) <= {"command", "description"} and "command" in value:
        return _cut(str(value["command"]))
    return _cut(json.dumps(value, ensure_ascii=False, indent=1))


class _Reader:
    """Turns being built, and the tool calls still waiting for their results."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.tools: dict[str, ToolCall] = {}
        self.ended = False

    def turn(self) -> Turn:
        if not self.turns or self.ended:
            self.turns.append(Turn())
            self.ended = False
        return self.turns[-1]

    def prompt(self, text: str) -> None:
        if not text.strip() or _HIDDEN_PROMPT.match(text):
            return
        self.turns.append(Turn(prompt=_cut(text)))
        self.ended = False

    def text(self, text: str, *, delta: bool = False) -> None:
        if not text.strip() and not delta:
            return
        steps = self.turn().steps
        if delta and steps and steps[-1].kind == "text":
            steps[-1].text = _cut(steps[-1].text + text)
        else:
            steps.append(Step(kind="text", text=_cut(text)))

    def tool(self, call_id: str, name: str, tool_input: Any) -> None:
        call = ToolCall(id=call_id, name=name or "tool", input=_as_text(tool_input))
        self.turn().steps.append(Step(kind="tool", tool=call))
        if call_id:
            self.tools[call_id] = call

    def result(self, call_id: str, output: Any, is_error: bool = False) -> None:
        call = self.tools.pop(call_id, None)
        if call is not None:
            call.result = _as_text(output)
            call.is_error = is_error


def _claude(reader: _Reader, data: dict[str, Any]) -> None:
    kind = data.get("type")
    if kind == "result":  # a headless run's turn ended
        reader.ended = True
        return
    message = data.get("message")
    if not isinstance(message, dict) or data.get("isMeta"):
        return
    content = message.get("content")
    if kind == "user":
        if isinstance(content, str):
            reader.prompt(_unpasted(content))
            return
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                output = block.get("content")
                reader.result(
                    str(block.get("tool_use_id", "")), output, bool(block.get("is_error"))
                )
            elif block.get("type") == "text":
                reader.prompt(_unpasted(str(block.get("text", ""))))
        return
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            reader.text(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            reader.tool(str(block.get("id", "")), str(block.get("name", "")), block.get("input"))


def _unpasted(text: str) -> str:
    """TEXT of a Claude Code prompt, or what was pasted when it is one whole paste."""
    found = _PASTED.match(text)
    return found.group(2).strip() if found else text


def _codex_rollout(reader: _Reader, item: dict[str, Any]) -> None:
    kind = item.get("type")
    if kind == "message":
        text = _as_text(item.get("content"))
        if item.get("role") == "user":
            reader.prompt(text)
        elif item.get("role") == "assistant":
            reader.text(text)
    elif kind in ("function_call", "custom_tool_call"):
        raw = item.get("arguments", item.get("input"))
        try:
            parsed = json.loads(raw) if isinstance(raw, str) and kind == "function_call" else raw
        except ValueError:
            parsed = raw
        reader.tool(str(item.get("call_id", "")), str(item.get("name", "")), parsed)
    elif kind == "local_shell_call":
        action = item.get("action")
        command = action.get("command") if isinstance(action, dict) else None
        shown = " ".join(command) if isinstance(command, list) else command
        reader.tool(str(item.get("call_id", "")), "shell", shown)
    elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        output = item.get("output")
        if isinstance(output, str) and output.startswith("{"):
            with contextlib.suppress(ValueError, AttributeError):
                output = json.loads(output).get("output", output)
        reader.result(str(item.get("call_id", "")), output)


def _codex_exec(reader: _Reader, data: dict[str, Any]) -> None:
    kind = data.get("type")
    if kind == "turn.started":
        reader.ended = True
        return
    item = data.get("item")
    if kind != "item.completed" or not isinstance(item, dict):
        return
    item_type = item.get("type")
    item_id = str(item.get("id", ""))
    if item_type == "agent_message":
        reader.text(str(item.get("text", "")))
    elif item_type == "command_execution":
        reader.tool(item_id, "shell", item.get("command"))
        failed = item.get("exit_code") not in (0, None) or item.get("status") == "failed"
        reader.result(item_id, item.get("aggregated_output"), failed)
    elif item_type in ("mcp_tool_call", "file_change", "web_search"):
        reader.tool(item_id, str(item.get("tool") or item_type), item.get("arguments"))


def _gemini_stream(reader: _Reader, data: dict[str, Any]) -> None:
    kind = data.get("type")
    if kind == "message":
        content = str(data.get("content", ""))
        if data.get("role") == "user":
            reader.prompt(content)
        else:
            reader.text(content, delta=bool(data.get("delta")))
    elif kind == "tool_use":
        reader.tool(
            str(data.get("tool_id", "")), str(data.get("tool_name", "")), data.get("parameters")
        )
    elif kind == "tool_result":
        output = data.get("output", data.get("error"))
        reader.result(str(data.get("tool_id", "")), output, data.get("status") == "error")
    elif kind == "result":
        reader.ended = True


def _gemini_chat(reader: _Reader, messages: list[Any]) -> None:
    for message in messages:
        if not isinstance(message, dict):
            continue
        content = _as_text(message.get("content"))
        if message.get("type") == "user":
            reader.prompt(content)
            continue
        if message.get("type") != "gemini":
            continue
        reader.text(content)
        for call in message.get("toolCalls") or []:
            if not isinstance(call, dict):
                continue
            call_id = str(call.get("id", ""))
            reader.tool(
                call_id, str(call.get("displayName") or call.get("name", "")), call.get("args")
            )
            reader.result(call_id, call.get("resultDisplay") or call.get("result"),
                          call.get("status") == "error")  # fmt: skip


def _line(reader: _Reader, data: dict[str, Any]) -> None:
    kind = data.get("type")
    payload = data.get("payload")
    if kind == "response_item" and isinstance(payload, dict):
        _codex_rollout(reader, payload)
    elif isinstance(kind, str) and (kind.startswith(("item.", "turn.", "thread."))):
        _codex_exec(reader, data)
    elif kind in ("message", "tool_use", "tool_result", "init") and "message" not in data:
        _gemini_stream(reader, data)
    elif kind in ("user", "gemini") and "content" in data and "message" not in data:
        _gemini_chat(reader, [data])  # a record of Gemini's chat log, one per line (0.61)
    elif kind in ("user", "assistant", "result"):
        _claude(reader, data)
    elif isinstance(data.get("messages"), list):
        _gemini_chat(reader, data["messages"])


def turns_of(lines: Iterable[str]) -> list[Turn]:
    """The turns of a transcript given as its lines (JSONL; one whole JSON document works
    too), oldest first. Lines that are not JSON objects, or of no known kind, are skipped."""
    reader = _Reader()
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict):
            _line(reader, data)
    return reader.turns


# --- finding the transcript -------------------------------------------------------------------


def transcript_of(ctx: Ctx, files: AgentFiles) -> Path | None:
    """The transcript file of the agent FILES describes, when one exists: the one its hooks
    named, else the log its harness keeps of the conversation, else its headless output."""
    candidates = meter.sources(ctx, [files.key]).get(files.key, [])
    logged = meter.conversation_log(ctx, files.key, files.cwd)
    if logged is not None:
        candidates = [*candidates[:1], logged, *candidates[1:]]
    return candidates[0] if candidates else None


def _tail(path: Path, within: Path | None) -> tuple[list[str], bool, str]:
    """The whole lines of PATH's newest TAIL_BYTES (read inside WITHIN, when given), whether
    older ones were left out, and a version (size and change time)."""
    with open_agent_file(path, within) as handle:
        stat = os.fstat(handle.fileno())
        start = max(0, stat.st_size - TAIL_BYTES)
        handle.seek(start)
        data = handle.read(TAIL_BYTES)
    text = data.decode("utf-8", "replace")
    if path.suffix == ".json":  # a whole JSON document (Gemini's chat file)
        return [" ".join(text.splitlines())], False, f"{stat.st_size}-{stat.st_mtime_ns}"
    lines = text.splitlines()
    if start > 0 and lines:
        lines = lines[1:]  # the first one is cut
    return lines, start > 0, f"{stat.st_size}-{stat.st_mtime_ns}"


def conversation(ctx: Ctx, files: AgentFiles) -> Conversation:
    """The conversation of the agent FILES describes, its newest MAX_TURNS turns."""
    path = transcript_of(ctx, files)
    if path is None:
        return Conversation(harness=files.harness, note=_none_note(ctx, files.harness))
    try:
        lines, cut, version = _tail(path, meter.read_within(ctx, files.key, path))
    except OSError as exc:
        return Conversation(harness=files.harness, note=f"cannot read its transcript: {exc}")
    turns = turns_of(lines)
    note = "" if turns else "nothing in its transcript yet"
    return Conversation(
        harness=files.harness,
        turns=turns[-MAX_TURNS:],
        version=version,
        truncated=cut or len(turns) > MAX_TURNS,
        note=note,
    )


def _none_note(ctx: Ctx, harness: str) -> str:
    """Why an agent of HARNESS shows no conversation: none written yet, or none kept."""
    adapter = recorded_adapter(ctx.config, harness)
    if adapter is None or adapter.keeps_conversation:  # unknown now: it may have kept one
        return f"no transcript of this {harness} agent yet"
    return f"the {harness} harness keeps no conversation the-loop reads: its screen shows its work"


def session_conversation(ctx: Ctx, ref_or_id: str) -> Conversation:
    """The conversation of work-item session REF_OR_ID (``NotFound`` when there is none)."""
    rec = resolve(ctx, ref_or_id)
    return conversation(ctx, AgentFiles(rec.id, rec.harness, Path(rec.cwd)))


def standing_conversation(ctx: Ctx, name: str) -> Conversation:
    """The conversation of standing session NAME (``NotFound`` when there is none)."""
    view = views.standing_view(ctx, name)
    files = AgentFiles(standing_key(name), view.harness, Path(view.cwd))
    return conversation(ctx, files)
