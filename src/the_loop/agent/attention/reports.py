"""What a hook report may change, checked and applied by the daemon (``agent.attention.channel``).

A report is ``{token, agent, report, kind, data}``: the agent's per-session secret, the agent it
speaks for, a random id, ``hook`` (a Claude Code hook's JSON) or ``codex-notify`` (Codex's
turn-complete JSON). It is taken only when the token's hash is the current (or previous) token
of that very agent, and only when its data is what the harness sends: a known hook event or
notify type, and no field that answers a prompt. Anything else is refused and logged as
``hook.refused`` (with the agent and the reason, never the token). A reported transcript path
is taken only inside the agent's own harness directory (the meter reads usage from it);
otherwise the path is dropped, the rest applied, and ``hook.refused`` logged.

Applied as the hook applied it before: ``UserPromptSubmit`` → working; ``SessionStart`` and
``Stop`` → waiting (with the last message); ``SessionEnd`` → exited; a ``Notification`` asking
something → needs-input or needs-permission; ``PermissionRequest`` opens the permission prompt
with its tool and input (once per report id: a resend finds the same prompt); Codex's
``agent-turn-complete`` → waiting (unless its rollout says a later turn of the conversation
already began, or it is of the thread Codex titles the conversation in). A report carries when
its hook started (``at``), and is recorded as applied at that time; the report of a hook the
harness does not wait for (``SessionStart``, ``UserPromptSubmit``) is dropped when a hook that
started later was applied first (it arrived late: a prompt's report after its turn's ``Stop``).
On PostgreSQL the conversation's transcript is kept at the end of a turn (again once the turn's
last message reaches the file, which Claude Code writes after its ``Stop`` hook ran). A turn that
failed for good (``StopFailure`` of ``LASTING_ERRORS``) queues again what its model never saw
(``_resend``, decision 0082). Blocking: the channel runs these in worker threads.

Long because a report is checked, ordered against the others and applied in one place, for
every hook event and Codex's notify: splitting it would spread one transaction's rules.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from the_loop import events as ev
from the_loop.agent.attention.spawn import DELIVERY, token_hash
from the_loop.agent.spend.transcripts import new_lines
from the_loop.agent_files import open_agent_file
from the_loop.faults import pause_point
from the_loop.harness.claude_hooks import ASYNC_HOOK_EVENTS
from the_loop.hook import CODEX_NOTIFY, CODEX_TURN, KIND_HOOK, PERMISSION
from the_loop.store import attention as store
from the_loop.store import hook_tokens, prompts
from the_loop.store import transcripts as kept
from the_loop.store.hook_tokens import HookToken

if TYPE_CHECKING:
    from the_loop.store import Database

SOURCE = "hook"
INPUT_LIMIT = 2000
ENVELOPE = frozenset({"token", "agent", "report", "kind", "data", "at"})
ASYNC_EVENTS = frozenset((*ASYNC_HOOK_EVENTS, "StopFailure"))
"""Hooks the harness runs without waiting (``StopFailure`` is fire-and-forget by Claude
Code's own account): their report may arrive after a later hook's, so it is dropped when a
report of a hook that started after it was applied already."""
CLAUDE_EVENTS = frozenset(
    {
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        PERMISSION,
        "PostToolUse",
        "PostToolUseFailure",
        "Notification",
        "Stop",
        "StopFailure",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
        "SessionEnd",
    }
)
"""The hook events Claude Code sends; a report naming any other is refused."""
ANSWERS = frozenset(
    {
        "decision",
        "answer",
        "behavior",
        "permissionDecision",
        "hookSpecificOutput",
        "allow",
        "deny",
        "actor",
        "via",
    }
)
"""Fields that would answer a prompt: no harness sends them in a hook's input (Claude Code's
own ``prompt_id`` names its user prompt, not one of ours)."""
QUESTION_TYPES = frozenset({"elicitation_dialog", "agent_needs_input"})
"""Notifications that mean a person is asked something. Claude Code's ``idle_prompt`` (the turn
ended a while ago) is not one: a finished turn with nothing pending is ``waiting``."""
_TOKEN = re.compile(r"\A[0-9a-f]{64}\Z")
_REPORT_ID = re.compile(r"\A[0-9A-Za-z_-]{8,64}\Z")


class Refused(Exception):
    """A report that is not taken; the reason is what the hook and ``hook.refused`` say."""


@dataclass(frozen=True, slots=True)
class Report:
    """A checked report: who sent it (the token's agent), its id, kind and data."""

    who: HookToken
    id: str
    kind: str
    data: dict[str, Any]
    at: float | None = None
    """When the hook started (this host's clock); None from a hook that does not say."""

    @property
    def permission(self) -> bool:
        return self.kind == KIND_HOOK and self.data.get("hook_event_name") == PERMISSION


def check(db: Database, raw: object) -> Report:
    """RAW (a parsed report line) as a ``Report``; ``Refused`` (logged as ``hook.refused``)
    when its token is not its agent's, or its data is not what a harness sends."""
    if not isinstance(raw, dict) or not ENVELOPE.issuperset(raw):
        raise _refuse(db, None, "not a hook report")
    agent, token, report_id = raw.get("agent"), raw.get("token"), raw.get("report")
    claimed = agent if isinstance(agent, str) else None
    if not isinstance(token, str) or not _TOKEN.match(token):
        raise _refuse(db, claimed, "no valid token")
    if not isinstance(report_id, str) or not _REPORT_ID.match(report_id):
        raise _refuse(db, claimed, "no valid report id")
    who = hook_tokens.lookup(db.connect(), token_hash(token))
    if who is None:
        raise _refuse(db, claimed, "unknown token")
    if claimed is None or not hmac.compare_digest(who.agent, claimed):
        raise _refuse(db, who.agent, f"the report names another session ({claimed!r})")
    kind, data = raw.get("kind"), raw.get("data")
    if not isinstance(data, dict):
        raise _refuse(db, who.agent, "no data")
    answers = sorted(ANSWERS.intersection(data))
    if answers:
        raise _refuse(db, who.agent, f"a hook report cannot answer a prompt ({answers[0]})")
    if kind == KIND_HOOK and data.get("hook_event_name") not in CLAUDE_EVENTS:
        raise _refuse(db, who.agent, f"unknown hook event {data.get('hook_event_name')!r}")
    if kind == CODEX_NOTIFY and data.get("type") != CODEX_TURN:
        raise _refuse(db, who.agent, f"unknown notify type {data.get('type')!r}")
    if kind not in (KIND_HOOK, CODEX_NOTIFY):
        raise _refuse(db, who.agent, f"unknown report kind {kind!r}")
    at = raw.get("at")
    if at is not None and (isinstance(at, bool) or not isinstance(at, int | float)):
        raise _refuse(db, who.agent, "a report's start time is not a number")
    return Report(who, report_id, str(kind), data, None if at is None else float(at))


def _refuse(db: Database, agent: str | None, reason: str) -> Refused:
    """Log ``hook.refused`` for AGENT (as far as known) and return the error to raise."""
    refused(db, agent, reason)
    return Refused(reason)


def refused(db: Database, agent: str | None, reason: str) -> None:
    """Log one ``hook.refused``: AGENT (None: unknown) and REASON, never the token."""
    standing = agent.removeprefix(store.STANDING_PREFIX) if agent else None
    is_standing = bool(agent and agent.startswith(store.STANDING_PREFIX))
    ev.emit(
        db,
        "hook.refused",
        source=SOURCE,
        standing=standing if is_standing else None,
        session_id=None if is_standing else agent,
        agent=agent or "",
        reason=reason,
    )


def apply(
    db: Database,
    report: Report,
    shared: bool,
    waits: Callable[[store.Prompt], bool] = lambda _: False,
) -> str | None:
    """Apply REPORT once (a report id seen before changes nothing); the id of the permission
    prompt it opened (or opened before), else None. WAITS tells whether a
    ``PermissionRequest`` hook waits on a prompt (the channel's)."""
    done = hook_tokens.applied(db.connect(), report.id)
    if done is not None:
        return done[1]
    transcript = _transcript(db, report)
    last = _last_message(report, transcript)
    with db.transaction() as tx:
        done = hook_tokens.applied(tx, report.id)
        if done is not None:
            return done[1]
        skip = _late(tx, report) or _behind(report, transcript) or _aside(report, transcript)
        prompt_id = None if skip else _write(tx, report, transcript, last, waits)
        resent = 0 if skip else _resend(tx, report)
        at = time.time() if report.at is None else report.at
        if report.kind == KIND_HOOK and report.data.get("hook_event_name") == "UserPromptSubmit":
            store.submitted(tx, report.who.agent, at)  # late or not: the prompt was taken
        hook_tokens.record(tx, report.id, report.who.agent, prompt_id, at)
    if resent:
        where = _where(report)
        session = None if where["standing"] else report.who.agent
        ev.emit(db, "session.resent", source=SOURCE, session_id=session, count=resent, **where)
    event = report.data.get("hook_event_name")
    if shared and transcript and event in ("Stop", "SessionEnd"):
        keep_transcript(db, report, transcript)
        pause_point("after-turn-kept")  # the harness may write the turn's last message now
    return prompt_id


FLUSH_SECONDS = 30.0
"""How long after acknowledging a ``Stop`` the daemon waits for the turn's last message to
reach the transcript file before it keeps what the file holds. Claude Code writes it within
about 0.2 s of the hook's end on an idle host; a busy one took more than 2 s (the node that
died next then handed over a conversation without its last reply)."""


def unflushed(report: Report, shared: bool) -> str | None:
    """The transcript to keep again once REPORT is acknowledged: Claude Code runs its ``Stop``
    hook before it writes the turn's last message to the transcript, so the copy kept while
    applying the report can lack it (until the next turn). The path when REPORT is such a
    ``Stop`` on a shared database that carries its message; None otherwise. Asked whatever
    the file holds now: the message may have reached the file after that copy was taken and
    before this look, and the copy would still lack it (``keep_when_flushed`` then keeps it
    at its first look)."""
    if not shared or report.kind != KIND_HOOK or report.data.get("hook_event_name") != "Stop":
        return None
    path, last = report.data.get("transcript_path"), report.data.get("last_assistant_message")
    root = report.who.transcript_root
    if not (isinstance(path, str) and isinstance(last, str) and last and root):
        return None
    return path if _inside(path, root) else None


def flushed(path: str, last: str, within: str | None) -> bool:
    """Whether the transcript at PATH (inside WITHIN, when given) ends with the assistant
    message LAST."""
    return transcript_last_message(path, within) == last[-4000:]


def _late(tx: Any, report: Report) -> bool:
    """Whether REPORT is of a hook nobody waited for and a later-started hook of its agent
    was applied already, or a dialog it would move on opened after the hook began; or a
    finished Codex turn whose notify began before a prompt was delivered (the agent works on
    that one: Codex takes input as soon as its turn ends, before its notify program reports)."""
    if report.at is None:
        return False
    if report.kind == CODEX_NOTIFY:
        current = store.get(tx, report.who.agent)
        return current is not None and current.signal == DELIVERY and current.since > report.at
    if report.data.get("hook_event_name") not in ASYNC_EVENTS:
        return False
    if hook_tokens.applied_since(tx, report.who.agent, report.at):
        return True
    waiting = store.pending_of(tx, report.who.agent)
    return waiting is not None and waiting.created_at > report.at


def _behind(report: Report, transcript: str | None) -> bool:
    """Whether REPORT is a Codex notify of a turn before the newest one of its conversation:
    the rollout's last turn boundary (a start, an end or an interruption) is another turn's.
    Codex takes a delivered prompt and starts its turn as soon as the one before ends, and may
    start that one's notify program only after (too late for ``_late`` to know), even after
    the next turn ended and was reported: applied then, it would put the older turn's last
    message back."""
    if report.kind != CODEX_NOTIFY or transcript is None:
        return False
    turn = report.data.get("turn-id")
    newest = codex_newest_turn(transcript, report.who.transcript_root)
    return isinstance(turn, str) and newest is not None and newest != turn


def codex_newest_turn(rollout: str, within: str | None) -> str | None:
    """The id of the turn of the last turn boundary Codex's ROLLOUT holds (``task_started``,
    ``task_complete`` or ``turn_aborted``); None when it holds none."""
    for entry in _last_entries(rollout, within):
        payload = entry.get("payload")
        if entry.get("type") != "event_msg" or not isinstance(payload, dict):
            continue
        if payload.get("type") not in ("task_started", "task_complete", "turn_aborted"):
            continue
        started = payload.get("turn_attribution")
        turn = payload.get("turn_id") or (
            started.get("turn_id") if isinstance(started, dict) else None
        )
        return turn if isinstance(turn, str) and turn else None
    return None


def _aside(report: Report, transcript: str | None) -> bool:
    """Whether REPORT is a Codex notify of a thread that is not the agent's conversation:
    Codex titles a new conversation in a thread of its own, which leaves no rollout, and
    reports its end like a turn's, the title as its last message. Known only when the agent's
    Codex home is (the rollout of its conversation is looked for there: ``_transcript``)."""
    return report.kind == CODEX_NOTIFY and bool(report.who.transcript_root) and not transcript


def _transcript(db: Database, report: Report) -> str | None:
    """The transcript REPORT points at, when it lies inside the agent's own harness
    directory; a path outside it is dropped (``hook.refused``)."""
    root = report.who.transcript_root
    if report.kind == CODEX_NOTIFY:
        thread = report.data.get("thread-id")
        return codex_rollout(root, thread) if root and isinstance(thread, str) else None
    path = report.data.get("transcript_path")
    if not isinstance(path, str) or not path:
        return None
    if root and _inside(path, root):
        return path
    refused(db, report.who.agent, "transcript path outside the agent's own harness directory")
    return None


def _inside(path: str, root: str) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real.startswith(top.rstrip(os.sep) + os.sep)


def _where(report: Report) -> dict[str, Any]:
    agent = report.who.agent
    standing = agent.startswith(store.STANDING_PREFIX)
    return {
        "work_item": None if standing else report.who.work_item,
        "standing": agent.removeprefix(store.STANDING_PREFIX) if standing else None,
    }


def _write(
    tx: Any,
    report: Report,
    transcript: str | None,
    last: str | None,
    waits: Callable[[store.Prompt], bool],
) -> str | None:
    """Record what REPORT says in TX; the permission prompt it opened, if any. A prompt
    submitted while a ``PermissionRequest`` hook waits on the agent's dialog (WAITS) leaves
    the dialog's wait as it is: Claude Code sends a message typed while it worked along at its
    next tool call, dialog up; taking that for the dialog's end closed the prompt the hook
    waited on, so its answer never reached the agent (and a vaguer prompt replaced it)."""
    agent, data, now = report.who.agent, report.data, time.time()

    def write(state: str, signal: str, rule: str, **kw: Any) -> store.Change | None:
        return store.set_state(
            tx, agent, state, signal, rule, now=now, source=SOURCE, transcript=transcript,
            **_where(report), **kw,
        )  # fmt: skip

    if report.kind == CODEX_NOTIFY:
        write(store.WAITING, f"codex-notify:{CODEX_TURN}", "the turn finished", last_message=last)
        return None
    event = str(data.get("hook_event_name"))
    signal = f"claude-hook:{event}"
    if event == "UserPromptSubmit":
        waited = store.pending_of(tx, agent)
        if waited is None or not waits(waited):
            write(store.WORKING, signal, "a prompt was submitted")
    elif event == "SessionStart":
        write(store.WAITING, signal, "the agent started and waits for input")
    elif event == "Stop":
        write(store.WAITING, signal, "the turn finished", last_message=last)
        store.model_answered(tx, agent, report.at or now)
    elif event == "StopFailure":
        _failed(data, last, signal, write)
    elif event == "SessionEnd":
        write(store.EXITED, signal, "the agent's session ended")
    elif event == "Notification":
        _notification(data, signal, write)
    elif event == PERMISSION:
        store.model_answered(tx, agent, report.at or now)  # the model asked for a tool
        return _permission(tx, agent, data, signal, write)
    return None


LASTING_ERRORS = frozenset(
    {
        "authentication_failed",
        "oauth_org_not_allowed",
        "account_on_hold",
        "verification_required",
        "billing_error",
        "model_not_found",
        "cloud_credential_error",
    }
)
"""``StopFailure`` errors that last until someone fixes them (a login, a key, credit, the
model's name): messages wait. Any other (``rate_limit``, ``overloaded``, ``server_error``,
``invalid_request``, …) may pass: the next message is its retry."""


def _failed(data: dict[str, Any], shown: str | None, signal: str, write: Any) -> None:
    """An API error ended the turn (Claude Code's ``StopFailure``): ``blocked``, its reason
    the error's kind and what the agent showed, until the next turn starts or the agent
    restarts; it holds messages only while the error lasts (``LASTING_ERRORS``)."""
    kind = _error_kind(data)
    text = " ".join((shown or str(data.get("error_details") or "")).split())[:INPUT_LIMIT]
    named = "" if kind == "unknown" else f"{kind}: "  # "unknown" adds nothing to the text
    prompt = store.NewPrompt("blocked", text=f"{named}{text}" if text else kind)
    lasting = store.LASTING_FAILURE if kind in LASTING_ERRORS else store.PASSING_FAILURE
    write(store.BLOCKED, signal, f"{lasting} ({kind})", prompt=prompt)


def _error_kind(data: dict[str, Any]) -> str:
    """The kind of API error a ``StopFailure`` reports (``authentication_failed``, …)."""
    return str(data.get("error") or "unknown")


RESEND_NOTE = (
    "[the-loop: this message reached you before, when you could not work (the turn failed "
    "before your model saw it); it is sent again now. If the conversation shows you acted on "
    "it already, go on from there and do not do it twice.]\n\n"
)


def _resend(tx: Any, report: Report) -> int:
    """When REPORT is a turn that failed for good (a ``StopFailure`` of ``LASTING_ERRORS``):
    queue again every message delivered since the agent's model last answered (or it
    started), held like any other until it can work, then delivered once more
    (``RESEND_NOTE`` in front). A lost request is worse than one read twice. Returns how many."""
    data = report.data
    if report.kind != KIND_HOOK or data.get("hook_event_name") != "StopFailure":
        return 0
    if _error_kind(data) not in LASTING_ERRORS:
        return 0  # the next message is its retry
    agent = report.who.agent
    return prompts.resend(tx, agent, store.turn_at(tx, agent), RESEND_NOTE)


def _notification(data: dict[str, Any], signal: str, write: Any) -> None:
    kind = str(data.get("notification_type") or "")
    message = str(data.get("message") or "")
    if kind == "permission_prompt":
        prompt = store.NewPrompt("permission", text=message)
        write(store.NEEDS_PERMISSION, signal, f"notification {kind}", prompt=prompt)
    elif kind in QUESTION_TYPES:
        prompt = store.NewPrompt("question", text=message)
        write(store.NEEDS_INPUT, signal, f"notification {kind}", prompt=prompt)


def _permission(tx: Any, agent: str, data: dict[str, Any], signal: str, write: Any) -> str | None:
    tool = str(data.get("tool_name") or "")
    tool_input = data.get("tool_input")
    shown = json.dumps(tool_input, ensure_ascii=False, separators=(",", ":"))[:INPUT_LIMIT]
    asks = question_text(tool, tool_input)
    if asks is not None:  # Claude Code's question dialog: a question to a person, not a tool
        prompt = store.NewPrompt("question", tool=tool, input=shown, text=asks)
        change = write(store.NEEDS_INPUT, signal, f"question dialog ({tool})", prompt=prompt)
    else:
        prompt = store.NewPrompt(
            "permission", tool=tool, input=shown, text=summary(tool, tool_input)
        )
        rule = f"permission request for {tool}"
        change = write(store.NEEDS_PERMISSION, signal, rule, prompt=prompt)
    if change is not None and change.prompt_id is not None:
        return str(change.prompt_id)
    pending = store.pending_of(tx, agent)  # the same dialog reported again keeps its prompt
    if pending is not None and pending.kind == prompt.kind and pending.tool == tool:
        return pending.id
    return None


def question_text(tool: str, tool_input: Any) -> str | None:
    """The question TOOL asks a person, its choices numbered as the dialog numbers them (the
    last one types an answer); None when TOOL is not a question."""
    if tool != store.QUESTION_TOOL or not isinstance(tool_input, dict):
        return None
    lines: list[str] = []
    for item in tool_input.get("questions") or []:
        if not isinstance(item, dict):
            continue
        lines.append(str(item.get("question") or ""))
        options = [o for o in item.get("options") or [] if isinstance(o, dict)]
        for n, option in enumerate(options, 1):
            about = f" — {option['description']}" if option.get("description") else ""
            lines.append(f"{n}. {option.get('label', '')}{about}")
        lines.append(f"{len(options) + 1}. (type an answer)")
    return "\n".join(lines)[:INPUT_LIMIT] or None


def finish(db: Database, prompt_id: str) -> None:
    """The hook took the decision of PROMPT_ID: the agent goes on working (when that prompt
    is still the one it waits on) and the prompt is closed as ``answered``."""
    now = time.time()
    with db.transaction() as tx:
        found = store.get_prompt(tx, prompt_id)
        if found is None or found.decision is None:
            return
        store.took(tx, prompt_id, now)  # before the state: a wait left with it untaken moved on
        row = store.get(tx, found.agent)
        if row is not None and row.prompt is not None and row.prompt.id == prompt_id:
            done = "allowed" if found.decision == "allow" else "denied"
            who = f"{found.actor} via {found.via}"
            store.set_state(
                tx,
                found.agent,
                store.WORKING,
                f"claude-hook:{PERMISSION}",
                f"{found.tool or 'the tool'} {done} by {who}",
                now=now,
                source=SOURCE,
            )


def decision_output(found: store.Prompt) -> str:
    """What the waiting hook prints for the decided prompt FOUND: Claude Code's decision."""
    if found.decision == "allow":
        return json.dumps(decision_json("allow"))
    message = f"Denied through the-loop by {found.actor} via {found.via}."
    return json.dumps(decision_json("deny", message))


def decision_json(behavior: str, message: str = "") -> dict[str, Any]:
    """Claude Code's answer to a ``PermissionRequest`` hook (allow, or deny with MESSAGE)."""
    decision: dict[str, Any] = {"behavior": behavior}
    if behavior == "deny" and message:
        decision["message"] = message
    return {"hookSpecificOutput": {"hookEventName": PERMISSION, "decision": decision}}


def summary(tool: str, tool_input: Any) -> str:
    """One line saying what TOOL will do: the command, the file, or its input."""
    if isinstance(tool_input, dict):
        for key in ("command", "file_path", "path", "url", "pattern"):
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                return f"{tool}: {value}"[:INPUT_LIMIT]
    shown = json.dumps(tool_input, ensure_ascii=False, separators=(",", ":"))
    return f"{tool}: {shown}"[:INPUT_LIMIT]


def _last_message(report: Report, transcript: str | None) -> str | None:
    """The agent's last message: from the report itself, else the transcript's last assistant
    text; None when neither has one."""
    key = "last-assistant-message" if report.kind == CODEX_NOTIFY else "last_assistant_message"
    given = report.data.get(key)
    if isinstance(given, str) and given:
        return given[-4000:]
    if report.kind == CODEX_NOTIFY or transcript is None:
        return None
    return transcript_last_message(transcript, report.who.transcript_root)


def _last_entries(
    path: str, within: str | None, tail: int = 256 * 1024
) -> Iterator[dict[str, Any]]:
    """The JSON objects of the last TAIL bytes of the JSONL file at PATH, last first (none
    when it cannot be read, or is not inside WITHIN: ``open_agent_file``)."""
    try:
        with open_agent_file(path, within) as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - tail))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield entry


def transcript_last_message(path: str, within: str | None) -> str | None:
    """The text of the last assistant message in the JSONL transcript at PATH (inside WITHIN,
    when given)."""
    for entry in _last_entries(path, within):
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content[-4000:]
        texts = [
            b.get("text", "")
            for b in content or []
            if isinstance(b, dict) and b.get("type") == "text"
        ]
        if any(texts):
            return "".join(texts)[-4000:]
    return None


def keep_transcript(db: Database, report: Report, path: str) -> str | None:
    """At the end of a turn on a shared database, copy the lines the conversation's
    transcript PATH gained since the last copy into the store (``store.transcripts``), so
    that another node can resume it; the outcome, None when there was nothing to copy."""
    conversation = report.data.get("session_id")
    if not isinstance(conversation, str) or not conversation:
        return None
    found = kept.get(db.connect(), conversation)
    if found is not None and found.over_cap:
        return None
    start = 0 if found is None else found.bytes
    chunk, size = new_lines(path, start, kept.MAX_BYTES, report.who.transcript_root)
    if not chunk and size <= kept.MAX_BYTES:
        return None
    where = _where(report)
    with db.transaction() as tx, contextlib.suppress(ValueError):  # not UTF-8: not kept
        return kept.append(
            tx,
            conversation,
            report.who.agent,
            start,
            chunk,
            now=time.time(),
            seen=size,
            work_item=where["work_item"],
            standing=where["standing"],
        )
    return None


def codex_rollout(home: str, thread: str) -> str | None:
    """The rollout file Codex writes thread THREAD's events to (its usage is read from
    there): ``<HOME>/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl``, the newest day
    first (a thread's file stays in the directory of the day it began); None when not found."""
    if not thread or not all(c.isalnum() or c == "-" for c in thread) or len(thread) > 100:
        return None
    suffix = f"-{thread}.jsonl"
    for day in _days(os.path.join(home, "sessions")):
        try:
            names = os.listdir(day)
        except OSError:
            continue
        for name in names:
            if name.startswith("rollout-") and name.endswith(suffix):
                return os.path.join(day, name)
    return None


def _days(root: str) -> list[str]:
    """ROOT's YYYY/MM/DD directories, newest first."""
    out: list[str] = []
    for depth in range(3):
        parents = [root] if depth == 0 else out
        found: list[str] = []
        for parent in parents:
            try:
                found += [os.path.join(parent, n) for n in sorted(os.listdir(parent), reverse=True)]
            except OSError:
                continue
        out = found
    return out
