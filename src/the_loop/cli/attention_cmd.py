"""``the-loop attention …``; answers: ``the-loop allow|deny|answer PROMPT`` and ``the-loop
sessions allow|deny|answer REF``; and ``the-loop hook``."""

from __future__ import annotations

import getpass
import sys
from typing import TYPE_CHECKING

import click

from the_loop.cli import common
from the_loop.cli.base import command, format_option, group
from the_loop.errors import BadInput

if TYPE_CHECKING:
    from the_loop.agent.attention.service import PromptView


@group(
    "attention",
    help="Which agents wait for a person: list them, and explain a state.",
    invoke_without_command=True,
    bare_help=False,
)
@format_option()
@click.pass_context
def app(click_ctx: click.Context, fmt: str) -> None:
    """List every live session waiting on a person, oldest first, with its question."""
    if click_ctx.invoked_subcommand is None:
        _list(fmt)


@app.command("list")
@format_option()
def list_(fmt: str) -> None:
    """List every live session waiting on a person (the same as `the-loop attention`)."""
    _list(fmt)


def _list(fmt: str) -> None:
    from the_loop.agent.attention.service import list_attention  # lazy: start-up

    views = list_attention(common.ctx())
    if fmt == "json":
        common.print_json(views)
        return
    common.print_table(
        ["SESSION", "STATE", "WAITING", "PROMPT", "REQUESTER", "QUESTION"],
        [
            (
                v.work_item or f"standing:{v.standing}",
                v.state,
                common.ago(v.since).removesuffix(" ago"),
                v.prompt.id if v.prompt else "-",
                v.requester or "-",
                _question(v.prompt.detail if v.prompt else "", v.last_message),
            )
            for v in views
        ],
    )


def _question(text: str, last: str) -> str:
    line = " ".join((text or last or "-").split())
    return line if len(line) <= 70 else line[:69] + "…"


@app.command("explain")
@click.argument("ref", help=common.REF_OR_STANDING_HELP)
@format_option()
def explain(ref: str, fmt: str) -> None:
    """Show a session's attention state and what decided it."""
    from the_loop.agent.attention.service import explain as explain_state  # lazy: start-up

    view = explain_state(common.ctx(), ref)
    if fmt == "json":
        common.print_json(view)
        return
    print(f"{view.work_item or view.agent}: {view.state} since {view.since.isoformat()}")
    print(f"signal: {view.signal}")
    print(f"rule:   {view.rule}")
    if view.prompt is not None:
        p = view.prompt
        state = "pending" if p.pending else (p.decision or p.outcome or "closed")
        detail = p.detail.replace("\n", "\n        ")
        print(f"prompt: {p.id} ({p.kind}, {state}) {detail}")


@app.command("history")
@click.argument("ref", help=common.REF_OR_STANDING_HELP)
@click.option("--limit", type=click.IntRange(1, 10_000), default=100)
@format_option()
def history(ref: str, limit: int, fmt: str) -> None:
    """List a session's prompts and who answered each, newest first."""
    from the_loop.agent.attention.service import history as prompt_history  # lazy: start-up

    views = prompt_history(common.ctx(), ref, limit)
    if fmt == "json":
        common.print_json(views)
        return
    common.print_table(
        ["PROMPT", "ASKED", "KIND", "TOOL", "ANSWER", "BY", "VIA", "WHAT"],
        [
            (
                p.id,
                common.ago(p.created_at),
                p.kind,
                p.tool or "-",
                _answer(p),
                p.answered_by or "-",
                p.answered_via or "-",
                _question(p.detail, ""),
            )
            for p in views
        ],
    )


def _answer(p: PromptView) -> str:
    """What became of P, as the ANSWER column says it."""
    if p.pending:
        return "pending"
    if p.decision is not None:
        return f"{p.decision} (not taken)" if p.untaken else p.decision
    return p.outcome or "closed"


def _asked(prompt: str) -> tuple[str, str, str]:
    from the_loop.agent.attention.service import asker_of  # lazy: start-up

    if ":" in prompt or prompt.startswith("s-"):  # a session, given where its prompt goes
        raise BadInput(
            f"{prompt!r} is a session, not a prompt id (like p3fa91): `the-loop attention` shows"
            f" the id of what it asks, or answer by session: `the-loop sessions allow {prompt}`"
            " (deny, answer)"
        )
    return asker_of(common.ctx(), prompt)


def _permit(ref: str, decision: str, prompt: str | None, fmt: str, name: str = "") -> None:
    """Answer the permission PROMPT (or the one a notice quoted) of REF's agent, NAME to
    people (REF when not given)."""
    from the_loop.agent.attention.service import (  # lazy: start-up
        answer_permission,
        parse_prompt_id,
    )

    done = answer_permission(
        common.ctx(),
        ref,
        "allow" if decision == "allow" else "deny",
        getpass.getuser(),
        "cli",
        parse_prompt_id(prompt),
    )
    if fmt == "json":
        common.print_json(done)
        return
    print(f"{decision} {done.prompt_id} ({done.tool or done.input or 'prompt'}) for {name or ref}")


def _reply(
    ref: str, choice: int | None, text: str | None, prompt: str | None, fmt: str, name: str = ""
) -> None:
    """Answer the question PROMPT (or the one a notice quoted) of REF's agent with CHOICE or
    TEXT, NAME to people (REF when not given)."""
    from the_loop.agent.attention.service import answer_question, parse_prompt_id  # lazy: start-up

    done = answer_question(
        common.ctx(),
        ref,
        getpass.getuser(),
        "cli",
        choice=choice,
        text=text,
        prompt_id=parse_prompt_id(prompt),
    )
    if fmt == "json":
        common.print_json(done)
        return
    print(f"answered {done.prompt_id} with {done.answer!r} for {name or ref}")


PROMPT_HELP = "The prompt's id (like p3fa91), as `the-loop attention` and its notice show it."
CHOICE_HELP = "The number of a choice shown."
TEXT_HELP = "Type this answer instead."


@command("allow")
@click.argument("ref", help=common.REF_OR_STANDING_HELP)
@click.option("--prompt", default=None, help="The prompt id it must be.")
@format_option()
def allow(ref: str, prompt: str | None, fmt: str) -> None:
    """Allow the tool a session's agent waits to run.

    Only while that prompt is pending."""
    _permit(ref, "allow", prompt, fmt)


@command("deny")
@click.argument("ref", help=common.REF_OR_STANDING_HELP)
@click.option("--prompt", default=None, help="The prompt id it must be.")
@format_option()
def deny(ref: str, prompt: str | None, fmt: str) -> None:
    """Refuse the tool a session's agent waits to run.

    Only while that prompt is pending."""
    _permit(ref, "deny", prompt, fmt)


@command("answer")
@click.argument("ref", help=common.REF_OR_STANDING_HELP)
@click.argument("choice", required=False, type=click.IntRange(min=1), help=CHOICE_HELP)
@click.option("--text", default=None, help=TEXT_HELP)
@click.option("--prompt", default=None, help="The prompt id it must be.")
@format_option()
def answer(ref: str, choice: int | None, text: str | None, prompt: str | None, fmt: str) -> None:
    """Answer the question a session's agent asks: a choice or --text.

    Only while that question is shown; typed with the keys its dialog needs."""
    _reply(ref, choice, text, prompt, fmt)


@command("allow")
@click.argument("prompt", help=PROMPT_HELP)
@format_option()
def allow_prompt(prompt: str, fmt: str) -> None:
    """Allow the tool an agent asked to run, named by its prompt id.

    The same answer as `sessions allow REF --prompt ID`: only while that prompt is pending."""
    agent, name, prompt_id = _asked(prompt)
    _permit(agent, "allow", prompt_id, fmt, name)


@command("deny")
@click.argument("prompt", help=PROMPT_HELP)
@format_option()
def deny_prompt(prompt: str, fmt: str) -> None:
    """Refuse the tool an agent asked to run, named by its prompt id.

    The same answer as `sessions deny REF --prompt ID`: only while that prompt is pending."""
    agent, name, prompt_id = _asked(prompt)
    _permit(agent, "deny", prompt_id, fmt, name)


@command("answer")
@click.argument("prompt", help=PROMPT_HELP)
@click.argument("choice", required=False, type=click.IntRange(min=1), help=CHOICE_HELP)
@click.option("--text", default=None, help=TEXT_HELP)
@format_option()
def answer_prompt(prompt: str, choice: int | None, text: str | None, fmt: str) -> None:
    """Answer the question an agent asks, named by its prompt id: a choice or --text.

    The same answer as `sessions answer REF --prompt ID`: only while that question is shown."""
    agent, name, prompt_id = _asked(prompt)
    _reply(agent, choice, text, prompt_id, fmt, name)


@command("hook")
def hook() -> None:
    """Record a Claude Code hook's signal (JSON on stdin).

    Run by the hooks the-loop passes at spawn. Always exits 0."""
    from the_loop.hook import main  # lazy: start-up

    sys.exit(main([]))
