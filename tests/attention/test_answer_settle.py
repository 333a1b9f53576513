"""An answer's keys wait until the question's dialog has been drawn a moment (``SEEN_SECONDS``),
however long after its hook reported it the dialog is drawn: Claude Code's dialog drops the
keys of its first moments, and on a busy host it is drawn well after the hook (a Slack press
was lost that way in a whole-suite run). Real tmux and the real CLI; the agent is a small
program that draws a question dialog when told, late, and drops keys as Claude Code's does."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tests.attention.test_claude_question import QUESTION
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent.attention.reports import question_text
from the_loop.store import attention as store
from the_loop.store import open_database

REF = "local:late-dialog"
DROPS_FOR = 0.2  # Claude Code's dialog lost a digit 0-0.1 s after it was drawn, took it at 0.2 s
LATE = 0.7  # the dialog is drawn this long after it is told to: past the hook's SETTLE_SECONDS

DIALOG = r"""
import os, select, sys, termios, time, tty

go, log, late, drops = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
fd = sys.stdin.fileno()
tty.setraw(fd)


def drain(seconds):
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if select.select([fd], [], [], min(left, 0.02))[0]:
            os.read(fd, 4096)  # the first prompt's paste, and anything before the dialog


sys.stdout.write("dialog agent> ")
sys.stdout.flush()
while not os.path.exists(go):
    drain(0.02)
drain(late)
sys.stdout.write(
    "\r\nWhich database?\r\n1. SQLite\r\n2. PostgreSQL\r\n3. (type an answer)\r\nEsc to cancel\r\n"
)
sys.stdout.flush()
drawn = time.monotonic()
while True:
    key = os.read(fd, 1)
    taken = time.monotonic() - drawn >= drops
    with open(log, "a") as out:
        out.write(f"{'took' if taken else 'dropped'} {key.decode(errors='replace')}\n")
    if taken:
        break
sys.stdout.write("\x1b[5A\r\x1b[Jchose " + key.decode(errors="replace") + "\r\n> ")  # erased
sys.stdout.flush()
while True:
    drain(60)
"""


def test_a_choice_waits_until_a_late_drawn_dialog_takes_keys(work: Work, tmp_path: Path) -> None:
    script, go, log = tmp_path / "dialog.py", tmp_path / "go", tmp_path / "keys.log"
    script.write_text(DIALOG)
    argv = [sys.executable, str(script), str(go), str(log), str(LATE), str(DROPS_FOR)]
    work.configure(
        harnesses={"dialog": {"adapter": "command", "interactive": argv}},
        routing={"defaultHarness": "dialog"},
    )
    started = work.cli("sessions", "start", REF, "--prompt", "pick a database")
    assert started.exit_code == 0, started.stderr
    sid = work.session_json(REF)["id"]
    wait_until(lambda: work.events("session.delivered"), 20, what="the first prompt")

    # the hook reported the question; the dialog is drawn LATE after that
    db = open_database(work.env.state_dir, work.env.database_url)
    try:
        with db.transaction() as tx:
            change = store.set_state(
                tx, sid, store.NEEDS_INPUT, "claude-hook:PermissionRequest", "question dialog",
                now=time.time(), work_item=REF,
                prompt=store.NewPrompt(
                    "question", tool=store.QUESTION_TOOL, input=json.dumps(QUESTION),
                    text=question_text(store.QUESTION_TOOL, QUESTION) or "",
                ),
            )  # fmt: skip
    finally:
        db.close()
    assert change is not None and change.prompt_id is not None
    go.touch()

    answered = work.cli("sessions", "answer", REF, "2", "--prompt", change.prompt_id)
    assert answered.exit_code == 0, answered.stderr
    assert log.read_text() == "took 2\n"  # the only key sent, once the dialog could take it
    assert "chose 2" in work.cli("sessions", "logs", REF).stdout
