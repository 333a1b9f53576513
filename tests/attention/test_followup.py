"""The follow-up on a noticed prompt says what happened to it: an answer recorded is followed
up once its prompt closes, and one the agent never took (its hook had died, and the dialog was
answered in the agent's terminal: ``agent.attention.left``) is not reported as taken, on
GitHub or in Slack."""

from __future__ import annotations

from pathlib import Path

from the_loop.outbox.slack_notices import outcome_text
from the_loop.store import attention as store
from the_loop.store import slack as slack_store
from the_loop.store.db import Database, open_database
from the_loop.work_items.notice import followup_text

AGENT = "a-followup"


def _asking(tmp_path: Path, answered: bool = True) -> tuple[Database, str]:
    """A work item's agent asking to run ``make deploy``, noticed, and ANSWERED by alice."""
    db = open_database(tmp_path)
    with db.transaction() as tx:
        change = store.set_state(
            tx, AGENT, store.NEEDS_PERMISSION, "claude-hook:PermissionRequest", "Bash",
            now=1.0, prompt=store.NewPrompt("permission", tool="Bash", input="make deploy"),
            work_item="github:octo/repo#1",
        )  # fmt: skip
        assert change is not None and change.prompt_id is not None
        assert store.mark_notice(tx, change.prompt_id, 2.0)
        if answered:
            assert store.answer(tx, change.prompt_id, "allow", "alice", "github-comment", 3.0)
    return db, change.prompt_id


def _followed_up(db: Database) -> list[str]:
    return [followup_text(p) for p in store.due_followups(db.connect())]


def test_an_answer_taken_is_followed_up_once_its_prompt_closes(tmp_path: Path) -> None:
    db, pid = _asking(tmp_path)
    assert _followed_up(db) == [], "recorded, not taken yet: nothing to tell"
    with db.transaction() as tx:
        store.close_prompt(tx, pid, "answered", 4.0)  # the hook took it
    assert _followed_up(db) == [f"Prompt `{pid}` was allowed by alice (via github-comment)."]


def test_an_answer_the_agent_never_took_is_not_told_as_taken(tmp_path: Path) -> None:
    db, pid = _asking(tmp_path)
    with db.transaction() as tx:  # the dialog went, answered in the terminal
        store.close_prompt(tx, pid, "moved-on", 4.0)
    [told] = _followed_up(db)
    assert told.startswith(f"Prompt `{pid}` was allowed by alice (via github-comment), but ")
    assert "never confirmed it took that answer" in told


def test_slack_tells_an_answer_the_agent_never_took_as_such(tmp_path: Path) -> None:
    db, pid = _asking(tmp_path)
    with db.transaction() as tx:
        assert slack_store.add_prompt(tx, pid, "slack:C1:1.0", "C1", 2.0)
    assert slack_store.due_updates(db.connect()) == [], "recorded, not taken yet"
    with db.transaction() as tx:
        store.close_prompt(tx, pid, "moved-on", 4.0)
    assert slack_store.due_updates(db.connect()) == [pid]
    found = store.get_prompt(db.connect(), pid)
    assert found is not None
    told = outcome_text(found)
    assert "*Allowed* by alice (via github-comment), but the agent never confirmed" in told


def test_an_agent_lost_before_it_took_an_answer_is_told_so_not_a_terminal_answer(
    tmp_path: Path,
) -> None:
    """An agent found gone (or that exited) while its answer waited to be taken closes the
    prompt ``gone``: the follow-ups say the agent stopped first, not that the dialog was
    answered in its terminal."""
    db, pid = _asking(tmp_path)
    with db.transaction() as tx:
        assert slack_store.add_prompt(tx, pid, "slack:C1:1.0", "C1", 2.0)
        store.set_gone(tx, AGENT, "its tmux session vanished", now=4.0)
    found = store.get_prompt(db.connect(), pid)
    assert found is not None and (found.outcome, found.untaken) == (store.GONE, True)
    expected = "but the agent never took that answer: it stopped first."
    assert _followed_up(db)[0].endswith(f"(via github-comment), {expected}")
    assert outcome_text(found).endswith(f"(via github-comment), {expected}")


def test_a_prompt_nobody_answered_closes_gone_when_its_agent_exits(tmp_path: Path) -> None:
    db, pid = _asking(tmp_path, answered=False)
    with db.transaction() as tx:
        store.set_state(tx, AGENT, store.EXITED, "claude-hook:SessionEnd", "ended", now=4.0)
    found = store.get_prompt(db.connect(), pid)
    assert found is not None and (found.outcome, found.untaken) == (store.GONE, False)
    assert outcome_text(found).endswith(
        "No longer pending: the agent stopped before it was answered."
    )
    assert followup_text(found).endswith(
        "is no longer pending: the agent stopped before it was answered."
    )


def test_a_wait_that_ends_before_the_hook_took_its_answer_is_not_answered(
    tmp_path: Path,
) -> None:
    """Any report that ends the wait first (the agent submitted a prompt typed in its
    terminal, or ended) leaves the recorded answer untaken; the hook's word that it took it
    makes it answered, also when that report came a moment before."""
    db, pid = _asking(tmp_path)
    with db.transaction() as tx:
        store.set_state(tx, AGENT, store.WORKING, "claude-hook:UserPromptSubmit", "typed", now=4.0)
    found = store.get_prompt(db.connect(), pid)
    assert found is not None and (found.outcome, found.untaken) == ("moved-on", True)
    assert _followed_up(db)[0].endswith(f"{store.NOT_TAKEN}.")
    with db.transaction() as tx:
        store.took(tx, pid, 5.0)  # the hook had taken it after all
    found = store.get_prompt(db.connect(), pid)
    assert found is not None and (found.outcome, found.untaken) == ("answered", False)
    assert found.closed_at == 4.0


def test_an_answer_taken_by_keys_is_answered_however_its_wait_ends(tmp_path: Path) -> None:
    db = open_database(tmp_path)
    with db.transaction() as tx:
        change = store.set_state(
            tx, AGENT, store.NEEDS_PERMISSION, "screen", "Codex asks", now=1.0,
            prompt=store.NewPrompt("permission", text="Run make deploy?"),
        )  # fmt: skip
        assert change is not None and change.prompt_id is not None
        assert store.claim(tx, change.prompt_id, "alice", "cli", 2.0)
        assert store.decide(tx, change.prompt_id, "allow", "alice", "cli", 2.0)
        store.set_state(tx, AGENT, store.WORKING, "answer:keys", "allowed", now=3.0)
    found = store.get_prompt(db.connect(), change.prompt_id)
    assert found is not None and (found.outcome, found.untaken) == ("answered", False)


def test_an_answer_with_no_person_named_says_where_it_came_from(tmp_path: Path) -> None:
    """The dashboard names no person (its login is the token's), so its answer's actor is the
    surface itself: the follow-ups say "from the dashboard", not "by dashboard (via
    dashboard)"."""
    db, pid = _asking(tmp_path, answered=False)
    with db.transaction() as tx:
        assert store.answer(tx, pid, "deny", "dashboard", "dashboard", 3.0)
        store.close_prompt(tx, pid, "answered", 4.0)
    assert _followed_up(db) == [f"Prompt `{pid}` was denied from the dashboard."]
    found = store.get_prompt(db.connect(), pid)
    assert found is not None and outcome_text(found).endswith("*Denied* from the dashboard.")
