"""Rendering the dashboard's pages: one Jinja2 environment over ``templates/``, autoescaped, with
the filters the pages share (``ago``, ``iso``) and the versioned asset URLs."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from the_loop import __version__
from the_loop.pricing import cost_text
from the_loop.text_safety import safe_link
from the_loop.web.assets import Assets

TEMPLATES = Path(__file__).resolve().parent / "templates"

NAV = (
    ("sessions", "/", "Sessions"),
    ("attention", "/attention", "Attention"),
    ("standing", "/standing", "Standing"),
    ("events", "/events", "Events"),
    ("status", "/status", "Status"),
)


def _moment(when: float | datetime | None) -> float | None:
    if when is None:
        return None
    return when.timestamp() if isinstance(when, datetime) else float(when)


def ago(when: float | datetime | None) -> str:
    """``45s ago``, ``3m ago``, ``2h ago``, ``4d ago``; ``-`` for None."""
    moment = _moment(when)
    if moment is None:
        return "-"
    seconds = max(0.0, time.time() - moment)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"


def iso(when: float | datetime | None) -> str:
    """WHEN as ISO 8601 UTC (for ``<time datetime>``); empty for None."""
    moment = _moment(when)
    if moment is None:
        return ""
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def when(moment: float | datetime | None) -> Markup:
    """A ``<time>`` element: ISO 8601 UTC in ``datetime``, how long ago as its text."""
    if moment is None:
        return Markup("-")
    return Markup(f'<time datetime="{iso(moment)}">{ago(moment)}</time>')  # both plain ASCII


def usd(usage: Any, unit: str = "$") -> str:
    """The cost of USAGE (a ``Usage``) as ``pricing.cost_text`` shows it: ``unpriced`` when
    no token has a price; ``-`` for no usage."""
    if usage is None:
        return "-"
    return cost_text(usage.cost_usd, usage.priced, unit)


def turns(count: int) -> str:
    """COUNT turns, said as a person would: ``1 turn``, ``3 turns``."""
    return f"{count} turn" if count == 1 else f"{count} turns"


GIST_LIMIT = 160


def gist(payload: dict[str, Any]) -> str:
    """One line of what an event in a session's list says: its summary or reason, a change of
    attention (``waiting → working: the rule``), what a look at a dialog found, what a wait
    asks."""
    said = payload.get("summary") or payload.get("reason")
    if not said and "from" in payload and "to" in payload:
        said = f"{payload['from']} → {payload['to']}"
        if payload.get("rule"):
            said += f": {payload['rule']}"
    if not said and payload.get("dialog"):
        said = f"dialog {payload['dialog']}"
    if not said and payload.get("state") and payload.get("text"):
        said = f"{payload['state']}: {payload['text']}"
    text = str(said or "")
    return text if len(text) <= GIST_LIMIT else text[: GIST_LIMIT - 1] + "…"


def badge(state: str) -> Markup:
    """A status badge (the CSS colours it by STATE)."""
    text = escape(state)
    return Markup(f'<span class="badge badge-{text}">{text}</span>')


class Pages:
    """The page renderer: TEMPLATE with the context every page gets."""

    def __init__(self, assets: Assets) -> None:
        self.assets = assets
        self.env = Environment(
            loader=FileSystemLoader(TEMPLATES),
            autoescape=select_autoescape(("html",), default=True),
            trim_blocks=True,
            lstrip_blocks=True,
            auto_reload=False,
        )
        self.env.filters["ago"] = ago
        self.env.filters["iso"] = iso
        self.env.filters["when"] = when
        self.env.filters["usd"] = usd
        self.env.filters["turns"] = turns
        self.env.filters["gist"] = gist
        self.env.filters["safe_link"] = safe_link  # a payload's URL in href: http(s) only
        self.env.globals["badge"] = badge
        self.env.globals.update(asset=assets.url, nav=NAV, version=__version__)

    def render(self, template: str, **context: Any) -> str:
        return self.env.get_template(template).render(**context)
