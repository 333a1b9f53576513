"""The real Claude Code under the-loop: its start-up as sessions pile up, its memory, and what
suspending idle agents frees.

Claude Code (the project's pinned CLI) talks to the fake Messages API on loopback
(``tests/fakes/fake_anthropic.py``). Its binary is a small wrapper that writes
``$EPOCHREALTIME`` to a file named after its working directory and ``exec``s the CLI (same
pid), so every start-up is timed from the moment the harness process started.

- **start-up**: harness process started → Claude's input box on the screen (its
  ``ready_pattern``, the screen read by this script with ``capture-pane`` every 10 ms), and the
  CPU time Claude spent until then (``utime + stime`` of the pane's process, which does not
  move with the other work on a shared machine). *Alone*: one session, closed before the next
  (3 samples); *5th-10th*: sessions started one after another, each once the previous one
  answered its first prompt and went idle, the 5th to the 10th live one measured. Both
  **without the-loop** (a plain ``tmux new-session`` running ``claude`` in a directory trusted
  beforehand; a prompt typed with ``send-keys``) and **under the-loop** (a signed ``the-loop
  start`` comment on a new item; the daemon prepares, spawns and pastes), in one run.
- **memory**: with the 10 sessions under the-loop idle, each agent's RSS and PSS (its pane's
  process tree, ``/proc/<pid>/statm`` and ``smaps_rollup``); the host's ``MemAvailable``
  (``/proc/meminfo``) just before and after the 10 are suspended by
  ``sessions.suspendAfterMinutes`` (a config reload), beside its drift over an equal window
  with nothing happening (this machine is shared); and how many agents
  ``admission.maxAgentsMemoryMb`` (set here to half of ``MemTotal``) lets live at the measured
  PSS per agent.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import common
import live
from common import Figure, Install, Report

import spend
from tests.fakes import payloads as P
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.harness.agent_clis import CLAUDE_BIN
from the_loop.agent.spend import memory
from the_loop.harness.claude import CLAUDE_READY_PATTERN
from the_loop.harness.claude_prep import prepare_claude_config
from the_loop.refs import WorkItemRef

NAME = "claude_agents"
READY = re.compile(CLAUDE_READY_PATTERN)
ALONE = 3
PILE = 10
FIRST_MEASURED = 5
PROMPTS = 20
WRAPPER = """#!/bin/bash
t=$EPOCHREALTIME
printf '%s\\n' "$t" >"$STAMP_DIR/${PWD##*/}"
exec CLAUDE "$@"
"""


def wrapper(root: Path) -> Path:
    """The stamping wrapper in ROOT (its stamps go to ``ROOT/stamps``)."""
    (root / "stamps").mkdir(exist_ok=True)
    path = root / "claude-stamped"
    path.write_text(WRAPPER.replace("CLAUDE", str(CLAUDE_BIN)))
    path.chmod(0o755)
    return path


def claude_env(root: Path, home: Path, api: FakeAnthropic) -> dict[str, str]:
    return {
        **api.claude_env(home / ".claude"),
        "HOME": str(home),
        "STAMP_DIR": str(root / "stamps"),
    }


def cpu_ms(pid: int) -> float:
    try:
        return common.cpu_seconds(pid) * 1000
    except OSError:
        return float("nan")


def screen(install: Install, target: str) -> str:
    return install.tmux("capture-pane", "-p", "-J", "-t", f"={target}:").stdout


def startup(install: Install, target: str, stamp_file: Path) -> tuple[float, float]:
    """Wait until TARGET shows Claude's input box; (ms from the harness start, CPU ms)."""
    ready = common.wait_until(
        lambda: READY.search(screen(install, target)) and time.time(),
        timeout=90,
        interval=0.01,
        what=f"Claude's input box in {target}",
    )
    pid = int(install.tmux("display-message", "-p", "-t", f"={target}:", "#{pane_pid}").stdout)
    cpu = cpu_ms(pid)
    stamp = float(stamp_file.read_text())
    return (ready - stamp) * 1000, cpu


def typed_prompts(
    install: Install, api: FakeAnthropic, targets: list[str], count: int
) -> list[float]:
    """Prompts typed into live idle agents (``send-keys``, the sessions in turn): ms from the
    Enter key to the conversation request at the fake Messages API (a hook on
    ``UserPromptSubmit`` runs in between and Claude Code waits for it)."""
    out = []
    for i in range(count):
        target, marker = targets[i % len(targets)], f"typed-{uuid.uuid4().hex[:12]}"
        install.tmux("send-keys", "-t", f"={target}:", "-l", f"say {marker}")
        common.wait_until(lambda t=target, m=marker: m in screen(install, t), timeout=30)
        t0 = time.time()
        install.tmux("send-keys", "-t", f"={target}:", "Enter")
        request = common.wait_until(
            lambda m=marker: next(
                (r for r in api.snapshot() if r.is_conversation and m in (r.prompt or "")), None
            ),
            timeout=60,
            interval=0.002,
            what="the typed prompt at the API",
        )
        out.append((time.time() - t0) * 1000)
        common.wait_until(
            lambda t=target, n=request.seq: f"FAKE-REPLY-{n}" in screen(install, t),
            timeout=60,
            what="the reply",
        )
    return out


def answered(install: Install, target: str) -> None:
    common.wait_until(
        lambda: "FAKE-REPLY" in screen(install, target), timeout=90, what=f"a reply in {target}"
    )


# --- without the-loop ------------------------------------------------------------------------


def plain_run(
    api: FakeAnthropic,
) -> tuple[list[float], list[float], list[float], list[float], list[float]]:
    """(alone ms, alone CPU ms, 5th-10th ms, 5th-10th CPU ms) for tmux + claude."""
    with Install(f"{NAME}-plain") as install:
        binary = wrapper(install.root)
        env = claude_env(install.root, install.home, api)
        dirs = install.root / "work"
        dirs.mkdir()
        prepare_claude_config(dirs, env)  # trusted once, as a person would have it
        flags = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]

        def one(i: int) -> tuple[float, float]:
            cwd = dirs / f"plain-{i}"
            cwd.mkdir()
            name = f"plain-{i}"
            install.tmux("new-session", "-d", "-s", name, "-c", str(cwd), *flags, str(binary))
            got = startup(install, name, install.root / "stamps" / cwd.name)
            install.tmux("send-keys", "-t", f"={name}:", "-l", "say hello")
            install.tmux("send-keys", "-t", f"={name}:", "Enter")
            answered(install, name)
            return got

        alone = []
        for i in range(ALONE):
            alone.append(one(i))
            install.tmux("kill-session", "-t", f"=plain-{i}")
        piled = [one(ALONE + i) for i in range(PILE)]
        names = [f"plain-{ALONE + i}" for i in range(PILE)]
        with common.step(f"{PROMPTS} prompts typed, without the-loop"):
            typed = typed_prompts(install, api, names, PROMPTS)
    loaded = piled[FIRST_MEASURED - 1 :]
    return (
        [a[0] for a in alone],
        [a[1] for a in alone],
        [p[0] for p in loaded],
        [p[1] for p in loaded],
        typed,
    )


# --- under the-loop ---------------------------------------------------------------------------


def loop_start(lv: live.Live, stamps: Path) -> tuple[int, float, float]:
    """One authorized start on a new item; (item number, start-up ms, CPU ms) once its agent
    answered the spawn prompt and the daemon is idle."""
    number, comment_id = lv.new_item()
    payload = P.issue_comment_event("the-loop start", number=number)
    payload["comment"]["id"] = comment_id
    lv.post("issue_comment", payload, "spawn")
    target = lv.target(number)
    ms, cpu = startup(lv.install, target, stamps / WorkItemRef.parse(lv.ref(number)).slug)
    answered(lv.install, target)
    lv.wait_idle()
    return number, ms, cpu


def loop_close(lv: live.Live, number: int) -> None:
    lv.post("issues", P.issues_event("closed", number=number, state="closed"), "close")
    target = lv.target(number)
    common.wait_until(
        lambda: lv.pane_dead(target) or not screen(lv.install, target),
        timeout=60,
        what="the closed agent gone",
    )
    lv.wait_idle()


def live_pids(lv: live.Live) -> dict[str, list[int]]:
    out = lv.install.tmux("list-panes", "-a", "-F", "#{session_name}\t#{pane_pid}\t#{pane_dead}")
    pids: dict[str, list[int]] = {}
    for line in out.stdout.splitlines():
        name, pid, dead = line.split("\t")
        if dead != "1":
            pids.setdefault(name, []).append(int(pid))
    return pids


def meminfo_available() -> float:
    value = memory.available_mb()
    assert value is not None
    return value


def available_median(samples: int = 5) -> float:
    values = []
    for _ in range(samples):
        values.append(meminfo_available())
        time.sleep(0.2)
    return common.summarize(values).p50


def memory_figures(lv: live.Live, report: Report, cap: int) -> None:
    pids = live_pids(lv)
    both = memory.trees_memory_mb(pids)
    rss = {k: v[0] for k, v in both.items()}
    anon = {k: v[1] for k, v in both.items()}
    pss = {k: sum(pss_mb(p) for p in tree) for k, tree in memory.tree_pids(pids).items()}
    n = len(pids)
    report.distribution(
        "rss", "RSS per live idle Claude Code (pane tree)", list(rss.values()), "MB"
    )
    per = report.distribution(
        "anon",
        "anonymous memory per live idle Claude Code (what admission counts)",
        list(anon.values()),
        "MB",
    )
    report.distribution(
        "pss", "PSS per live idle Claude Code (pane tree)", list(pss.values()), "MB"
    )
    status = spend.api(lv, "/status")["memory"]
    report.note(
        f"{n} live idle agents: RSS {sum(rss.values()):.0f} MB, PSS {sum(pss.values()):.0f} MB, "
        f"anonymous {sum(anon.values()):.0f} MB in all; `status` counts "
        f"{status['agentsAnonMb']:.0f} MB for {status['liveAgents']}"
    )
    with common.step("drift of MemAvailable over a quiet window (nothing happens)"):
        q0 = available_median()
        time.sleep(3)
        q1 = available_median()
    with common.step(f"the {n} agents suspended by a config reload"):
        before = available_median()
        spend.set_suspend(lv, spend.SUSPEND_MINUTES)
        common.wait_until(lambda: not live_pids(lv), timeout=120, what="no live agent")
        after = available_median()
    freed = after - before
    report.figure(
        Figure("claude.rss.p50", "RSS per live idle Claude Code, p50", per_rss(rss), "MB")
    )
    report.figure(
        Figure("claude.anon.p50", "anonymous memory per live idle Claude Code, p50", per.p50, "MB")
    )
    report.figure(
        Figure(
            "claude.suspend.freed",
            f"MemAvailable freed by suspending {n} idle agents",
            freed,
            "MB",
            note=f"{before:.0f} → {after:.0f} MB; quiet drift {q1 - q0:+.0f} MB",
        )
    )
    share = 100 * freed / sum(rss.values()) if rss else float("nan")
    report.figure(
        Figure(
            "claude.suspend.share",
            "suspension frees, share of the agents' RSS",
            share,
            "%",
            90,
            better="higher",
            note=f"of PSS {100 * freed / sum(pss.values()):.0f} %, of anonymous "
            f"{100 * freed / sum(anon.values()):.0f} %"
            if pss
            else "",
        )
    )
    report.figure(
        Figure(
            "claude.capacity",
            f"live agents under admission.maxAgentsMemoryMb {cap}",
            cap // max(per.p50, 1),
            "agents",
            better="higher",
            note=f"{cap} MB ÷ {per.p50:.0f} MB anonymous each",
        )
    )


def pss_mb(pid: int) -> float:
    """PSS of PID (``/proc/<pid>/smaps_rollup``) in MB; 0 when gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0.0
    found = re.search(r"^Pss:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) / 1024 if found else 0.0


def per_rss(rss: dict[str, float]) -> float:
    return common.summarize(list(rss.values())).p50


def loop_run(
    api: FakeAnthropic, report: Report, cap: int
) -> tuple[list[float], list[float], list[float], list[float], list[float]]:
    sections: dict[str, Any] = {
        "attention": {"quietSeconds": 0.5, "pollSeconds": 0.25},
        "admission": {"maxAgentsMemoryMb": cap},
    }
    with tempfile.TemporaryDirectory(prefix="the-loop-bench-claude-") as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        harness = {"binary": str(wrapper(root)), "env": claude_env(root, home, api)}
        with live.Live.start(
            NAME, 50, harnesses={"claude": harness}, default_harness="claude", **sections
        ) as lv:
            alone, piled = loop_samples(lv, root / "stamps")
            with common.step(f"{PROMPTS} prompts typed, under the-loop"):
                typed = typed_prompts(lv.install, api, list(live_pids(lv)), PROMPTS)
            memory_figures(lv, report, cap)
    loaded = piled[FIRST_MEASURED - 1 :]
    return (
        [a[0] for a in alone],
        [a[1] for a in alone],
        [p[0] for p in loaded],
        [p[1] for p in loaded],
        typed,
    )


def loop_samples(
    lv: live.Live, stamps: Path
) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(ms, CPU ms) of ALONE starts each closed before the next, then of PILE starts."""
    alone = []
    with common.step(f"under the-loop: {ALONE} starts alone"):
        for _ in range(ALONE):
            number, ms, cpu = loop_start(lv, stamps)
            alone.append((ms, cpu))
            loop_close(lv, number)
    piled = []
    with common.step(f"under the-loop: {PILE} starts, one after another"):
        for _ in range(PILE):
            _, ms, cpu = loop_start(lv, stamps)
            piled.append((ms, cpu))
    return alone, piled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    report = Report(NAME, "Real Claude Code: start-up under load, memory, suspension", __doc__)
    total = memory.total_mb()
    cap = int((total or 8192) / 2)
    with FakeAnthropic() as api:
        with common.step("without the-loop: tmux + claude"):
            plain = plain_run(api)
        loop = loop_run(api, report, cap)
    labels = ("alone", "alone, CPU", "5th-10th live", "5th-10th live, CPU", "typed prompt")
    medians: dict[str, float] = {}
    for who, runs in (("plain", plain), ("loop", loop)):
        for label, values in zip(labels, runs, strict=True):
            key = f"{who}_{label.replace(' ', '_').replace(',', '').replace('-', '_')}"
            where = "without" if who == "plain" else "under"
            what = "typed prompt → model request" if label == "typed prompt" else "start-up"
            title = f"Claude {what} {where} the-loop, {label}"
            medians[key] = report.distribution(key, title, values).p50
    for who, word in (("plain", "without the-loop"), ("loop", "under the-loop")):
        alone, piled = medians[f"{who}_alone"], medians[f"{who}_5th_10th_live"]
        report.figure(
            Figure(f"claude.start.{who}.alone", f"Claude start-up alone, {word}", alone, "ms")
        )
        report.figure(
            Figure(
                f"claude.start.{who}.piled",
                f"Claude start-up at the 5th-10th live session, {word}",
                piled,
                "ms",
                note=f"{100 * (piled / alone - 1):+.0f} % vs alone; CPU "
                f"{medians[f'{who}_alone_CPU']:.0f} → {medians[f'{who}_5th_10th_live_CPU']:.0f} ms",
            )
        )
    plain_typed, loop_typed = medians["plain_typed_prompt"], medians["loop_typed_prompt"]
    report.figure(
        Figure(
            "claude.prompt.hook",
            "what the-loop's hook adds to a typed prompt, p50",
            loop_typed - plain_typed,
            "ms",
            note=f"typed prompt → model request {plain_typed:.0f} ms without the-loop, "
            f"{loop_typed:.0f} ms under it ({PILE} live)",
        )
    )
    report.finish()


if __name__ == "__main__":
    main()
