"""Starting by hand: start (or deliver to) the session of any work item, GitHub or local.

``start_session`` is the one core function behind ``the-loop sessions start``, the dashboard's
start form and ``POST /api/v1/sessions``. It needs no tracker: a local work item
(``local:NAME``) has a session like any issue, and nothing is written back for it. The caller
is the operator (the CLI, or a holder of the full token), so no ``authorizedUsers`` check
applies; ``actor`` only says on whose behalf the agent works (its requester, mentioned by
notices).
"""

from __future__ import annotations

import getpass
import re
import uuid
from typing import Literal

from the_loop import agent as layer
from the_loop.cluster import placement
from the_loop.config import BUILTIN_HARNESSES
from the_loop.context import Ctx
from the_loop.errors import BadInput, Conflict
from the_loop.refs import WorkItemRef
from the_loop.store import sessions as store
from the_loop.store.sessions import SessionRecord, SessionStatus
from the_loop.wire import Wire
from the_loop.work import WorkEvent, WorkKind
from the_loop.work_items import service as sessions

_ACTOR_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,38}\Z")
MAX_PROMPT = 100_000


class Started(Wire):
    """What ``start_session`` did: ``spawned``, ``queued`` or ``delivered``, and the session."""

    action: Literal["spawned", "queued", "delivered"]
    work_item: str
    session_id: str
    harness: str
    status: SessionStatus
    tmux_target: str | None = None
    detail: str = ""
    why: str = ""
    """Why a queued session has not started, and what starts it."""


def start_session(
    ctx: Ctx,
    ref_text: str,
    prompt: str,
    harness: str | None = None,
    actor: str | None = None,
) -> Started:
    """Start the session of work item REF_TEXT with PROMPT as its instruction, or deliver
    PROMPT into its live session. HARNESS (default ``routing.defaultHarness``) applies to a new
    session; a live one with another harness is a ``Conflict``. ACTOR (default: the local
    user) is the requester. Raises ``BadInput`` for a bad ref, harness, actor or prompt."""
    ref = WorkItemRef.parse(ref_text)
    text = _prompt(prompt)
    who = _actor(actor)
    if harness is not None:
        known = set(BUILTIN_HARNESSES) | set(ctx.config.harnesses)
        if harness not in known:
            raise BadInput(f"unknown harness {harness!r} (known: {', '.join(sorted(known))})")
        layer.adapter_for(ctx, harness).check_runner(ctx.config.routing.runner)
    with layer.hold(ctx, [ref.slug]):
        live = store.live_for(ctx.db.connect(), str(ref))
        if live is None:
            rec = sessions.spawn(ctx, ref, _event(ref, who, text), text, harness=harness)
            action: Literal["spawned", "queued"] = (
                "queued" if rec.status is SessionStatus.queued else "spawned"
            )
            said = f"{action} {rec.work_item} (session {rec.id})"
            if action == "queued":
                why = sessions.why_queued(ctx, rec)
                return _started(action, rec, f"{said}: {why}", why)
            return _started(action, rec, said)
        if harness is not None and harness != live.harness:
            raise Conflict(
                f"{ref} already has a live session with harness {live.harness!r} "
                f"(close it first: the-loop sessions close {ref})"
            )
        placement.operate_here(ctx, live, placement.command("start", str(ref), "--prompt", text))
        message = f"Message from {who} (operator) about {ref}:\n\n{text}"
        detail = sessions.deliver(ctx, live, message, None)
    return _started("delivered", store.get(ctx.db.connect(), live.id) or live, detail)


def _started(
    action: Literal["spawned", "queued", "delivered"],
    rec: SessionRecord,
    detail: str,
    why: str = "",
) -> Started:
    return Started(
        action=action,
        work_item=rec.work_item,
        session_id=rec.id,
        harness=rec.harness,
        status=rec.status,
        tmux_target=rec.tmux_target,
        detail=detail,
        why=why,
    )


def _prompt(prompt: str) -> str:
    if "\x00" in prompt:
        raise BadInput("the prompt contains a NUL character")
    if not prompt.strip():
        raise BadInput("refusing to start with an empty prompt: say what the agent should do")
    if len(prompt) > MAX_PROMPT:
        raise BadInput(f"the prompt is longer than {MAX_PROMPT} characters")
    return prompt


def _actor(actor: str | None) -> str:
    if actor is None:
        return getpass.getuser()
    if not _ACTOR_RE.match(actor):
        raise BadInput(
            f"invalid --as {actor!r}: a login of letters, digits, '.', '_' and '-', "
            "starting with a letter or digit, at most 39"
        )
    return actor


def _event(ref: WorkItemRef, actor: str, prompt: str) -> WorkEvent:
    """The work event a start by hand stands for (an operator's instruction on REF)."""
    url = "" if ref.is_local else f"https://{ref.host}/{ref.full_name}/issues/{ref.number}"
    return WorkEvent(
        kind=WorkKind.COMMENT,
        event_name="sessions.start",
        action=None,
        delivery_id=f"start-{uuid.uuid4()}",
        actor=actor,
        actor_is_bot=False,
        host=ref.host,
        repository=None if ref.is_local else ref.full_name,
        items=(ref,),
        own=ref,
        item_url=url or None,
    )
