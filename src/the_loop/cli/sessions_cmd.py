"""``the-loop sessions …`` and ``the-loop dispatch``: work-item sessions from the terminal."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from the_loop.cli import common
from the_loop.cli.base import command, format_option, group, message_option, message_text
from the_loop.cli.plain import print_sessions, readable, usage_text
from the_loop.errors import BadInput
from the_loop.pricing import cost_text

if TYPE_CHECKING:
    from the_loop.intake.dispatch import DispatchResult


@group(
    "sessions",
    help="Work-item agent sessions: list, watch, steer, close.",
    lazy={
        "allow": "the_loop.cli.attention_cmd:allow",
        "deny": "the_loop.cli.attention_cmd:deny",
        "answer": "the_loop.cli.attention_cmd:answer",
        "extend": "the_loop.cli.spend_cmd:extend",
    },
)
def app() -> None:
    pass


@app.command("list")
@click.option("--status", default=None, help="queued|active|paused|orphaned|closed")
@click.option(
    "--limit", type=click.IntRange(min=1), default=100, help="At most this many, newest first."
)
@format_option()
def list_(status: str | None, limit: int, fmt: str) -> None:
    """List sessions, newest first.

    Shows work item, status, harness, runner, tmux target and age; on a database several
    nodes share, also the node each session runs on.
    """
    from the_loop.cli import remote  # lazy: start-up

    answer = remote.sessions(status, limit)
    if answer is not None:  # the running daemon's (docs/decisions/0065)
        remote.print_sessions(answer, status, fmt)
        return
    # lazy: start-up
    from the_loop.work_items import SessionStatus
    from the_loop.work_items.records import list_sessions

    try:
        wanted = SessionStatus(status) if status else None
    except ValueError:
        raise BadInput(
            f"invalid --status {status!r}: queued, active, paused, orphaned or closed"
        ) from None
    rows = list_sessions(common.ctx(), wanted, limit)
    if fmt == "json":
        common.print_json(rows)
        return
    print_sessions(
        [
            (
                r.work_item,
                r.status.value,
                r.attention.state if r.attention else "-",
                r.harness,
                r.runner,
                r.tmux_target,
                r.usage.turns if r.usage else 0,
                cost_text(r.usage.cost_usd, r.usage.priced) if r.usage else "-",
                r.created_at,
                r.last_event_at,
            )
            for r in rows
        ],
        status,
        # several nodes may share the database: which one runs each session
        nodes=[r.node or "-" for r in rows] if common.ctx().db.shared else None,
    )


@app.command("start")
@click.argument("ref", help="github:OWNER/REPO#N or local:NAME")
@click.option("--prompt", "-p", required=True, help="What the agent should do.")
@click.option(
    "--harness",
    default=None,
    help="The agent CLI of a new session (default: routing.defaultHarness).",
)
@click.option("--as", "actor", default=None, help="On whose behalf (a login; default: $USER).")
@format_option()
def start(ref: str, prompt: str, harness: str | None, actor: str | None, fmt: str) -> None:
    """Start the session of a work item, or deliver to its live one.

    Any work item: a GitHub issue or pull request, or a local one with no tracker
    (local:NAME). No GitHub account is needed for a local item; `--harness demo` runs the
    offline demo agent, which needs no account either.
    """
    from the_loop.work_items.start import start_session  # lazy: start-up

    with common.waiting(f"starting {ref}…"):
        started = start_session(common.ctx(), ref, prompt, harness, actor)
    common.drain_outbox()
    if fmt == "json":
        common.print_json(started)
        return
    print(f"{started.action} {started.work_item} (session {started.session_id}, {started.harness})")
    if started.action == "queued":
        print(f"  why:    {started.why}")
    else:
        print(f"  read:   the-loop sessions logs {started.work_item}")
        print(f"  steer:  the-loop sessions attach {started.work_item}")


@app.command("show")
@click.argument("ref", help=common.REF_HELP)
@format_option()
def show(ref: str, fmt: str) -> None:
    """Show one session (the live one of a work item, else its latest)."""
    from the_loop.views.sessions import session_view  # lazy: start-up

    view = session_view(common.ctx(), ref)
    if fmt == "json":
        common.print_json(view)
        return
    shown = view.model_dump(mode="json")
    width = max(len(k) for k in shown)
    for name, key in zip(type(view).model_fields, shown, strict=True):
        value = shown[key]
        if key.endswith("At") and value is not None:
            value = f"{common.ago(getattr(view, name))} ({value})"
        text = usage_text(value) if key == "usage" and isinstance(value, dict) else readable(value)
        print(f"{key:<{width}}  {text}")


@app.command("attach")
@click.argument("ref", help=common.REF_HELP)
@click.option("--read-only", "-r", is_flag=True, help="Watch without typing.")
def attach(ref: str, read_only: bool) -> None:
    """Attach this terminal to the session's tmux pane.

    A closed session is attached read-only; when its agent has exited, its last
    screen is printed instead (and when it exits while you watch, you are detached
    and shown it). Detach with the tmux prefix, then d (C-b d unless the prefix was
    changed); the agent keeps running.
    """
    from the_loop.views.sessions import attach_plan  # lazy: start-up

    common.require_terminal("attach", f"read the screen with `the-loop sessions logs {ref}`")
    plan = attach_plan(common.ctx(), ref, read_only)
    if plan.note:
        print(f"note: {plan.note}", file=sys.stderr, flush=True)
    if plan.command is None:
        print(plan.screen or "")
        return
    common.attach(plan.command, plan.read_only)


@app.command("say")
@click.argument("ref", help=common.REF_HELP)
@message_option
@click.option("--actor", default=None, help="Who is speaking (default: $USER).")
def say(ref: str, words: tuple[str, ...], text: str | None, actor: str | None) -> None:
    """Send a message into a live session: `say REF please rebase`, or --text.

    A paused session gets it too: pausing holds back GitHub events, not the operator.
    """
    # lazy: start-up
    from the_loop.work_items import SessionStatus
    from the_loop.work_items import service as sessions

    print(sessions.say(common.ctx(), ref, message_text(words, text), actor))
    if sessions.resolve(common.ctx(), ref).status is SessionStatus.paused:
        print(
            "note: the session is paused: your message was delivered, GitHub events are not "
            f"(`the-loop sessions resume {ref}` delivers them again)",
            file=sys.stderr,
        )


@app.command("close")
@click.argument("ref", help=common.REF_HELP)
@click.option("--keep-tmux", is_flag=True, help="Keep the dead pane as a record.")
@click.option("--kill-tmux", is_flag=True, help="Kill the tmux session too.")
def close(ref: str, keep_tmux: bool, kill_tmux: bool) -> None:
    """Close a session: stop its agent.

    The screen is kept unless --kill-tmux.
    """
    # lazy: start-up
    from the_loop.work_items import service as sessions

    if keep_tmux and kill_tmux:
        raise BadInput("give --keep-tmux or --kill-tmux, not both")
    choice = True if kill_tmux else (False if keep_tmux else None)
    with common.waiting(f"closing {ref} (the agent gets a grace period)…"):
        rec = sessions.close_by_operator(common.ctx(), ref, kill_tmux=choice)
    print(f"closed {rec.work_item} (session {rec.id})")


@app.command("restart")
@click.argument("ref", help=common.REF_HELP)
def restart(ref: str) -> None:
    """Stop a live session's agent and start it again, resuming its conversation.

    It gets this shell's environment as it is now (a key exported since), then
    what waits for it.
    """
    # lazy: start-up
    from the_loop.work_items import service as sessions

    with common.waiting(f"restarting the agent of {ref}…"):
        done = sessions.restart_by_operator(common.ctx(), ref)
    print(f"restarted {ref}: {done}")


@app.command("pause")
@click.argument("ref", help=common.REF_HELP)
def pause(ref: str) -> None:
    """Stop delivering GitHub events to a session.

    Events that arrive meanwhile are dropped, not queued. Operator messages
    (`sessions say`) are still delivered.
    """
    # lazy: start-up
    from the_loop.work_items import service as sessions

    rec = sessions.pause_by_operator(common.ctx(), ref, True)
    print(f"paused {rec.work_item}")


@app.command("resume")
@click.argument("ref", help=common.REF_HELP)
def resume(ref: str) -> None:
    """Deliver events to a paused session again (nothing is replayed)."""
    # lazy: start-up
    from the_loop.work_items import service as sessions

    rec = sessions.pause_by_operator(common.ctx(), ref, False)
    print(f"resumed {rec.work_item}")


@app.command("logs")
@click.argument("ref", help=common.REF_HELP)
@click.option("--lines", "-n", type=click.IntRange(1, 100_000), default=200)
@click.option(
    "--follow", "-f", is_flag=True, help="Keep printing new lines until the session closes."
)
def logs(ref: str, lines: int, follow: bool) -> None:
    """Print the last lines of the session's screen.

    A headless session's transcript instead. With --follow, new lines as they appear (like
    tail -f), until the session closes or Ctrl-C.
    """
    if follow:
        from the_loop.cli.logs_follow import follow as run_follow  # lazy: start-up

        sys.exit(run_follow(common.ctx(), ref, lines))
    from the_loop.views.sessions import session_screen  # lazy: start-up

    sys.stdout.write(session_screen(common.ctx(), ref, lines).text.rstrip("\n") + "\n")


@command("dispatch")
@click.argument(
    "payload",
    required=False,
    type=click.Path(path_type=Path),
    help="A GitHub webhook payload (JSON file, - for stdin); or give --comment.",
)
@click.option("--event", "-e", default=None, help="The X-GitHub-Event name (with a payload file).")
@click.option(
    "--comment", "-c", default=None, help="Dispatch this comment instead of a payload file."
)
@click.option(
    "--item", default=None, help="With --comment: the issue or PR commented on, OWNER/REPO#N."
)
@click.option(
    "--as",
    "login",
    default=None,
    help="With --comment: the GitHub login commenting (default: $USER).",
)
@click.option("--delivery", "-d", default=None, help="X-GitHub-Delivery id.")
@format_option()
def dispatch(
    payload: Path | None,
    event: str | None,
    comment: str | None,
    item: str | None,
    login: str | None,
    delivery: str | None,
    fmt: str,
) -> None:
    """Run a payload or a comment through the-loop (unsigned).

    Either a payload file with --event (examples in docs/examples/), or
    --comment TEXT --item OWNER/REPO#N --as LOGIN, which is dispatched as the issue_comment
    webhook GitHub would send. It takes exactly the path a webhook takes (authorization
    included); prints what was decided.
    """
    result = _dispatch_result(payload, event, comment, item, login, delivery)
    common.drain_outbox()
    if fmt == "json":
        common.print_json(result)
        sys.exit(result.exit_code)
    print(f"delivery {result.delivery_id} ({result.event}): {result.status}")
    for reason in result.reasons:
        print(f"  - {reason}")
    if result.summary:
        print(f"  => {result.summary}")
    if result.error:
        print(f"  error: {result.error}")
    sys.exit(result.exit_code)


def _dispatch_result(
    payload: Path | None,
    event: str | None,
    comment: str | None,
    item: str | None,
    login: str | None,
    delivery: str | None,
) -> DispatchResult:
    # lazy: start-up
    import getpass

    from the_loop.intake.dispatch import dispatch as run_dispatch
    from the_loop.intake.dispatch import dispatch_comment

    if comment is not None:
        if payload is not None or event is not None:
            raise BadInput("give a payload file with --event, or --comment, not both")
        if item is None:
            raise BadInput("--comment needs --item OWNER/REPO#N")
        with common.waiting("dispatching (a spawn may clone a repository)…"):
            return dispatch_comment(
                common.ctx(), item, comment, login or getpass.getuser(), delivery
            )
    if item is not None or login is not None:
        raise BadInput("--item and --as go with --comment")
    if payload is None or event is None:
        raise BadInput(
            "give a payload file and --event NAME (see docs/examples/), "
            "or --comment TEXT --item OWNER/REPO#N --as LOGIN"
        )
    try:
        body = sys.stdin.buffer.read() if str(payload) == "-" else payload.read_bytes()
    except OSError as exc:
        raise BadInput(f"cannot read {payload}: {exc.strerror}") from None
    with common.waiting("dispatching (a spawn may clone a repository)…"):
        return run_dispatch(common.ctx(), event, body, delivery)
