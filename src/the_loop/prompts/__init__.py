"""Prompt rendering: built-in Jinja2 templates for spawn, event and standing boot prompts.

Operators override the spawn and event templates by path (``routing.prompts``). Text that
comes from outside (comment bodies, titles, payload fields) is framed as untrusted input, and
the reply instructions carry the self-marker so the-loop never routes an agent's own words back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from the_loop.errors import BadInput
from the_loop.work import SELF_MARKER, ExcerptValue

if TYPE_CHECKING:  # jinja2 is imported when a prompt is rendered: CLI commands stay fast
    import jinja2

UNTRUSTED_OPEN = "<<<UNTRUSTED"
UNTRUSTED_CLOSE = "UNTRUSTED>>>"
MAX_BODY = 16_000
MAX_FIELD = 2_000


def untrusted(text: str | None, limit: int = MAX_BODY) -> str:
    """TEXT fenced as untrusted input; the fences cannot be forged from inside."""
    body = (
        (text or "")
        .replace(UNTRUSTED_OPEN, "<<<untrusted")
        .replace(UNTRUSTED_CLOSE, "untrusted>>>")
    )
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
    """The first prompt of a work-item session."""
    return _render(_template("spawn.md.j2", override), c=ctx, fields=_fields(ctx.excerpt))


def render_event(ctx: EventContext, override: Path | None = None) -> str:
    """The prompt delivering one later event into a live session."""
    return _render(_template("event.md.j2", override), c=ctx, fields=_fields(ctx.excerpt))


def render_standing(name: str, brief: str) -> str:
    """The boot directive of a standing session followed by the operator's brief."""
    return _render(_builtin_env().get_template("standing.md.j2"), name=name, brief=brief)


def _fields(excerpt: Mapping[str, ExcerptValue]) -> str:
    """Allow-listed payload fields as ``key: value`` lines, each cut at ``MAX_FIELD``."""
    lines = []
    for key, value in sorted(excerpt.items()):
        text = str(value).replace("\n", " ")
        lines.append(f"{key}: {text if len(text) <= MAX_FIELD else text[:MAX_FIELD] + '…'}")
    return "\n".join(lines)
