"""The meter: reads what each harness recorded about its model calls into ``usage_entries``.

Sources, per agent: the transcript its Claude Code hooks named (``transcript_path`` of every
hook, recorded by ``the-loop hook``), and the headless run's stream transcript
(``<stateDir>/transcripts/<key>.jsonl``: Claude Code's ``stream-json``, Codex's ``--json``).
Each is read from where the last read stopped, whole lines only, so a pass costs one ``stat``
for an agent that did nothing. The daemon reads at the end of every turn (and while a turn is
running, for the meters); nothing here runs in the hook.

What counts:
- an assistant entry (``{"type": "assistant", "message": {"id", "model", "usage"}}``) is one
  model message; Claude Code writes one line per content block with the same message id, so
  entries are keyed by that id and each token kind keeps its largest figure;
- a person's prompt (a user entry that is not a tool result or a meta line) is one turn, keyed
  by its ``uuid``; a headless ``result`` line is one turn too (a headless Gemini's carries the
  run's figures per model in its ``stats``);
- Codex's ``turn.completed`` (``codex exec --json``) carries the turn's usage (its cached
  input is part of its input);
- an interactive Gemini's chat log (``<home>/.gemini/tmp/…/chats/session-…-<id>.jsonl``, found
  from its conversation id: no hook names it) has one record per prompt of the person's
  (``type: user``, one turn) and per answer of the model (``type: gemini``, with its
  ``tokens``, keyed by its ``id``);
- an interactive Codex's rollout file (``$CODEX_HOME/sessions/…/rollout-…-<thread>.jsonl``,
  whose path its turn-complete ``notify`` reports) has one ``token_usage_record`` per model
  response (keyed by its ``response_id``), the model of the turn in the ``turn_context`` line
  before it, and one ``task_started`` event per turn. Its ``token_count`` events repeat the
  same figures (running totals) and are not counted again.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from the_loop.agent.confine import confined_home
from the_loop.agent.spend.usage import day_of
from the_loop.agent_files import open_agent_file
from the_loop.context import Ctx
from the_loop.harness import recorded_adapter
from the_loop.refs import SESSION_ID_RE
from the_loop.store import attention as attention_store
from the_loop.store import sessions as session_store
from the_loop.store import standing as standing_store
from the_loop.store import usage as store
from the_loop.store.attention import STANDING_PREFIX
from the_loop.store.usage import Entry

MAX_READ = 64 << 20
"""At most this many bytes of one transcript are read in one pass (the rest on the next)."""


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and value > 0 else 0


def _assistant(data: dict[str, Any]) -> Entry | None:
    message = data.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
        return None
    ident = message.get("id") or data.get("requestId") or data.get("uuid")
    if not isinstance(ident, str) or not ident:
        return None
    usage = message["usage"]
    return Entry(
        entry=f"m:{ident}",
        kind=store.MESSAGE,
        model=str(message.get("model") or ""),
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        cache_creation_tokens=_int(usage.get("cache_creation_input_tokens")),
        cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
    )


def _is_prompt(data: dict[str, Any]) -> bool:
    message = data.get("message")
    if data.get("isMeta") or not isinstance(message, dict) or message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return False
        text = "".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    else:
        return False
    text = text.lstrip()
    return bool(text) and not text.startswith(("<command-", "<local-command", "<system-reminder"))


def _codex(data: dict[str, Any], where: str) -> list[Entry]:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return []
    cached = _int(usage.get("cached_input_tokens"))
    message = Entry(
        entry=f"c:{where}",
        kind=store.MESSAGE,
        model=str(data.get("model") or ""),
        input_tokens=max(0, _int(usage.get("input_tokens")) - cached),
        output_tokens=_int(usage.get("output_tokens")),
        cache_read_tokens=cached,
    )
    return [message, Entry(entry=f"t:{where}", kind=store.TURN)]


@dataclass
class ReadState:
    """What one read of a file carries from line to line: the model of the Codex turn."""

    model: str = ""


# The rollout lines the pinned Codex CLI (0.171.0) writes, as seen in its files, e.g.:
#   {"timestamp": …, "type": "turn_context", "payload": {"turn_id": …, "model": "gpt-…", …}}
#   {"timestamp": …, "type": "event_msg", "payload": {"type": "task_started", "turn_id": …}}
#   {"timestamp": …, "type": "token_usage_record", "payload": {"thread_id": …, "turn_id": …,
#    "response_id": "resp_…", "usage": {"input_tokens": 10, "cached_input_tokens": 0,
#    "cache_write_input_tokens": 0, "output_tokens": 4, "reasoning_output_tokens": 0,
#    "total_tokens": 14}, …}}
# Input counts include the cached and cache-written tokens; output includes reasoning.
def _rollout(kind: str, data: dict[str, Any], state: ReadState) -> list[Entry]:
    payload = data.get("payload")
    if not isinstance(payload, dict):
        return []
    if kind == "turn_context":
        state.model = str(payload.get("model") or state.model)
        return []
    if kind == "event_msg":
        turn = payload.get("turn_id")
        if payload.get("type") == "task_started" and isinstance(turn, str) and turn:
            return [Entry(entry=f"t:{turn}", kind=store.TURN)]
        return []
    usage, response = payload.get("usage"), payload.get("response_id")
    if not isinstance(usage, dict) or not isinstance(response, str) or not response:
        return []
    cached = _int(usage.get("cached_input_tokens"))
    written = _int(usage.get("cache_write_input_tokens"))
    return [
        Entry(
            entry=f"r:{response}",
            kind=store.MESSAGE,
            model=state.model,
            input_tokens=max(0, _int(usage.get("input_tokens")) - cached - written),
            output_tokens=_int(usage.get("output_tokens")),
            cache_creation_tokens=written,
            cache_read_tokens=cached,
        )
    ]


ROLLOUT_KINDS = ("turn_context", "event_msg", "token_usage_record")


# A headless Gemini run (``--output-format stream-json``) ends with its figures per model,
# every request of the run included (its side requests too), e.g.:
#   {"type": "result", "status": "success", "stats": {"total_tokens": 39, …, "models":
#    {"gemini-…": {"total_tokens": 39, "input_tokens": 20, "output_tokens": 19, "cached": 0,
#    "input": 20}}}}
def _gemini_stats(data: dict[str, Any], where: str) -> list[Entry]:
    stats = data.get("stats")
    models = stats.get("models") if isinstance(stats, dict) else None
    if not isinstance(models, dict):
        return []
    out = []
    for model, figures in models.items():
        if not isinstance(figures, dict):
            continue
        cached = _int(figures.get("cached"))
        out.append(
            Entry(
                entry=f"s:{where}:{model}",
                kind=store.MESSAGE,
                model=str(model),
                input_tokens=max(0, _int(figures.get("input_tokens")) - cached),
                output_tokens=_int(figures.get("output_tokens")),
                cache_read_tokens=cached,
            )
        )
    return out


# The records of the pinned Gemini CLI's (0.61) chat log, as seen in its files, e.g.:
#   {"id": "b7c2…", "type": "user", "content": [{"text": "…"}], …}       (the person's prompt)
#   {"id": "74f3…", "type": "user", "content": [{"functionResponse": …}]}  (a tool's answer)
#   {"id": "f689…", "type": "gemini", "content": "…", "tokens": {"input": 10, "output": 2,
#    "cached": 0, "thoughts": 0, "tool": 0, "total": 12}, "model": "gemini-…", …}
# Input counts include the cached tokens; thoughts are billed as output and tool-use prompts
# as input (``total`` is the sum of input, output, thoughts and tool).
def _gemini(data: dict[str, Any]) -> list[Entry]:
    ident, tokens = data.get("id"), data.get("tokens")
    if not isinstance(ident, str) or not ident:
        return []
    if data.get("type") == "user":  # a prompt, or a tool's answer (not a turn)
        content = data.get("content")
        parts = content if isinstance(content, list) else [{"text": content}]
        tool = any(isinstance(p, dict) and "functionResponse" in p for p in parts)
        return [] if tool else [Entry(entry=f"t:{ident}", kind=store.TURN)]
    if not isinstance(tokens, dict):
        return []
    cached = _int(tokens.get("cached"))
    message = Entry(
        entry=f"g:{ident}",
        kind=store.MESSAGE,
        model=str(data.get("model") or ""),
        input_tokens=max(0, _int(tokens.get("input")) - cached) + _int(tokens.get("tool")),
        output_tokens=_int(tokens.get("output")) + _int(tokens.get("thoughts")),
        cache_read_tokens=cached,
    )
    return [message]


def parse_line(line: str, where: str, state: ReadState | None = None) -> list[Entry]:
    """The entries one transcript LINE records; WHERE (path and byte offset) names entries
    the line carries no id for; STATE carries what a Codex rollout's earlier lines said. A
    line that is not JSON records nothing."""
    try:
        data = json.loads(line)
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    kind = data.get("type")
    if kind == "assistant":
        found = _assistant(data)
        return [found] if found else []
    if kind == "gemini" or (kind == "user" and "message" not in data and "content" in data):
        return _gemini(data)
    if kind == "user" and _is_prompt(data):
        ident = data.get("uuid") or where
        return [Entry(entry=f"t:{ident}", kind=store.TURN)]
    if kind == "result":
        turn = Entry(entry=f"t:{data.get('uuid') or where}", kind=store.TURN)
        return [turn, *_gemini_stats(data, where)]
    if kind == "turn.completed":
        return _codex(data, where)
    if kind in ROLLOUT_KINDS:
        return _rollout(str(kind), data, state if state is not None else ReadState())
    return []


def _model_before(path: Path, start: int, within: Path | None, window: int = 1 << 20) -> str:
    """The model of the last ``turn_context`` line of rollout PATH before byte START (a read
    that begins mid-turn), from at most WINDOW bytes back; empty when none."""
    try:
        with open_agent_file(path, within) as handle:
            handle.seek(max(0, start - window))
            chunk = handle.read(min(start, window))
    except OSError:
        return ""
    state = ReadState()
    for raw in chunk.split(b"\n"):
        if b'"turn_context"' in raw:
            parse_line(raw.decode("utf-8", "replace"), "", state)
    return state.model


def read_source(ctx: Ctx, agent: str, path: Path) -> int:
    """Read PATH's new whole lines for AGENT into the store; how many entries they held. A file
    shorter than what was read (rewritten) is read again from the start (ids dedupe it)."""
    key = str(path)
    within = read_within(ctx, agent, path)
    done = store.read_bytes(ctx.db.connect(), agent, key)
    try:
        size = path.stat().st_size
    except OSError:
        return 0
    if size == done:
        return 0
    start = 0 if size < done else done
    try:
        with open_agent_file(path, within) as handle:
            handle.seek(start)
            chunk = handle.read(min(size - start, MAX_READ))
    except OSError:
        return 0
    end = chunk.rfind(b"\n") + 1
    entries: list[Entry] = []
    offset = start
    state = ReadState()
    if start and path.name.startswith("rollout-"):
        state.model = _model_before(path, start, within)
    for raw in chunk[:end].split(b"\n")[:-1]:
        line = raw.decode("utf-8", "replace")
        entries.extend(parse_line(line, f"{path.name}@{offset}", state))
        offset += len(raw) + 1
    now = time.time()
    with ctx.db.transaction() as tx:
        store.add_entries(tx, agent, entries, day_of(now), now)
        store.set_read_bytes(tx, agent, key, start + end, now)
    return len(entries)


def live_agents(ctx: Ctx) -> list[str]:
    """The keys of the live agents: started work-item sessions and running standing ones."""
    conn = ctx.db.connect()
    keys = [
        rec.id
        for status in (session_store.SessionStatus.active, session_store.SessionStatus.paused)
        for rec in session_store.list_sessions(conn, status)
        if rec.started_at is not None
    ]
    keys += [
        f"standing:{rec.name}"
        for rec in standing_store.list_records(conn)
        if rec.status.value == "running"
    ]
    return keys


HEADLESS_OUTPUT = "transcripts"
"""The folder of the state dir the daemon keeps each headless run's output in."""


def read_within(ctx: Ctx, agent: str, path: Path) -> Path | None:
    """The folder PATH, a source of AGENT's usage and conversation, is read only inside
    (``open_agent_file``): a confined agent's own home, where it could have left a link that
    leads out; None for the daemon's own copy of a headless run's output, or an agent that is
    not confined (it runs as the operator)."""
    if path.parent == ctx.state_dir / HEADLESS_OUTPUT:
        return None
    return confined_home(ctx, agent)


def sources(ctx: Ctx, agents: list[str]) -> dict[str, list[Path]]:
    """Where each of AGENTS' harness records its usage (only files that exist): the transcript
    its hooks named and its headless runs' output; else the conversation log its harness keeps
    where nothing names it (Gemini's chat log: ``conversation_log``)."""
    conn = ctx.db.connect()
    hooked = store.transcripts(conn, agents)
    out: dict[str, list[Path]] = {}
    spool = ctx.state_dir / HEADLESS_OUTPUT
    for agent in agents:
        paths = [Path(hooked[agent])] if agent in hooked else []
        headless = spool / f"{agent}.jsonl"
        if os.path.exists(headless):
            paths.append(headless)
        if paths:
            out[agent] = paths
    unnamed = [agent for agent in agents if agent not in out]
    harness_of = attention_store.harnesses(conn, unnamed) if unnamed else {}
    for agent, harness in harness_of.items():
        logged = conversation_log(ctx, agent, harness=harness)
        if logged is not None:
            out[agent] = [logged]
    return out


def conversation_log(
    ctx: Ctx, agent: str, cwd: Path | None = None, harness: str | None = None
) -> Path | None:
    """The file AGENT's harness writes its conversation to when no hook names it
    (``HarnessAdapter.conversation_log``), found from the agent's records: its harness
    (HARNESS, when the caller read it already), its conversation and working directory (CWD,
    when the caller knows it and the record may not: a standing session's default), its own
    home when confined. None when there is none."""
    conn = ctx.db.connect()
    if harness is None:
        row = attention_store.get(conn, agent)
        harness = row.harness if row is not None else ""
    adapter = recorded_adapter(ctx.config, harness)
    if adapter is None or not adapter.keeps_conversation:
        return None
    if agent.startswith(STANDING_PREFIX):
        standing = standing_store.get(conn, agent.removeprefix(STANDING_PREFIX))
        found = None if standing is None else (standing.conversation_id, standing.cwd)
    else:
        rec = session_store.get(conn, agent)
        found = None if rec is None else (rec.harness_session_id, rec.cwd)
    conversation, recorded = found if found is not None else (None, None)
    if conversation is None or not SESSION_ID_RE.match(conversation):
        return None
    env = dict(ctx.config.harness(harness).env)
    home = confined_home(ctx, agent)
    if home is not None:
        env["HOME"] = str(home)
    where = cwd if cwd is not None else Path(recorded) if recorded else None
    return adapter.conversation_log(where, conversation, env)


def meter_agents(ctx: Ctx, agents: list[str]) -> list[str]:
    """Read the new usage of AGENTS; the agents that had some."""
    changed = []
    for agent, paths in sources(ctx, agents).items():
        if sum(read_source(ctx, agent, p) for p in paths):
            changed.append(agent)
    return changed


_ROLLOUT_RE = re.compile(r"\Arollout-.*-([0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})\.jsonl\Z")


def follow_codex_threads(ctx: Ctx, agents: list[str]) -> list[str]:
    """An interactive Codex chooses its thread id itself, and the-loop learns it only from the
    rollout file its turn-complete ``notify`` named: record that thread as the conversation of
    each of AGENTS (a work-item session's ``harnessSessionId``, a standing session's
    conversation id) so that a wake, an ``extend`` or a ``start`` resumes it. The agents whose
    conversation changed."""
    conn = ctx.db.connect()
    changed = []
    for agent, path in store.transcripts(conn, agents).items():
        found = _ROLLOUT_RE.match(Path(path).name)
        if found is None:
            continue
        thread = found.group(1)
        if agent.startswith(STANDING_PREFIX):
            name = agent.removeprefix(STANDING_PREFIX)
            standing = standing_store.get(conn, name)
            if standing is not None and standing.conversation_id != thread:
                with ctx.db.transaction() as tx:
                    standing_store.update(tx, name, conversation_id=thread)
                changed.append(agent)
            continue
        rec = session_store.get(conn, agent)
        if rec is not None and rec.harness_session_id != thread:
            with ctx.db.transaction() as tx:
                session_store.update(
                    tx, agent, harness_session_id=thread, last_event_at=rec.last_event_at
                )
            changed.append(agent)
    return changed
