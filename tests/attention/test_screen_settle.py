"""The screen detector closes a prompt only when two passes in a row no longer see it: one
capture taken while the pane redraws must not close a question a person is about to answer."""

from __future__ import annotations

from the_loop.agent.attention.screen import ScreenDetector
from the_loop.store import attention as store


def test_a_prompt_leaves_the_screen_only_when_two_passes_agree() -> None:
    d = ScreenDetector()
    assert d.settled("a", store.WAITING, store.NEEDS_PERMISSION)  # a prompt is read at once
    assert not d.settled("a", store.NEEDS_PERMISSION, store.WORKING)  # one pass: not yet
    assert d.settled("a", store.NEEDS_PERMISSION, store.WORKING)  # the next agrees
    assert not d.settled("a", store.NEEDS_INPUT, store.WAITING)
    assert not d.settled("a", store.NEEDS_INPUT, store.WORKING)  # passes that disagree
    assert d.settled("a", store.NEEDS_INPUT, store.WORKING)
    assert d.settled("b", store.WORKING, store.WAITING)  # no prompt involved: at once
    assert not d.settled("c", store.NEEDS_PERMISSION, store.WAITING)
    assert d.settled("c", store.NEEDS_PERMISSION, store.NEEDS_INPUT)  # the prompt is back
    assert not d.settled("c", store.NEEDS_INPUT, store.WAITING)  # counted afresh
