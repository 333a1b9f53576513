"""The ``attention`` and ``attention_prompts`` tables: what each agent is doing for a person.

One row per agent key (a work-item session id, or ``standing:<name>``): its state, since when,
the signal and rule that decided it, the agent's last message and the prompt it is waiting on.
Each wait on a person (a question or a permission) is one ``attention_prompts`` row with a short
id; the first answer recorded for it wins, and its notice and follow-up are recorded on it.

A state change writes its events (``session.attention_changed``, and ``session.awaiting_input``
when a wait on a person begins) in the same transaction.

Long because both tables' statements live here: a state change opens, closes or keeps a prompt
in the same transaction.
"""

from __future__ import annotations

import json
import os
import sqlite3

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook imports this module: no json (re), sqlite3 (datetime) or typing
    from typing import Any

    from the_loop.store.conn import Connection, OwnConnection

WORKING = "working"
WAITING = "waiting"
NEEDS_INPUT = "needs-input"
NEEDS_PERMISSION = "needs-permission"
EXITED = "exited"
BLOCKED = "blocked"
STATES = (
    WORKING, WAITING, NEEDS_INPUT, NEEDS_PERMISSION, BLOCKED, "over-budget", "suspended", EXITED,
)  # fmt: skip
HUMAN = (NEEDS_INPUT, NEEDS_PERMISSION)
NEEDS_PERSON = (NEEDS_INPUT, NEEDS_PERMISSION, BLOCKED)
"""The states a person has to act on (the Attention lists, the delivery gate)."""
CRASH_SIGNAL = "reconciler"
"""The signal of ``blocked`` for an agent that is gone: a delivery revives it, so it holds
nothing back."""
SCREEN_SIGNAL = "screen"
"""The signal of what the screen detector read; a ``blocked`` it read (a sign-in screen)
holds deliveries while the screen shows it."""
LASTING_FAILURE = "the agent cannot work until this is fixed"
"""The rule of a ``blocked`` a failed turn's hook reported for an error that lasts until
someone fixes it (no login, no credit): it holds deliveries as a sign-in screen does."""
PASSING_FAILURE = "the turn failed on an API error"
"""The rule of a ``blocked`` for an error the next turn may not meet (a rate limit, an
overloaded API), or one read from a failed turn's line with the agent's input box under it:
the next message is its retry."""
TICK = 0.02
"""Seconds a hook's reported start may lie before the moment it started (``the_loop.hook.
started_at`` knows it to the kernel's clock tick, 10 ms here), with room to spare."""
HELD = ("over-budget", "suspended")
"""States only the spend policy (source ``spend``) sets and lifts: a hook or the screen
detector reporting the stopped harness (``exited``, ``waiting``) does not override them."""
STANDING_PREFIX = "standing:"
QUESTION_TOOL = "AskUserQuestion"
"""Claude Code's tool that shows a person a question with numbered choices."""
_INFO, _DEBUG = 20, 10
# Plain classes, not dataclasses: the hook imports this module on every hook of an agent, and
# ``dataclasses`` (with ``inspect``) would double its start-up.


GONE = "gone"
"""The outcome of a prompt whose agent stopped (or was lost) before it was answered: it
exited, or it was found gone (``set_gone``)."""
NOT_TAKEN = (
    "but the agent never confirmed it took that answer: its dialog was closed in the agent's "
    "terminal first"
)
NOT_TAKEN_GONE = "but the agent never took that answer: it stopped first"


def not_taken(prompt: Prompt) -> str:
    """What the follow-ups on GitHub and Slack add to PROMPT's ``untaken`` answer."""
    return NOT_TAKEN_GONE if prompt.outcome == GONE else NOT_TAKEN


def answered_by(prompt: Prompt, name: str) -> str:
    """Who answered PROMPT, for its follow-ups (NAME: its actor as the surface writes a
    person): "by alice (via slack)", or where it came from when no person was named (the
    actor is then the surface itself: "from the dashboard")."""
    if prompt.actor != prompt.via:
        return f"by {name} (via {prompt.via})"
    return {"dashboard": "from the dashboard", "api": "through the API", "cli": "from the CLI"}.get(
        prompt.via or "", f"via {prompt.via}"
    )


class Prompt:
    """One wait on a person: a question (``kind`` question) or a tool awaiting permission."""

    FIELDS = (
        "id", "agent", "kind", "tool", "input", "text", "created_at", "decision", "actor", "via",
        "answered_at", "closed_at", "outcome", "notice_at", "followup_at",
    )  # fmt: skip
    __slots__ = tuple(sorted(FIELDS))
    id: str
    agent: str
    kind: str
    tool: str
    input: str
    text: str
    created_at: float
    decision: str | None
    actor: str | None
    via: str | None
    answered_at: float | None
    closed_at: float | None
    outcome: str | None
    notice_at: float | None
    followup_at: float | None

    def __init__(self, row: tuple[Any, ...]) -> None:
        for name, value in zip(self.FIELDS, row, strict=True):
            setattr(self, name, value)

    @property
    def pending(self) -> bool:
        return self.decision is None and self.closed_at is None

    @property
    def untaken(self) -> bool:
        """An answer was recorded, but the prompt closed without the agent's confirming it took
        it (its hook had left, and its dialog went from the screen: ``agent.attention.left``;
        or the agent moved on, or ended, first)."""
        return self.decision is not None and self.outcome in ("moved-on", GONE)

    @property
    def choices(self) -> list[str] | None:
        """The labels of a one-question dialog's numbered choices (the number after the last
        types an answer); None for any other prompt, and for a dialog of several questions or
        whose input was cut (answered in the agent's terminal)."""
        if self.tool != QUESTION_TOOL:
            return None
        try:
            data = json.loads(self.input)
        except ValueError:
            return None
        questions = data.get("questions") if isinstance(data, dict) else None
        if not isinstance(questions, list) or len(questions) != 1:
            return None
        options = questions[0].get("options") if isinstance(questions[0], dict) else None
        return [str(o.get("label", "")) for o in options or [] if isinstance(o, dict)]

    @property
    def detail(self) -> str:
        """What a notice quotes of this prompt (``detail_of``)."""
        return detail_of(self.text, self.input)

    def __repr__(self) -> str:
        return f"Prompt({self.id!r}, {self.kind!r}, {self.tool!r}, pending={self.pending})"


def detail_of(text: str, given: str) -> str:
    """What a notice quotes of a prompt: its TEXT, and under it its input GIVEN when a screen
    pattern read one (Gemini's question line, then the command it asks to run). A hook's
    input is the JSON object its text sums up, and is not repeated (a command that merely
    starts with ``{``, as ``{ make; } > log`` does, is shown)."""
    if text and given and not _json_object(given):
        return f"{text}\n{given}"
    return text or given


def _json_object(given: str) -> bool:
    if not given.startswith("{"):
        return False
    try:
        return isinstance(json.loads(given), dict)
    except ValueError:
        return False


class Row:
    """One agent's attention as stored; ``prompt`` is the wait it is in, if any."""

    FIELDS = (
        "agent", "work_item", "standing", "harness", "requester", "state", "since", "signal",
        "rule", "last_message", "prompt", "updated_at",
    )  # fmt: skip
    __slots__ = tuple(sorted(FIELDS))
    agent: str
    work_item: str | None
    standing: str | None
    harness: str
    requester: str
    state: str
    since: float
    signal: str
    rule: str
    last_message: str
    prompt: Prompt | None
    updated_at: float

    def __init__(self, row: tuple[Any, ...], prompt: Prompt | None) -> None:
        for name, value in zip(self.FIELDS, (*row[:10], prompt, row[11]), strict=True):
            setattr(self, name, value)

    @property
    def gone(self) -> bool:
        """Whether its agent was recorded gone (``set_gone``): only starting it again lifts
        that."""
        return self.state == BLOCKED and self.signal == CRASH_SIGNAL


class NewPrompt:
    """A wait to open: its kind (question or permission), tool, input and text."""

    __slots__ = ("input", "kind", "text", "tool")

    def __init__(self, kind: str, tool: str = "", input: str = "", text: str = "") -> None:
        self.kind, self.tool, self.input, self.text = kind, tool, input, text


class Change:
    """What ``set_state`` did: the state before and after, and the prompt it opened."""

    __slots__ = ("after", "before", "prompt_id")

    def __init__(self, before: str | None, after: str, prompt_id: str | None) -> None:
        self.before, self.after, self.prompt_id = before, after, prompt_id


def connect(path: str) -> OwnConnection:
    """An autocommit connection to the SQLite database at PATH, set up as ``store.db`` sets
    its own (WAL, commits not synced one by one), for a process that only writes attention."""
    conn = sqlite3.connect(path, timeout=10, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


_ROW = (
    "agent, work_item, standing, harness, requester, state, since, signal, rule, last_message,"
    " prompt_id, updated_at"
)
_PROMPT = (
    "id, agent, kind, tool, input, text, created_at, decision, actor, via, answered_at,"
    " closed_at, outcome, notice_at, followup_at"
)


def _prompt(row: tuple[Any, ...] | None) -> Prompt | None:
    return None if row is None else Prompt(row)


def get_prompt(conn: Connection, prompt_id: str) -> Prompt | None:
    """The prompt PROMPT_ID (answered, closed or pending), None when there is none."""
    cur = conn.execute(f"SELECT {_PROMPT} FROM attention_prompts WHERE id = ?", (prompt_id,))
    return _prompt(cur.fetchone())


def _select_in(conn: Connection, sql: str, values: list[str]) -> list[tuple[Any, ...]]:
    """The rows of SQL, whose ``{marks}`` is the placeholders of an ``IN`` list, over VALUES:
    one query per 500 of them."""
    found: list[tuple[Any, ...]] = []
    for start in range(0, len(values), 500):
        chunk = values[start : start + 500]
        found += conn.execute(sql.format(marks=", ".join("?" * len(chunk))), chunk).fetchall()
    return found


def get_prompts(conn: Connection, prompt_ids: list[str]) -> dict[str, Prompt]:
    """The prompts of PROMPT_IDS that exist, by id."""
    sql = f"SELECT {_PROMPT} FROM attention_prompts WHERE id IN ({{marks}})"
    return {str(r[0]): Prompt(r) for r in _select_in(conn, sql, prompt_ids)}


def _row(conn: Connection, values: tuple[Any, ...]) -> Row:
    prompt = get_prompt(conn, values[10]) if values[10] else None
    return Row(values, prompt)


def get(conn: Connection, agent: str) -> Row | None:
    """AGENT's attention row, None when nothing was recorded for it yet."""
    found = conn.execute(f"SELECT {_ROW} FROM attention WHERE agent = ?", (agent,)).fetchone()
    return None if found is None else _row(conn, found)


def rows(
    conn: Connection, agents: list[str] | None = None, states: tuple[str, ...] = ()
) -> list[Row]:
    """Every attention row (or those of AGENTS; or, without AGENTS, those in one of STATES),
    oldest ``since`` first. A pass asks only the states it acts on: the rows of sessions
    closed long ago are not read (or their prompts looked up) on every pass."""
    if agents is None:
        marks = ", ".join("?" * len(states))
        where = f" WHERE state IN ({marks})" if states else ""
        sql = f"SELECT {_ROW} FROM attention{where} ORDER BY since, agent"
        found = conn.execute(sql, states).fetchall()
    else:  # only AGENTS' rows are read: a list of 100 sessions reads 100, not every one kept
        found = _select_in(conn, f"SELECT {_ROW} FROM attention WHERE agent IN ({{marks}})", agents)
        found.sort(key=lambda r: (r[6], r[0]))
    return [_row(conn, r) for r in found]


def harnesses(conn: Connection, agents: list[str]) -> dict[str, str]:
    """The harness each of AGENTS was last started with (those recorded)."""
    sql = "SELECT agent, harness FROM attention WHERE agent IN ({marks})"
    return {str(r[0]): str(r[1]) for r in _select_in(conn, sql, agents)}


def agents_in(conn: Connection, states: tuple[str, ...]) -> list[tuple[str, str]]:
    """(agent, state) of every row in one of STATES (no prompt is looked up)."""
    marks = ", ".join("?" * len(states))
    found = conn.execute(f"SELECT agent, state FROM attention WHERE state IN ({marks})", states)
    return [(str(a), str(st)) for a, st in found.fetchall()]


def holds(row: Row) -> bool:
    """Whether ROW's ``blocked`` holds deliveries: one read from the screen, or a lasting
    failure a hook reported; not a passing failure, nor a harness that exited (the next
    message restarts it)."""
    if row.state != BLOCKED or row.rule.startswith(PASSING_FAILURE):
        return False
    return row.signal == SCREEN_SIGNAL or row.rule.startswith(LASTING_FAILURE)


def register(
    tx: Connection,
    agent: str,
    *,
    work_item: str | None,
    standing: str | None,
    harness: str,
    requester: str,
    now: float,
) -> None:
    """Record AGENT (at spawn): its item or standing name, harness and requester, and that it
    started at NOW (``turn_at``: nothing delivered before reaches the new agent unanswered).
    A known agent keeps its state; an empty REQUESTER keeps the recorded one."""
    tx.execute(
        "INSERT INTO attention (agent, work_item, standing, harness, requester, state, since,"
        " signal, rule, updated_at, turn_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'spawn', 'the agent"
        " was started', ?, ?) ON CONFLICT (agent) DO UPDATE SET harness = excluded.harness,"
        " requester = CASE WHEN excluded.requester != '' THEN excluded.requester"
        " ELSE attention.requester END, updated_at = excluded.updated_at,"
        " turn_at = excluded.turn_at",
        (agent, work_item, standing, harness, requester, WORKING, now, now, now),
    )


def model_answered(tx: Connection, agent: str, at: float) -> None:
    """AGENT's model answered at AT (a turn finished, a tool was asked for): what was delivered
    before reached it. ``register`` (a spawn) sets the same mark."""
    tx.execute(
        "UPDATE attention SET turn_at = ? WHERE agent = ? AND (turn_at IS NULL OR turn_at < ?)",
        (at, agent, at),
    )


def submitted(tx: Connection, agent: str, at: float) -> None:
    """AGENT's harness reported taking a prompt at AT (its hook started then)."""
    tx.execute(
        "UPDATE attention SET submitted_at = ? WHERE agent = ?"
        " AND (submitted_at IS NULL OR submitted_at < ?)",
        (at, agent, at),
    )


def took_input_since(conn: Connection, agent: str, at: float) -> bool:
    """Whether AGENT's harness reported taking a prompt at or after AT, or opened a prompt
    for a person since (a turn that began after AT asks): what was pasted at AT left its input
    box. AT is allowed a clock tick (a hook's start is known to its tick)."""
    since = at - TICK
    row = conn.execute(
        "SELECT 1 FROM attention WHERE agent = ? AND submitted_at >= ? UNION ALL"
        " SELECT 1 FROM attention_prompts WHERE agent = ? AND created_at >= ? LIMIT 1",
        (agent, since, agent, since),
    ).fetchone()
    return row is not None


def turn_at(conn: Connection, agent: str) -> float | None:
    """When AGENT's model last answered or AGENT was started (None: never recorded)."""
    row = conn.execute("SELECT turn_at FROM attention WHERE agent = ?", (agent,)).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def set_state(
    tx: Connection,
    agent: str,
    state: str,
    signal: str,
    rule: str,
    *,
    now: float,
    last_message: str | None = None,
    prompt: NewPrompt | None = None,
    work_item: str | None = None,
    standing: str | None = None,
    source: str = "attention",
    transcript: str | None = None,
) -> Change | None:
    """Move AGENT to STATE as SIGNAL/RULE decided; None when nothing changed.

    A new PROMPT opens a wait (the previous one, if still open, is closed as ``superseded``);
    leaving a wait closes its prompt (``moved-on``; ``gone`` when its agent exited or was found
    gone, which no word about its dialog outlives). An unknown agent is recorded on the way
    (WORK_ITEM or STANDING name it). The events are written in TX. TRANSCRIPT, when given, is
    recorded as where the agent's harness writes its transcript (the meter reads it). A held
    state (``HELD``) changes only by source ``spend``.
    """
    current = get(tx, agent)
    if current is None:
        register(
            tx, agent, work_item=work_item, standing=standing, harness="", requester="", now=now
        )
        current = get(tx, agent)
        assert current is not None
        before: str | None = None
    else:
        before = current.state
    if transcript:
        tx.execute(
            "UPDATE attention SET transcript = ? WHERE agent = ?"
            " AND (transcript IS NULL OR transcript != ?)",
            (transcript, agent, transcript),
        )
    if state == WAITING and last_message and last_message.strip():
        _turn_ended(tx, current, before, last_message, source, now)
    if before in HELD and source != "spend":
        return None
    open_prompt = current.prompt if current.prompt and current.prompt.closed_at is None else None
    gone = signal == CRASH_SIGNAL  # its agent is gone: nothing it showed stands any more
    same = prompt is not None and open_prompt is not None and _same_dialog(open_prompt, prompt)
    if same and not gone:
        return None  # a later word about the dialog it waits on: the prompt keeps its identity
    if prompt is None and state == current.state and (state not in HUMAN or open_prompt):
        if last_message is not None and last_message != current.last_message:
            tx.execute(
                "UPDATE attention SET last_message = ?, updated_at = ? WHERE agent = ?",
                (last_message, now, agent),
            )
        return None
    if open_prompt is not None:
        # an answer the agent took is closed as such (``took``, ``decide``); one recorded and
        # not taken yet stays a wait that moved on (``Prompt.untaken``)
        if state == EXITED or gone:
            outcome = GONE  # its agent stopped, or was found gone, before it was answered
        elif prompt is not None and open_prompt.pending:
            outcome = "superseded"
        else:
            outcome = "moved-on"
        tx.execute(
            "UPDATE attention_prompts SET closed_at = ?, outcome = COALESCE(outcome, ?)"
            " WHERE id = ?",
            (now, outcome, open_prompt.id),
        )
    prompt_id = _open_prompt(tx, agent, prompt, now) if prompt is not None else None
    if state in HUMAN and prompt_id is None:
        prompt_id = _open_prompt(tx, agent, NewPrompt("question"), now)
    tx.execute(
        "UPDATE attention SET state = ?, since = ?, signal = ?, rule = ?, prompt_id = ?,"
        " last_message = COALESCE(?, last_message), updated_at = ? WHERE agent = ?",
        (state, now, signal, rule, prompt_id, last_message, now, agent),
    )
    _events(tx, current, before, state, signal, rule, prompt_id, prompt, now, source)
    return Change(before, state, prompt_id)


def set_gone(
    tx: Connection,
    agent: str,
    why: str,
    *,
    now: float,
    work_item: str | None = None,
    source: str = "attention",
) -> Change | None:
    """Record that AGENT's agent is gone (WHY: the harness exited, its tmux session vanished,
    its node stopped answering): ``blocked`` by ``CRASH_SIGNAL``, which the next message lifts
    by starting it again. None when that was recorded already, or a held state keeps it."""
    current = get(tx, agent)
    if current is not None and current.gone:
        return None
    reason = f"{why}; the next message restarts it, resuming its conversation"
    prompt = NewPrompt("blocked", text=reason)
    return set_state(
        tx, agent, BLOCKED, CRASH_SIGNAL, why, now=now, prompt=prompt, work_item=work_item,
        source=source,
    )  # fmt: skip


def set_back(tx: Connection, agent: str, why: str, *, now: float, source: str) -> Change | None:
    """AGENT's agent, recorded gone (``set_gone``), was found running after all (WHY): it
    reads ``working`` until its harness or its screen says what it does (the passes that read
    a silent agent's screen look again), by signal SOURCE: not the crash signal, which tells
    a delivery that the agent is being started again. None when it was not recorded gone."""
    current = get(tx, agent)
    if current is None or not current.gone:
        return None
    return set_state(tx, agent, WORKING, source, why, now=now, source=source)


def _turn_ended(
    tx: Connection, row: Row, before: str | None, message: str, source: str, now: float
) -> None:
    """Record that ROW's agent finished a turn with MESSAGE (an ``attention_turns`` row, which
    the Slack pass turns into posts in the agent's thread), when a thread is bound to it (its
    standing key, else its work item): nobody else reads these rows. The same message again
    is no new turn when the agent was waiting already (a report sent twice). What the screen
    says is told from the first line the previous turn's message did not show: nothing when a
    restarted detector sees the old answer settle again."""
    if message == row.last_message and before == WAITING:
        return
    if source == "screen":
        message = _new_lines(row.last_message, message)
        if not message.strip():
            return
    thread = row.agent if row.agent.startswith(STANDING_PREFIX) else row.work_item
    if not thread:
        return
    if tx.execute("SELECT 1 FROM slack_threads WHERE key = ?", (thread,)).fetchone():
        tx.execute(
            "INSERT INTO attention_turns (agent, thread_key, message, created_at)"
            " VALUES (?, ?, ?, ?)",
            (row.agent, thread, message, now),
        )


def _new_lines(previous: str, message: str) -> str:
    """MESSAGE without its first lines when they are the last lines of PREVIOUS (the screen
    still showing the turn before)."""
    old, lines = previous.split("\n"), message.split("\n")
    for size in range(min(len(old), len(lines)), 0, -1):
        if old[-size:] == lines[:size]:
            return "\n".join(lines[size:])
    return message


def _same_dialog(open_prompt: Prompt, new: NewPrompt) -> bool:
    """True when NEW is about the dialog OPEN_PROMPT (still open) already stands for: the
    same prompt reported again while pending, or a vaguer word (no tool: Claude Code's
    ``permission_prompt`` notification after its ``PermissionRequest``) about a dialog known
    with its tool, also one answered whose answer the agent has not taken yet."""
    if open_prompt.closed_at is not None:
        return False
    if not new.tool:  # a vaguer word never replaces a dialog known with its tool
        return bool(open_prompt.tool) or (
            open_prompt.pending and (open_prompt.kind, open_prompt.text) == (new.kind, new.text)
        )
    if not open_prompt.pending:
        return False
    return (open_prompt.kind, open_prompt.tool, open_prompt.input) == (
        new.kind,
        new.tool,
        new.input,
    )


def _open_prompt(tx: Connection, agent: str, prompt: NewPrompt, now: float) -> str:
    for _ in range(8):
        prompt_id = "p" + os.urandom(3).hex()[:5]
        cur = tx.execute(
            "INSERT INTO attention_prompts (id, agent, kind, tool, input, text, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            (prompt_id, agent, prompt.kind, prompt.tool, prompt.input, prompt.text, now),
        )
        if cur.rowcount:
            return prompt_id
    raise RuntimeError("could not mint a prompt id")


def _events(
    tx: Connection,
    row: Row,
    before: str | None,
    state: str,
    signal: str,
    rule: str,
    prompt_id: str | None,
    prompt: NewPrompt | None,
    now: float,
    source: str,
) -> None:
    standing = row.standing or (
        row.agent.removeprefix(STANDING_PREFIX) if row.agent.startswith(STANDING_PREFIX) else None
    )
    session_id = None if row.agent.startswith(STANDING_PREFIX) else row.agent
    payload: dict[str, Any] = {"from": before, "to": state, "signal": signal, "rule": rule}
    if prompt_id is not None:
        payload["promptId"] = prompt_id
    _append(
        tx,
        now,
        "session.attention_changed",
        _DEBUG if state == WORKING else _INFO,
        source,
        row.work_item,
        standing,
        session_id,
        payload,
    )
    if state in HUMAN:
        waiting = {
            "state": state,
            "promptId": prompt_id,
            "kind": prompt.kind if prompt else "question",
            "tool": prompt.tool if prompt else "",
            "text": (prompt.text if prompt else "")[:500],
        }
        _append(
            tx,
            now,
            "session.awaiting_input",
            _INFO,
            source,
            row.work_item,
            standing,
            session_id,
            waiting,
        )


def _append(
    tx: Connection,
    now: float,
    type_: str,
    level: int,
    source: str,
    work_item: str | None,
    standing: str | None,
    session_id: str | None,
    payload: dict[str, Any],
) -> None:
    tx.execute(
        "INSERT INTO events (ts, type, level, source, work_item, standing, session_id, payload)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            now,
            type_,
            level,
            source,
            work_item,
            standing,
            session_id,
            json.dumps(payload),
        ),
    )
    if session_id is not None:
        tx.execute(TOUCH_SESSION, (now, session_id, now))


TOUCH_SESSION = "UPDATE sessions SET last_event_at = ? WHERE id = ? AND last_event_at < ?"
"""A session's ``last_event_at`` moves with every event of it (``sessions list``'s LAST EVENT):
run beside each insert of an event that names a ``session_id`` (here and ``store.events``)."""

append_event = _append
"""Write one event row in TX (for the hook's other writers, which load no event catalogue)."""


def answer(tx: Connection, prompt_id: str, decision: str, actor: str, via: str, now: float) -> bool:
    """Record DECISION (allow or deny) for PROMPT_ID if it is still pending and nobody is
    typing an answer to it (``claim``); the first answer wins (False when it was answered,
    claimed or closed before)."""
    cur = tx.execute(
        "UPDATE attention_prompts SET decision = ?, actor = ?, via = ?, answered_at = ?"
        " WHERE id = ? AND decision IS NULL AND closed_at IS NULL AND actor IS NULL",
        (decision, actor, via, now, prompt_id),
    )
    return cur.rowcount == 1


def decide(tx: Connection, prompt_id: str, decision: str, actor: str, via: str, at: float) -> bool:
    """Record DECISION for the prompt ACTOR/VIA claimed at AT, whose keys were taken: its
    outcome is ``answered``, also when the screen saw the dialog go meanwhile and closed it
    (the keys are why it went); False when the claim is not this one's."""
    cur = tx.execute(
        "UPDATE attention_prompts SET decision = ?, outcome = 'answered'"
        " WHERE id = ? AND decision IS NULL AND actor = ? AND via = ? AND answered_at = ?",
        (decision, prompt_id, actor, via, at),
    )
    return cur.rowcount == 1


def took(tx: Connection, prompt_id: str, now: float) -> None:
    """The agent took the answer recorded for PROMPT_ID (its hook said so): it is closed as
    ``answered``, also when a report of the agent's closed it a moment before."""
    tx.execute(
        "UPDATE attention_prompts SET closed_at = COALESCE(closed_at, ?), outcome = 'answered'"
        " WHERE id = ? AND decision IS NOT NULL",
        (now, prompt_id),
    )


def close_prompt(tx: Connection, prompt_id: str, outcome: str, now: float) -> None:
    """Close PROMPT_ID with OUTCOME, unless it has one (it timed out; an answer the agent took
    is closed by ``took``)."""
    tx.execute(
        "UPDATE attention_prompts SET closed_at = COALESCE(closed_at, ?),"
        " outcome = COALESCE(outcome, ?) WHERE id = ?",
        (now, outcome, prompt_id),
    )


def due_notices(conn: Connection, before: float) -> list[Prompt]:
    """Open prompts of work items waiting since BEFORE or earlier, with no notice yet."""
    cur = conn.execute(
        f"SELECT {', '.join('p.' + c.strip() for c in _PROMPT.split(','))}"
        " FROM attention_prompts p JOIN attention a ON a.agent = p.agent"
        " WHERE p.notice_at IS NULL AND p.closed_at IS NULL AND p.decision IS NULL"
        " AND p.created_at <= ? AND a.work_item IS NOT NULL ORDER BY p.created_at",
        (before,),
    )
    return [Prompt(r) for r in cur.fetchall()]


def due_followups(conn: Connection) -> list[Prompt]:
    """Prompts with a notice posted that are closed, not yet followed up (an answer recorded
    is followed up once its prompt closes: the agent took it, or its dialog went otherwise)."""
    cur = conn.execute(
        f"SELECT {_PROMPT} FROM attention_prompts WHERE notice_at IS NOT NULL"
        " AND followup_at IS NULL AND closed_at IS NOT NULL"
        " ORDER BY created_at"
    )
    return [Prompt(r) for r in cur.fetchall()]


def mark_notice(tx: Connection, prompt_id: str, now: float) -> bool:
    """Record the notice of PROMPT_ID; False when one was recorded already."""
    cur = tx.execute(
        "UPDATE attention_prompts SET notice_at = ? WHERE id = ? AND notice_at IS NULL",
        (now, prompt_id),
    )
    return cur.rowcount == 1


def mark_followup(tx: Connection, prompt_id: str, now: float) -> bool:
    cur = tx.execute(
        "UPDATE attention_prompts SET followup_at = ? WHERE id = ? AND followup_at IS NULL",
        (now, prompt_id),
    )
    return cur.rowcount == 1


def pending_of(conn: Connection, agent: str) -> Prompt | None:
    """AGENT's pending prompt, if any."""
    row = get(conn, agent)
    return row.prompt if row and row.prompt and row.prompt.pending else None


def pending_prompts(conn: Connection, agent: str) -> list[Prompt]:
    """AGENT's prompts still pending (no decision, not closed), oldest first."""
    cur = conn.execute(
        f"SELECT {_PROMPT} FROM attention_prompts WHERE agent = ? AND decision IS NULL"
        " AND closed_at IS NULL ORDER BY created_at",
        (agent,),
    )
    return [Prompt(r) for r in cur.fetchall()]


def latest_noticed(conn: Connection, agent: str) -> Prompt | None:
    """The prompt of AGENT the latest notice quoted, None when no notice was posted."""
    cur = conn.execute(
        f"SELECT {_PROMPT} FROM attention_prompts WHERE agent = ? AND notice_at IS NOT NULL"
        " ORDER BY notice_at DESC LIMIT 1",
        (agent,),
    )
    return _prompt(cur.fetchone())


def prompts_of(conn: Connection, agent: str, limit: int) -> list[Prompt]:
    """AGENT's prompts, newest first, at most LIMIT."""
    cur = conn.execute(
        f"SELECT {_PROMPT} FROM attention_prompts WHERE agent = ? ORDER BY created_at DESC LIMIT ?",
        (agent, limit),
    )
    return [Prompt(r) for r in cur.fetchall()]


def overdue(conn: Connection, before: float, answered: bool = False) -> list[Prompt]:
    """Pending prompts of any agent opened at BEFORE or earlier, oldest first; with ANSWERED,
    also those whose answer was recorded and not taken yet (open)."""
    pending = "" if answered else " AND decision IS NULL"
    cur = conn.execute(
        f"SELECT {_PROMPT} FROM attention_prompts WHERE closed_at IS NULL{pending}"
        " AND created_at <= ? ORDER BY created_at",
        (before,),
    )
    return [Prompt(r) for r in cur.fetchall()]


def claim(tx: Connection, prompt_id: str, actor: str, via: str, now: float) -> bool:
    """Record that ACTOR is typing the answer to PROMPT_ID via VIA (a question, or a
    permission answered by keys; before the keys go out: a hook or the screen that closes the
    prompt meanwhile cannot take the answer's name from it, and another answer is refused);
    False when it is closed or another answer holds it. The first answer wins."""
    cur = tx.execute(
        "UPDATE attention_prompts SET actor = ?, via = ?, answered_at = ? WHERE id = ?"
        " AND decision IS NULL AND closed_at IS NULL AND actor IS NULL",
        (actor, via, now, prompt_id),
    )
    return cur.rowcount == 1


def release(tx: Connection, prompt_id: str, actor: str, via: str, at: float) -> None:
    """Give back the claim ACTOR/VIA made at AT on PROMPT_ID (its keys were not taken)."""
    tx.execute(
        "UPDATE attention_prompts SET actor = NULL, via = NULL, answered_at = NULL"
        " WHERE id = ? AND actor = ? AND via = ? AND answered_at = ? AND closed_at IS NULL",
        (prompt_id, actor, via, at),
    )


def answer_question(
    tx: Connection, prompt_id: str, actor: str, via: str, answer: str, at: float, now: float
) -> bool:
    """Record that the answer ACTOR/VIA claimed at AT was taken: ``answered: ANSWER``, closing
    the prompt — also when a hook closed it meanwhile (``moved-on``: the answer is why it
    moved on); False when the claim is not this one's."""
    cur = tx.execute(
        "UPDATE attention_prompts SET closed_at = COALESCE(closed_at, ?), outcome = ?"
        " WHERE id = ? AND decision IS NULL AND actor = ? AND via = ? AND answered_at = ?",
        (now, f"answered: {answer}"[:500], prompt_id, actor, via, at),
    )
    return cur.rowcount == 1


def oldest_open(
    conn: Connection, *, permissions: bool = False, unnoticed: bool = False
) -> float | None:
    """When the oldest pending prompt was opened (only permissions: PERMISSIONS; only work
    items' prompts with no notice yet: UNNOTICED); None when there is none. The passes wait
    until it falls due instead of asking every beat."""
    sql = (
        "SELECT MIN(p.created_at) FROM attention_prompts p"
        " LEFT JOIN attention a ON a.agent = p.agent"
        " WHERE p.decision IS NULL AND p.closed_at IS NULL"
    )
    if permissions:
        sql += " AND p.kind = 'permission'"
    if unnoticed:
        sql += " AND p.notice_at IS NULL AND a.work_item IS NOT NULL"
    row = conn.execute(sql).fetchone()
    return None if row is None or row[0] is None else float(row[0])
