"""A typed answer names its person before its keys go out (``store.attention.claim``):
the harness's hook can move the prompt on the moment the dialog takes the keys, before the
answer sees the dialog gone, and the answer is still recorded as the person's (it was seen as
"no longer pending (moved-on)" and the person told their answer was stale); a second answer
meanwhile is refused, and a claim whose keys were not taken is given back."""

from __future__ import annotations

from pathlib import Path

from the_loop.store import attention as store
from the_loop.store.db import Database, open_database

AGENT = "a-claim"


def _asked(tmp_path: Path) -> tuple[Database, str]:
    db = open_database(tmp_path)
    with db.transaction() as tx:
        change = store.set_state(
            tx, AGENT, store.NEEDS_INPUT, "claude-hook:PermissionRequest", "question dialog",
            now=1.0, prompt=store.NewPrompt("question", tool="AskUserQuestion", text="Which?"),
            work_item="github:octo/repo#1",
        )  # fmt: skip
    assert change is not None and change.prompt_id is not None
    return db, change.prompt_id


def test_an_answer_moved_on_by_the_hook_while_typed_is_still_the_persons(tmp_path: Path) -> None:
    db, pid = _asked(tmp_path)
    with db.transaction() as tx:
        assert store.claim(tx, pid, "alice", "github-comment", 2.0)
        assert not store.claim(tx, pid, "bob", "cli", 2.1), "the first answer wins"
    with db.transaction() as tx:
        # the dialog took the keys: the turn ends and the Stop hook moves the prompt on
        store.set_state(tx, AGENT, store.WAITING, "claude-hook:Stop", "the turn finished", now=3.0)
    with db.transaction() as tx:
        assert not store.answer_question(tx, pid, "bob", "cli", "SQLite", 2.1, 3.5)
        assert store.answer_question(tx, pid, "alice", "github-comment", "MySQL", 2.0, 4.0)
    found = store.get_prompt(db.connect(), pid)
    assert found is not None and found.closed_at == 3.0
    assert (found.actor, found.via, found.outcome) == ("alice", "github-comment", "answered: MySQL")
    row = store.get(db.connect(), AGENT)
    assert row is not None and row.state == store.WAITING


def test_a_claim_whose_keys_were_not_taken_is_given_back(tmp_path: Path) -> None:
    db, pid = _asked(tmp_path)
    with db.transaction() as tx:
        assert store.claim(tx, pid, "alice", "cli", 2.0)
        store.release(tx, pid, "alice", "cli", 2.0)
        assert store.claim(tx, pid, "bob", "slack", 3.0)
    found = store.get_prompt(db.connect(), pid)
    assert found is not None and found.pending and (found.actor, found.via) == ("bob", "slack")


def test_a_permission_answered_by_keys_is_the_persons_though_the_screen_saw_it_go(
    tmp_path: Path,
) -> None:
    """The same for a permission answered by keys (a screen-read dialog: Codex, Gemini): the
    screen saw the dialog go the moment it took the keys and closed the prompt first; the
    decision is still recorded, as answered, and no other answer got in meanwhile."""
    db = open_database(tmp_path)
    with db.transaction() as tx:
        change = store.set_state(
            tx, AGENT, store.NEEDS_PERMISSION, "screen", "permissionPatterns[0] matched",
            now=1.0, prompt=store.NewPrompt("permission", text="Allow execution of [Shell]?"),
        )  # fmt: skip
    assert change is not None and change.prompt_id is not None
    pid = change.prompt_id
    with db.transaction() as tx:
        assert store.claim(tx, pid, "alice", "cli", 2.0)
        assert not store.answer(tx, pid, "deny", "bob", "api", 2.1), "a claim holds it"
    with db.transaction() as tx:  # the screen: the dialog is gone
        store.set_state(tx, AGENT, store.WORKING, "screen", "pane changed", now=3.0)
    with db.transaction() as tx:
        assert not store.decide(tx, pid, "deny", "bob", "api", 2.1)
        assert store.decide(tx, pid, "allow", "alice", "cli", 2.0)
    found = store.get_prompt(db.connect(), pid)
    assert found is not None
    assert (found.decision, found.actor, found.outcome) == ("allow", "alice", "answered")


def test_slack_tells_a_typed_answer_only_once_it_is_recorded(tmp_path: Path) -> None:
    """A question closed by its hook while its answer's keys were typed reads "Answered by …"
    in Slack, never the hook's "moved-on" as if it were the answer."""
    from the_loop.outbox.slack_notices import outcome_text

    db, pid = _asked(tmp_path)
    with db.transaction() as tx:
        assert store.claim(tx, pid, "slack:U0ALICE001", "slack", 2.0)
        store.set_state(tx, AGENT, store.WAITING, "claude-hook:Stop", "the turn finished", now=3.0)
    closed = store.get_prompt(db.connect(), pid)
    assert closed is not None and closed.outcome == "moved-on"
    assert outcome_text(closed).endswith("*Answered* by <@U0ALICE001> (via slack).")
    with db.transaction() as tx:
        assert store.answer_question(
            tx, pid, "slack:U0ALICE001", "slack", "2. PostgreSQL", 2.0, 4.0
        )
    answered = store.get_prompt(db.connect(), pid)
    assert answered is not None
    assert outcome_text(answered).endswith(
        "*Answered* `2. PostgreSQL` by <@U0ALICE001> (via slack)."
    )
