"""The screen detector: the attention of agents whose harness reports none of its own.

For every live tmux agent whose harness is read from the screen (``attention.harnesses.<h>.
signals: screen``, the default for harnesses not listed), each pass looks at the pane: a
permission pattern on it → ``needs-permission``; a question pattern → ``needs-input``; a pane
unchanged for ``attention.quietSeconds`` → ``waiting``; a pane that changed → ``working``. The
rule that matched is recorded, so ``the-loop attention explain`` names it.

Panes are read when tmux says they printed (``runner.tmux_watch``, decision 0059), when first
watched, and once every ``REREAD_SECONDS`` whatever happened (a lost notification is caught
there; re-reads due about the same time are done in one pass); a pane that printed nothing
keeps its last screen, and the quiet rule counts from the time of its last output. A pane tmux
cannot watch is read on every pass, unless tmux said it is gone: an absent pane is read again
only when it is watched afresh or every ``REREAD_SECONDS`` (the reconciler tells that its agent
vanished; a pass every second for it would cost two tmux calls a pane). Passes run when a
pane printed, something changed, or the last pass's ``next_due`` falls due (decision 0066).

A harness that reports its finished turns itself (``signals: notify``, Codex) is read for its
prompts only: no quiet rule (the notify program says ``waiting``), and a changed pane means
``working`` only when it no longer shows the prompt the agent was waiting on.
"""

from __future__ import annotations

import hashlib
import re
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from the_loop.agent import node as nodes
from the_loop.config.attention import HarnessAttention
from the_loop.context import Ctx
from the_loop.errors import Conflict, Unavailable
from the_loop.refs import attach_command, standing_target
from the_loop.runner import Answer, Probe
from the_loop.runner.tmux_watch import PaneWatch
from the_loop.store import attention as store
from the_loop.store import sessions as session_store
from the_loop.store import standing as standing_store
from the_loop.store.sessions import SessionStatus

SCREEN_LINES = 60
TAIL_LINES = 8
"""Prompt patterns are matched against the last TAIL_LINES non-blank lines of the screen (a
prompt answered and scrolled up no longer counts)."""
SIGNAL = store.SCREEN_SIGNAL
READ = ("screen", "notify")
"""The ``signals`` modes the detector reads the screen for."""
REREAD_SECONDS = 300.0
"""A watched pane that printed nothing is read again after this long (the safety re-read)."""
REREAD_EARLY = 0.5
"""When one pane's re-read is due, the panes whose re-read falls within this share of
``REREAD_SECONDS`` are read in the same pass: re-reads gather into a few passes instead of
one pass per pane (panes first read over a minute of spawns would each wake one)."""


@dataclass(frozen=True, slots=True)
class Watched:
    """A live tmux agent of this node (``agents``), and when it was started."""

    key: str
    harness: str
    target: str
    work_item: str | None = None
    started: float | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one look at a screen decided: the state, the rule and the matched text (with the
    tool and its input when the pattern names them)."""

    state: str
    rule: str
    text: str = ""
    kind: str = ""
    tool: str = ""
    input: str = ""


@dataclass
class _Seen:
    digest: str
    changed_at: float
    screen: str = ""
    read_at: float = 0.0
    state: str | None = None
    quiet_at: float | None = None
    """When the quiet rule turns this ``working`` pane ``waiting`` if it prints nothing."""


@dataclass
class ScreenDetector:
    """The detector's memory between passes: each pane's last digest and when it changed, and
    the agents whose prompt one pass no longer saw (``leaving``: the state that pass read)."""

    seen: dict[str, _Seen] = field(default_factory=dict)
    leaving: dict[str, str] = field(default_factory=dict)
    watch: PaneWatch | None = None
    due: float = float("inf")
    """When the last pass said to look again with nothing printed (``next_due``)."""
    absent: dict[str, float] = field(default_factory=dict)
    """Panes tmux said were gone, by target, and when it said so."""

    def settled(self, key: str, before: str | None, after: str) -> bool:
        """Whether a change of KEY from BEFORE to AFTER may be recorded now: a prompt leaves
        (a state waiting on a person becomes one that does not) only when two passes in a row
        read the same, so one capture taken while the pane redraws never closes it."""
        if before not in store.HUMAN or after in store.HUMAN:
            self.leaving.pop(key, None)
            return True
        if self.leaving.get(key) == after:
            del self.leaving[key]
            return True
        self.leaving[key] = after
        return False

    def look(
        self,
        key: str,
        screen: str,
        now: float,
        printed: float | None = None,
        settled: float | None = None,
    ) -> float:
        """Record SCREEN of KEY read at NOW (its pane last printed at PRINTED, when tmux
        said); how long (seconds) it has been unchanged. A pane seen for the first time that
        has not printed since it was watched counts as unchanged since SETTLED, when given."""
        digest = hashlib.blake2b(screen.encode(), digest_size=16).hexdigest()
        prior = self.seen.get(key)
        if prior is None and printed is None and settled is not None:
            self.seen[key] = _Seen(digest, min(settled, now), screen, now)
            return now - min(settled, now)
        if prior is None or prior.digest != digest:
            changed = now if printed is None else min(printed, now)
            self.seen[key] = _Seen(digest, changed, screen, now)
            return now - changed
        prior.read_at = now
        return now - prior.changed_at

    def to_read(
        self, agents: list[Watched], now: float, others: Sequence[Watched] = ()
    ) -> tuple[list[Watched], dict[str, float]]:
        """Which of AGENTS to read now (all of them without a watch), and when each pane
        that tmux said printed last printed. Of OTHERS (agents read through hooks alone), only
        the end of their program is watched: the reconciler looks at once."""
        if self.watch is None:
            return agents, {}
        ends = {a.target: a.started for a in others}
        fresh = self.watch.watch([a.target for a in agents], ends)
        printed = self.watch.take()
        keys = {a.key for a in agents}
        for key in [k for k in self.seen if k not in keys]:
            del self.seen[key]
        targets = {a.target for a in agents}
        for target in [t for t in self.absent if t not in targets or t in fresh]:
            del self.absent[target]
        overdue = any(now - s.read_at >= REREAD_SECONDS for s in self.seen.values())
        reread = REREAD_SECONDS * (1 - REREAD_EARLY) if overdue else REREAD_SECONDS

        def due(a: Watched) -> bool:
            gone = self.absent.get(a.target)
            if gone is not None:
                return a.target in printed or now - gone >= REREAD_SECONDS
            seen = self.seen.get(a.key)
            return (
                seen is None
                or a.target in fresh
                or a.target in printed
                or now - seen.read_at >= reread
                or not self.watch_armed(a.target)
            )

        return [a for a in agents if due(a)], printed

    def watch_armed(self, target: str) -> bool:
        return self.watch is not None and self.watch.armed(target)

    def next_due(self, agents: list[Watched], now: float, failed: bool) -> float:
        """When to look again if no watched pane prints: at once while a prompt is leaving
        (``settled`` wants a second look), a read FAILED or a pane is not watched; else when a
        working pane's quiet time ends, or at its safety re-read."""
        watched = all(self.watch_armed(a.target) or a.target in self.absent for a in agents)
        if self.leaving or failed or not watched:
            return now
        due = min((at + REREAD_SECONDS for at in self.absent.values()), default=float("inf"))
        for seen in self.seen.values():
            due = min(due, seen.read_at + REREAD_SECONDS)
            if seen.quiet_at is not None:
                due = min(due, seen.quiet_at)
        return due


def tail_of(screen: str) -> str:
    """The last TAIL_LINES non-blank lines of SCREEN: where its patterns are matched."""
    return "\n".join([line for line in screen.splitlines() if line.strip()][-TAIL_LINES:])


def classify(
    screen: str, quiet_for: float, quiet_seconds: float, settings: HarnessAttention
) -> Verdict:
    """The attention SCREEN shows (unchanged for QUIET_FOR seconds); pure."""
    tail = tail_of(screen)
    stuck = blocked(tail, settings, screen)
    if stuck is not None:
        return stuck
    for index, pattern in enumerate(settings.permission_patterns):
        found = re.search(pattern, tail)
        if found:
            rule = f"permissionPatterns[{index}] {pattern!r} matched"
            return _prompt(store.NEEDS_PERMISSION, rule, "permission", found, pattern, screen)
    for index, pattern in enumerate(settings.question_patterns):
        found = re.search(pattern, tail)
        if found:
            rule = f"questionPatterns[{index}] {pattern!r} matched"
            return _prompt(store.NEEDS_INPUT, rule, "question", found, pattern, screen)
    for index, pattern in enumerate(settings.waiting_patterns):
        if re.search(pattern, tail):
            return Verdict(store.WAITING, f"waitingPatterns[{index}] {pattern!r} matched")
    if quiet_for >= quiet_seconds:
        return Verdict(store.WAITING, f"pane unchanged for {quiet_seconds:g}s (quietSeconds)")
    return Verdict(store.WORKING, "pane changed")


def _prompt(
    state: str, rule: str, kind: str, found: re.Match[str], pattern: str, screen: str
) -> Verdict:
    """The verdict of a PATTERN FOUND in the screen's tail. Its text is the group ``text``
    when the pattern names one, else the whole match; groups ``tool`` and ``input`` name what
    the prompt asks about. What the tail does not show (Gemini draws the command, or the
    question of its sign-in dialog, above the lines the patterns are matched in) is read from
    the pattern's last match in the whole SCREEN: the dialog at the bottom."""
    groups = found.re.groupindex
    text = found.group("text") if "text" in groups else found.group(0)
    tool = given = ""
    if "tool" in groups or "input" in groups or text is None:
        matches = list(re.finditer(pattern, screen))
        last = matches[-1] if matches else found
        tool = (last.group("tool") or "") if "tool" in groups else ""
        given = (last.group("input") or "") if "input" in groups else ""
        if text is None:
            text = last.group("text") or found.group(0)
    return Verdict(state, rule, text.strip(), kind, tool.strip(), given.strip())


def blocked(tail: str, settings: HarnessAttention, screen: str = "") -> Verdict | None:
    """``blocked`` with the matched line (or the pattern's group ``text``, read as
    ``_prompt`` reads it) as the reason when TAIL, the end of SCREEN, shows that the agent
    cannot work (``blockedPatterns``); None otherwise. A match whose group ``input_box`` took
    part is a failed turn, not a screen the agent is stuck on: it holds no message. Pure."""
    for index, pattern in enumerate(settings.blocked_patterns):
        found = re.search(pattern, tail)
        if found:
            rule = f"blockedPatterns[{index}] {pattern!r} matched"
            if "input_box" in found.re.groupindex and found.group("input_box") is not None:
                # a failed turn's line with the agent's input box under it: the next
                # message is its retry, it holds nothing (``store.attention.holds``)
                rule = f"{store.PASSING_FAILURE} ({rule}, the input box under it)"
            return _prompt(store.BLOCKED, rule, "blocked", found, pattern, screen or tail)
    return None


def _hooks_verdict(
    screen: str, settings: HarnessAttention, row: store.Row | None
) -> Verdict | None:
    """For a harness that reports through hooks only what they cannot say: that it is
    blocked, and that it no longer is (then ``waiting``: it takes input again) — a
    ``blocked`` the screen read, not one a hook reported (a failed turn)."""
    tail = tail_of(screen)
    found = blocked(tail, settings, screen)
    if found is None and row is not None and (row.state, row.signal) == (store.BLOCKED, SIGNAL):
        return Verdict(store.WAITING, "the blocking message is gone")
    return found


def watched(ctx: Ctx) -> list[Watched]:
    """The live tmux agents whose attention is read from the screen."""
    return [w for w in agents(ctx) if reads_screen(ctx, w)]


def agents(ctx: Ctx) -> list[Watched]:
    """The live tmux agents of this node, work items' and standing sessions'."""
    conn = ctx.db.connect()
    found: list[Watched] = []
    here = nodes.shared_name(ctx)  # only this node's panes
    for status in (SessionStatus.active, SessionStatus.paused):
        for rec in session_store.list_sessions(conn, status, None):
            if nodes.elsewhere(here, rec.node):
                continue
            if rec.runner == "tmux" and rec.tmux_target and rec.started_at is not None:
                found.append(
                    Watched(rec.id, rec.harness, rec.tmux_target, rec.work_item, rec.started_at)
                )
    for srec in standing_store.list_records(conn):
        if srec.status.value == "running" and not nodes.elsewhere(here, srec.node):
            harness = srec.harness or _declared_harness(ctx, srec.name)
            target = standing_target(srec.name)
            found.append(Watched(f"standing:{srec.name}", harness, target, None, srec.started_at))
    return found


def reads_screen(ctx: Ctx, agent: Watched) -> bool:
    """Whether AGENT's attention is read from its screen (wholly, or for what its hooks
    cannot say: a sign-in screen)."""
    mine = ctx.config.attention_of(agent.harness)
    return mine.signals in READ or (mine.signals == "hooks" and bool(mine.blocked_patterns))


def _declared_harness(ctx: Ctx, name: str) -> str:
    for entry in ctx.config.standing.sessions:
        if entry.name == name and entry.harness:
            return entry.harness
    return ctx.config.routing.default_harness


def detect_once(ctx: Ctx, detector: ScreenDetector, now: float | None = None) -> int:
    """One pass over the watched agents; returns how many changed state."""
    now = time.time() if now is None else now
    changed = 0
    read: list[Watched] = []
    others: list[Watched] = []
    for agent in agents(ctx):
        (read if reads_screen(ctx, agent) else others).append(agent)
    reading, printed = detector.to_read(read, now, others)
    captures = ctx.runners.tmux.capture_many([a.target for a in reading], SCREEN_LINES)
    failed = False
    for agent in read:
        settings = ctx.config.attention_of(agent.harness)
        capture = captures.get(agent.target)
        if capture is None:  # nothing printed: only the quiet rule can change its state
            changed += _still(ctx, detector, agent, settings, now)
            continue
        if capture.answer is Answer.ABSENT:
            detector.absent[agent.target] = now
            continue
        detector.absent.pop(agent.target, None)
        if not capture.ok:
            failed = True
            continue
        screen = capture.text.rstrip()
        if settings.signals == "hooks":
            detector.look(agent.key, screen, now, printed.get(agent.target))
            row = store.get(ctx.db.connect(), agent.key)
            found = _hooks_verdict(screen, settings, row)
            if found is not None and _record(ctx, agent, found, screen, now, settings, detector):
                changed += 1
            continue
        settled = None if agent.key in detector.seen else _waiting_since(ctx, agent)
        quiet = detector.look(agent.key, screen, now, printed.get(agent.target), settled)
        changed += _judge(ctx, detector, agent, settings, screen, quiet, now)
    detector.due = detector.next_due(read, now, failed)
    return changed


def _waiting_since(ctx: Ctx, agent: Watched) -> float | None:
    """Since when AGENT has been recorded ``waiting``, None when it is not: a detector that
    starts (the daemon restarted) takes a pane that has not printed since for as quiet as
    that, rather than reading every idle agent ``working`` until its quiet time is over."""
    row = store.get(ctx.db.connect(), agent.key)
    return row.since if row is not None and row.state == store.WAITING else None


def _judge(
    ctx: Ctx,
    detector: ScreenDetector,
    agent: Watched,
    settings: HarnessAttention,
    screen: str,
    quiet: float,
    now: float,
) -> int:
    notify = settings.signals == "notify"
    quiet_seconds = float("inf") if notify else ctx.config.attention.quiet_seconds
    verdict = classify(screen, quiet, quiet_seconds, settings)
    recorded = _record(ctx, agent, verdict, screen, now, settings, detector)
    seen = detector.seen.get(agent.key)
    if seen is not None:
        seen.state = verdict.state
        working = verdict.state == store.WORKING and quiet_seconds < float("inf")
        seen.quiet_at = seen.changed_at + quiet_seconds if working else None
    return 1 if recorded else 0


def _still(
    ctx: Ctx, detector: ScreenDetector, agent: Watched, settings: HarnessAttention, now: float
) -> int:
    """An agent whose pane printed nothing since it was read: judged again from the screen
    it kept only when time alone can change the verdict (working → waiting), or when a
    prompt leaving it wants its second look (``settled``)."""
    seen = detector.seen.get(agent.key)
    if seen is None or settings.signals == "hooks":
        return 0
    if seen.state != store.WORKING and agent.key not in detector.leaving:
        return 0
    return _judge(ctx, detector, agent, settings, seen.screen, now - seen.changed_at, now)


def _record(
    ctx: Ctx,
    agent: Watched,
    verdict: Verdict,
    screen: str,
    now: float,
    settings: HarnessAttention,
    detector: ScreenDetector,
) -> bool:
    notify = settings.signals == "notify"
    row = store.get(ctx.db.connect(), agent.key)
    if row is not None and row.gone:
        return False  # its agent has exited (a dead pane's screen still changes as tmux marks
        # it): only starting it again lifts that
    if notify and verdict.state == store.WORKING and (row is None or row.state not in store.HUMAN):
        return False  # the harness reports its turns; only a prompt's end is read here
    # a harness that reports its turns says its last message itself: a wait read from its
    # screen (a waitingPatterns match) is no finished turn to post
    last = last_message(screen, settings) if verdict.state == store.WAITING and not notify else None
    if (
        row is not None
        and row.state == verdict.state
        and (verdict.state not in store.HUMAN or (row.prompt and row.prompt.text == verdict.text))
        and not _answered_between(row, last, settings)
    ):
        detector.leaving.pop(agent.key, None)
        return False
    if not detector.settled(agent.key, row.state if row else None, verdict.state):
        return False
    prompt = (
        store.NewPrompt(verdict.kind, tool=verdict.tool, input=verdict.input, text=verdict.text)
        if verdict.kind
        else None
    )
    with ctx.db.transaction() as tx:
        change = store.set_state(
            tx,
            agent.key,
            verdict.state,
            SIGNAL,
            verdict.rule,
            now=now,
            prompt=prompt,
            last_message=last,
            work_item=agent.work_item,
            standing=agent.key.removeprefix("standing:")
            if agent.key.startswith("standing:")
            else None,
            source="screen",
        )
    return change is not None


def _answered_between(row: store.Row, last: str | None, settings: HarnessAttention) -> bool:
    """Whether a pane read ``waiting`` again, as it was recorded, shows an answer that was not
    recorded: a turn that began and ended between two passes (the demo agent answers at
    once, under its prompt that matches a waitingPatterns). Only for a harness whose
    ``lastMessagePatterns`` say where its answer is: without them the screen's last lines
    are no answer of the agent's."""
    return (
        row.state == store.WAITING
        and bool(settings.last_message_patterns)
        and bool(last and last.strip())
        and last != row.last_message
    )


def last_message(screen: str, settings: HarnessAttention, count: int = 5) -> str:
    """The agent's last message on SCREEN: the last match of the first of the harness's
    ``lastMessagePatterns`` that matches (its group ``text``, else the whole match), each line
    without the indentation the harness draws it with, and "" when none does (no answer
    drawn yet: what is there is the harness's own input box and footer); for a harness
    without patterns, the screen's last COUNT lines. Pure."""
    for pattern in settings.last_message_patterns:
        found = list(re.finditer(pattern, screen))
        if found:
            match = found[-1]
            text = match.group("text") if "text" in match.re.groupindex else match.group(0)
            first, _, rest = text.partition("\n")  # the first line follows the harness's mark
            rest = textwrap.dedent("\n".join(line.rstrip() for line in rest.split("\n")))
            return f"{first.strip()}\n{rest}".strip()
    if settings.last_message_patterns:
        return ""
    lines = [line.rstrip() for line in screen.splitlines() if line.strip()]
    return "\n".join(lines[-count:])


def answer_with_keys(ctx: Ctx, key: str, harness: str, target: store.Prompt, decision: str) -> None:
    """Send the keys that answer TARGET on KEY's screen; ``Conflict`` when the screen no longer
    shows that prompt, ``Unavailable`` when tmux cannot tell."""
    agent = next((w for w in watched(ctx) if w.key == key), None)
    if agent is None:
        raise Conflict(f"prompt {target.id}: the agent is not running under the screen detector")
    capture = ctx.runners.tmux.capture(agent.target, SCREEN_LINES)
    if not capture.ok:
        raise Unavailable(f"tmux did not answer about {agent.target}")
    settings = ctx.config.attention_of(agent.harness)
    verdict = classify(capture.text.rstrip(), 0.0, float("inf"), settings)
    if verdict.state != store.NEEDS_PERMISSION or verdict.text != target.text:
        raise Conflict(f"the screen no longer shows prompt {target.id}; this answer is stale")
    tmux = ctx.runners.tmux
    owner = tmux.owner_of(agent.target)
    if owner != key or tmux.probe(agent.target) is not Probe.LIVE:
        raise Conflict(f"prompt {target.id}: the pane is not the agent's any more")
    keys = settings.allow_keys if decision == "allow" else settings.deny_keys
    sent = tmux.run("send-keys", "-t", f"={agent.target}:", *keys)
    if not sent.ok:
        raise Unavailable(f"tmux did not take the keys for {agent.target}: {sent.stderr.strip()}")
    if not _gone(ctx, agent.target, settings, target.text):
        raise Unavailable(
            f"the keys for prompt {target.id} were sent, but the screen still shows it; answer "
            f"it in the agent's terminal (`{attach_command(key)}`)"
        )


def _gone(ctx: Ctx, target: str, settings: HarnessAttention, text: str, wait: float = 5.0) -> bool:
    """Whether the screen of TARGET stops showing the prompt TEXT within WAIT seconds."""
    deadline = time.monotonic() + wait
    while True:
        capture = ctx.runners.tmux.capture(target, SCREEN_LINES)
        if capture.ok:
            verdict = classify(capture.text.rstrip(), 0.0, float("inf"), settings)
            if verdict.state != store.NEEDS_PERMISSION or verdict.text != text:
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
