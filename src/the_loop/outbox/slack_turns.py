"""The agent's answers in its thread: each finished turn of an agent whose thread is bound
(a standing session with ``slack.enabled``, a work item with ``slack.workItems``) is posted
there as the agent wrote it, in Slack's ``mrkdwn`` and in parts Slack takes whole.

The attention store records a finished turn (``attention_turns``) in the transaction that
moves the agent to ``waiting`` with its last message, whichever signal said so (a ``Stop``
hook, Codex's notify, the screen detector's quiet rule). ``pass_once`` (run by the Slack
sender before each batch) takes each such row and queues its posts in one transaction: the
row is gone exactly when its posts are in the outbox, keyed ``slack:turn:<id>:<part>``, so a
restart or a retry never posts a turn twice. Parts are posted in order (each waits for the one
before). A turn of an agent whose thread is no longer Slack's (Slack turned off for it) is
dropped.

Formatting (``mrkdwn``): every character the agent wrote is escaped first (``text_safety``:
``<!channel>``, ``@here`` and ``<url|label>`` show as typed), then Markdown that Slack writes
differently is rewritten outside code: headings and ``**bold**`` become ``*bold*``, ``~~x~~``
``~x~``, list bullets ``•``, and ``[label](https://…)`` ``label (https://…)`` (a link never
hides where it goes). Code blocks stay code blocks, across parts too.
"""

from __future__ import annotations

import re

from the_loop.config import Config
from the_loop.context import Ctx
from the_loop.outbox import slack as outbound
from the_loop.refs import standing_of
from the_loop.store import slack as store
from the_loop.store.conn import Connection
from the_loop.text_safety import safe_link, slack_text

PART_LIMIT = 3000
"""Characters per post: Slack takes up to 40,000 but asks for at most 4,000 per message, and
a section block's ``mrkdwn`` holds 3,000."""
FENCE = "```"
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(?=\S)")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")
_INLINE_CODE = re.compile(r"(`[^`\n]+`)")
_ENTITY_TAIL = re.compile(r"&[a-z]{0,3}$")


def _link(match: re.Match[str]) -> str:
    label, url = match.group(1), match.group(2)
    if not safe_link(url.replace("&amp;", "&")):
        return match.group(0)
    return url if label == url else f"{label} ({url})"


def _prose(line: str) -> str:
    """One escaped line outside code blocks, Markdown rewritten as Slack writes it."""
    heading = _HEADING.match(line)
    line = f"*{heading.group(1).strip('*')}*" if heading else _BULLET.sub(r"\1• ", line)
    pieces = _INLINE_CODE.split(line)
    for index in range(0, len(pieces), 2):  # even pieces lie outside inline code
        piece = _BOLD.sub(r"*\2*", pieces[index])
        piece = _STRIKE.sub(r"~\1~", piece)
        pieces[index] = _LINK.sub(_link, piece)
    return "".join(pieces)


def mrkdwn(text: str) -> str:
    """TEXT (an agent's Markdown) as Slack ``mrkdwn``: escaped, pinging and hiding nothing."""
    out: list[str] = []
    in_code = False
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = slack_text(raw.rstrip())
        if line.lstrip().startswith(FENCE):
            in_code = not in_code
            out.append(FENCE if in_code else line.strip())
        elif in_code:
            out.append(line)
        else:
            out.append(_prose(line))
    return "\n".join(out).strip("\n")


def _cut(line: str, budget: int) -> int:
    """Where to cut LINE (longer than BUDGET): at the last space in the second half of the
    budget, else at BUDGET; never inside an escaped ``&lt;`` / ``&amp;``."""
    space = line.rfind(" ", budget // 2, budget)
    cut = space + 1 if space > 0 else budget
    tail = _ENTITY_TAIL.search(line[:cut])
    return tail.start() if tail and tail.start() > 0 else cut


def split(text: str, limit: int = PART_LIMIT) -> list[str]:
    """TEXT (``mrkdwn``) in parts of at most LIMIT characters, cut between lines where it can
    (a line too long for one part fills the part it starts in); a code block cut in two is
    closed at the end of one part and opened again in the next."""
    if len(text) <= limit:
        return [text] if text.strip() else []
    budget = limit - 2 * (len(FENCE) + 1)
    parts: list[str] = []
    lines: list[str] = []
    size, in_code, opened_in_code = 0, False, False
    for line in text.split("\n"):
        while True:
            room = budget - size - (1 if lines else 0)
            if len(line) <= room:
                size += len(line) + (1 if lines else 0)
                lines.append(line)
                break
            if room >= budget // 4 or not lines:
                cut = _cut(line, max(room, 1))
                lines.append(line[:cut].rstrip())
                line = line[cut:]
            parts.append(_part(lines, opened_in_code, in_code))
            lines, size, opened_in_code = [], 0, in_code
        if line.lstrip().startswith(FENCE):
            in_code = not in_code
    if lines:
        parts.append(_part(lines, opened_in_code, in_code))
    return [p for p in parts if p.strip() and p.strip() != f"{FENCE}\n{FENCE}"]


def _part(lines: list[str], opened_in_code: bool, in_code: bool) -> str:
    body = "\n".join(lines).strip("\n")
    if opened_in_code:
        body = f"{FENCE}\n{body}"
    return f"{body}\n{FENCE}" if in_code else body


def told_in_slack(config: Config, thread_key: str) -> bool:
    """Whether THREAD_KEY's thread still hears its agent: Slack on, and on for that standing
    session (``standing:NAME``) or for work items."""
    name = standing_of(thread_key)
    if name is not None:
        return outbound.standing_channel(config, name) is not None
    return config.slack.enabled and config.slack.work_items


def queue_turn(tx: Connection, turn: store.Turn, channel: str) -> int:
    """Queue TURN's message as posts in its thread, in order; how many parts."""
    work_item = None if standing_of(turn.thread_key) is not None else turn.thread_key
    previous: int | None = None
    parts = split(mrkdwn(turn.message))
    for index, part in enumerate(parts):
        previous = outbound.queue_post(
            tx,
            key=f"turn:{turn.id}:{index}",
            what="answer",
            channel=channel,
            text=part,
            thread=turn.thread_key,
            work_item=work_item,
            after=previous,
        )
    return len(parts)


def pass_once(ctx: Ctx) -> int:
    """Queue the posts of every finished turn not told yet; how many posts were queued."""
    if not ctx.config.slack.enabled:
        store.drop_turns(ctx.db)
        return 0
    queued = 0
    for turn in store.due_turns(ctx.db.connect()):
        with ctx.db.transaction() as tx:
            if not store.take_turn(tx, turn.id):
                continue
            thread = store.thread_of(tx, turn.thread_key)
            if thread is not None and told_in_slack(ctx.config, turn.thread_key):
                queued += queue_turn(tx, turn, thread.channel)
    return queued
