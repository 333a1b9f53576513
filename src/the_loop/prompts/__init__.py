"""Prompt rendering: built-in Jinja2 templates for spawn, event and standing boot prompts.

Operators override the spawn and event templates by path (``routing.prompts``). Every value
that comes from outside is sanitized first — a NUL byte is refused as a permanent input error
(``BadInput``), CR/CRLF become LF, every other control and escape character is removed — and
then text anyone can write (comment bodies, titles, payload fields) is fenced as untrusted
input; a fence cannot be forged from inside, since the text is normalised (NFKC, zero-width and
bidi controls removed, line separators as newlines) and runs of ``<<<`` and ``>>>`` in it are
rewritten to angle quotation marks before fencing. The reply instructions carry the
self-marker so the-loop never routes an agent's own words back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from the_loop.errors import BadInput
from the_loop.refs import WorkItemRef
from the_loop.text_safety import fence_clean
from the_loop.work import SELF_MARKER, ExcerptValue, WorkEvent, WorkKind

if TYPE_CHECKING:  # jinja2 is imported when a prompt is rendered: CLI commands stay fast
    import jinja2

UNTRUSTED_OPEN = "<<<UNTRUSTED"
UNTRUSTED_CLOSE = "UNTRUSTED>>>"
MAX_BODY = 16_000
MAX_FIELD = 2_000


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
_OPENERS = re.compile("<{3,}")
_CLOSERS = re.compile(">{3,}")


def sanitize(text: str) -> str:
    """TEXT as a prompt may carry it: CRLF and CR become LF, control and escape characters
    other than tab and LF are removed. ``BadInput`` (permanent) for a NUL byte."""
    if "\x00" in text:
        raise BadInput("the text contains a NUL byte; it cannot be given to an agent")
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def untrusted(text: str | None, limit: int = MAX_BODY) -> str:
    """TEXT sanitized, then fenced as untrusted input; the fences cannot be forged from inside
    (lookalikes normalised first: ``text_safety.fence_clean``; then in runs of ``<<<``/``>>>``
    in TEXT each angle bracket becomes a single angle quotation mark, U+2039/U+203A, before
    the fence is added)."""
    body = sanitize(fence_clean(text or ""))
    body = _OPENERS.sub(lambda m: "\u2039" * len(m.group(0)), body)
    body = _CLOSERS.sub(lambda m: "\u203a" * len(m.group(0)), body)
    if len(body) > limit:
        body = body[:limit] + f"\n[… {len(body) - limit} more characters cut]"
    return f"{UNTRUSTED_OPEN}\n{body}\n{UNTRUSTED_CLOSE}"


@dataclass(frozen=True, slots=True)
class SpawnContext:
    """What the spawn prompt shows about the work item and the request."""

    ref: str
    title: str
    url: str
    body: str
    instruction: str
    actor: str
    excerpt: Mapping[str, ExcerptValue]
    comment: str = ""


@dataclass(frozen=True, slots=True)
class EventContext:
    """What an event prompt shows: who did what where, and an excerpt of the payload."""

    ref: str
    kind: str
    actor: str
    url: str
    body: str
    excerpt: Mapping[str, ExcerptValue]


def spawn_context(event: WorkEvent, ref: WorkItemRef, instruction: str) -> SpawnContext:
    """The spawn prompt's view of EVENT for work item REF (the item's own fields only when
    EVENT is about REF itself)."""
    own = event.own == ref
    return SpawnContext(
        ref=str(ref),
        title=(event.title or "") if own else "",
        url=(event.item_url or "") if own else "",
        body=(event.item_body or "") if own else "",
        instruction=instruction,
        actor=event.actor,
        excerpt=dict(event.excerpt),
        comment=event.body or "",
    )


def event_context(event: WorkEvent, work_item: str) -> EventContext:
    """The event prompt's view of EVENT, delivered to the session of WORK_ITEM."""
    kind = event.kind.value if event.kind is not WorkKind.CI else f"ci {event.conclusion}"
    return EventContext(
        ref=str(event.own) if event.own else work_item,
        kind=kind,
        actor=event.actor,
        url=event.url or "",
        body=event.body or "",
        excerpt=dict(event.excerpt),
    )


def _environment(loader: jinja2.BaseLoader) -> jinja2.Environment:
    # lazy: start-up (jinja2 loads when a prompt is rendered)
    import jinja2

    env = jinja2.Environment(
        loader=loader,
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["untrusted"] = untrusted
    env.globals["self_marker"] = SELF_MARKER
    return env


@lru_cache(maxsize=1)
def _builtin_env() -> jinja2.Environment:
    # lazy: start-up (jinja2 loads when a prompt is rendered)
    import jinja2

    return _environment(
        jinja2.DictLoader(
            {
                name: resources.files("the_loop.prompts").joinpath(name).read_text("utf-8")
                for name in ("spawn.md.j2", "event.md.j2", "standing.md.j2")
            }
        )
    )


def _template(name: str, override: Path | None) -> jinja2.Template:
    # lazy: start-up (jinja2 loads when a prompt is rendered)
    import jinja2

    if override is None:
        return _builtin_env().get_template(name)
    try:
        source = override.expanduser().read_text("utf-8")
    except OSError as exc:
        raise BadInput(f"cannot read prompt template {override}: {exc.strerror}") from None
    try:
        return _environment(jinja2.BaseLoader()).from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise BadInput(f"prompt template {override} line {exc.lineno}: {exc.message}") from None


def _render(template: jinja2.Template, **values: object) -> str:
    # lazy: start-up (jinja2 loads when a prompt is rendered)
    import jinja2

    try:
        return template.render(**values).strip() + "\n"
    except jinja2.TemplateError as exc:
        raise BadInput(f"prompt template failed: {exc}") from None


def render_spawn(ctx: SpawnContext, override: Path | None = None) -> str:
    """The first prompt of a work-item session (``BadInput`` for a NUL byte anywhere)."""
    clean = _sanitized_spawn(ctx)
    return _render(_template("spawn.md.j2", override), c=clean, fields=_fields(clean.excerpt))


def render_event(ctx: EventContext, override: Path | None = None) -> str:
    """The prompt delivering one later event into a live session (``BadInput`` for NUL)."""
    clean = _sanitized_event(ctx)
    return _render(_template("event.md.j2", override), c=clean, fields=_fields(clean.excerpt))


def _sanitized_spawn(ctx: SpawnContext) -> SpawnContext:
    """CTX with every string sanitized (``sanitize``), excerpt values included."""
    return SpawnContext(
        ref=sanitize(ctx.ref),
        title=sanitize(ctx.title),
        url=sanitize(ctx.url),
        body=sanitize(ctx.body),
        instruction=sanitize(ctx.instruction),
        actor=sanitize(ctx.actor),
        excerpt=_sanitized_excerpt(ctx.excerpt),
        comment=sanitize(ctx.comment),
    )


def _sanitized_event(ctx: EventContext) -> EventContext:
    """CTX with every string sanitized (``sanitize``), excerpt values included."""
    return EventContext(
        ref=sanitize(ctx.ref),
        kind=sanitize(ctx.kind),
        actor=sanitize(ctx.actor),
        url=sanitize(ctx.url),
        body=sanitize(ctx.body),
        excerpt=_sanitized_excerpt(ctx.excerpt),
    )


def _sanitized_excerpt(excerpt: Mapping[str, ExcerptValue]) -> dict[str, ExcerptValue]:
    return {k: sanitize(v) if isinstance(v, str) else v for k, v in excerpt.items()}


def render_standing(name: str, brief: str) -> str:
    """The boot directive of a standing session followed by the operator's brief."""
    template = _builtin_env().get_template("standing.md.j2")
    return _render(template, name=name, brief=sanitize(brief))


def _fields(excerpt: Mapping[str, ExcerptValue]) -> str:
    """Allow-listed payload fields as ``key: value`` lines, each cut at ``MAX_FIELD``."""
    lines = []
    for key, value in sorted(excerpt.items()):
        text = str(value).replace("\n", " ")
        lines.append(f"{key}: {text if len(text) <= MAX_FIELD else text[:MAX_FIELD] + '…'}")
    return "\n".join(lines)


def fresh_note(work_item: str, title: str | None, url: str | None) -> str:
    """The first message of a fresh conversation that replaces one that could not be resumed."""
    named = f": {title!r}" if title else ""
    return (
        f"You are an agent of the-loop working on {work_item}{named} {url or ''}. The "
        "earlier conversation could not be resumed; the latest message follows."
    )


__all__ = [
    "event_context",
    "fresh_note",
    "render_event",
    "render_spawn",
    "render_standing",
    "sanitize",
    "spawn_context",
]
