"""Many panes captured in one tmux invocation (``TmuxRunner.capture_many``): the same screens as
one capture each, whatever a pane prints, and a missing pane does not lose the others."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.helpers import wait_until
from the_loop.harness import build_adapter
from the_loop.runner import Probe, tmux_screens
from the_loop.runner.outcomes import Answer
from the_loop.runner.tmux import TmuxResult, TmuxRunner
from the_loop.runner.tmux_core import COMMAND_BUDGET, command_size


def _spawn(runner: TmuxRunner, workdir: Path, target: str, text: str) -> None:
    script = f"printf '%s\\n' {text!r} 'last line'; exec sleep 300"
    runner.spawn(target, ["sh", "-c", script], cwd=workdir).unwrap()
    wait_until(lambda: "last line" in runner.capture(target, 10).text, 10, what=target)


class Counted:
    """The runner's own ``ask``, counting its invocations."""

    def __init__(self, runner: TmuxRunner) -> None:
        self.runner = runner
        self.calls = 0

    def __call__(self, *args: str) -> TmuxResult:
        self.calls += 1
        return self.runner.ask(*args)


def test_many_panes_in_one_invocation_read_as_one_capture_each(
    runner: TmuxRunner, workdir: Path
) -> None:
    targets = [f"loop-scr-{i}" for i in range(6)]
    for i, target in enumerate(targets):
        _spawn(runner, workdir, target, f"pane {i} says hello")
    ask = Counted(runner)
    many = tmux_screens.capture_many(ask, runner.capture, [*targets, targets[0]], 60)
    assert ask.calls == 1
    assert list(many) == targets
    for i, target in enumerate(targets):
        alone = runner.capture(target, 60)
        assert many[target].ok and many[target].text == alone.text
        assert f"pane {i} says hello" in many[target].text


def test_a_missing_pane_is_absent_and_the_panes_around_it_are_read(
    runner: TmuxRunner, workdir: Path
) -> None:
    _spawn(runner, workdir, "loop-scr-a", "first")
    _spawn(runner, workdir, "loop-scr-c", "third")
    ask = Counted(runner)
    many = tmux_screens.capture_many(
        ask, runner.capture, ["loop-scr-a", "loop-scr-gone", "loop-scr-c"], 60
    )
    assert many["loop-scr-gone"].answer is Answer.ABSENT
    assert "first" in many["loop-scr-a"].text and "third" in many["loop-scr-c"].text
    assert "first" not in many["loop-scr-c"].text
    assert ask.calls == 2  # the batch stopped at the missing pane; the rest asked once more


def test_a_pane_printing_marker_lines_cannot_split_another_panes_screen(
    runner: TmuxRunner, workdir: Path
) -> None:
    forged = f"{tmux_screens.MARK}0123456789abcdef-1"
    _spawn(runner, workdir, "loop-scr-x", forged)
    _spawn(runner, workdir, "loop-scr-y", "honest")
    many = runner.capture_many(["loop-scr-x", "loop-scr-y"], 60)
    assert forged in many["loop-scr-x"].text
    assert "honest" in many["loop-scr-y"].text and forged not in many["loop-scr-y"].text


def test_batches_stay_within_one_tmux_command_and_cover_every_pane() -> None:
    targets = [f"loop-owner-repo-{i}-{'x' * 40}" for i in range(400)]
    pending, seen = list(targets), []
    while pending:
        batch, args = tmux_screens._batch(pending, 60, "0" * 16)
        assert batch and command_size(args) <= COMMAND_BUDGET
        assert args.count("capture-pane") == len(batch)
        seen += batch
        pending = pending[len(batch) :]
    assert seen == targets and len(seen) > 100


def test_no_server_makes_every_pane_absent(tmp_path: Path) -> None:
    runner = TmuxRunner("the-loop-test-screens-none", work_dir=tmp_path / "work")
    many = runner.capture_many(["loop-a", "loop-b"], 60)
    assert [c.answer for c in many.values()] == [Answer.ABSENT, Answer.ABSENT]


BOX = r"""
import sys
rule = "\x1b[37m" + "\u2500" * 60 + "\x1b[39m"
print("\n".join(f"filler line {n}" for n in range(80)))
print(rule)
print("\x1b[39m\u276f\u00a0my own draft\x1b[7m \x1b[0m")
print(rule)
sys.stdout.write("  \u23f8 manual mode on \u00b7 ? for shortcuts")
sys.stdout.flush()
sys.stdin.readline()
"""


def test_a_live_capture_says_when_the_screen_is_an_exited_programs(
    runner: TmuxRunner, workdir: Path
) -> None:
    """An exited program's pane keeps its last screen, and a draft on it still reads as one;
    ``live_capture`` says ``dead`` instead, in the same invocation, so nothing waits behind a
    draft that went with the program (decision 0101)."""
    script = workdir / "box.py"
    script.write_text(BOX, encoding="utf-8")
    runner.spawn("loop-box", [sys.executable, str(script)], cwd=workdir).unwrap()
    claude = build_adapter("claude")
    live = wait_until(
        lambda: (
            (c := runner.live_capture("loop-box", 60, escapes=True)).ok
            and claude.draft(c.text) is not None
            and c
        ),
        10,
        what="the draft on the live screen",
    )
    assert live.answer is Answer.OK
    runner.run("send-keys", "-t", "=loop-box:", "Enter")  # the program exits
    wait_until(lambda: runner.probe("loop-box") is Probe.DEAD, 10, what="the program exited")
    kept = runner.capture("loop-box", 60, escapes=True)
    assert kept.ok and claude.draft(kept.text) is not None  # the dead screen still shows it
    assert runner.live_capture("loop-box", 60, escapes=True).answer is Answer.DEAD
    assert runner.live_capture("loop-none", 60).answer is Answer.ABSENT
