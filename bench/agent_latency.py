"""Agents in tmux, driven by signed webhooks into a real daemon (resume, spawn and close paths).

- **spawn**: an authorized ``the-loop start`` comment on a new item → the harness process
  started (the harness's exec-time preamble, see ``live.py``), and → the fake agent's own start
  record (which adds the fake's Python start-up, measured separately);
- **resume** (deliver into a live session): a comment on an item whose agent is live → the
  prompt recorded by the fake agent, i.e. pasted and submitted inside its pane;
- **close**: ``issues`` closed → the agent process exited, and → tmux shows ``#{pane_dead}``;
  the close's ``202`` is compared with the moment the agent exited.

All times are from just before the POST (``time.time()``) to the fake agent's own timestamps
(same clock). Deliveries are sent one at a time, each once the previous one was fully
processed (the inbox idle). Write-backs (👀, 🎉, the announcement) go to a fake GitHub on
loopback, as they would go to GitHub.
"""

from __future__ import annotations

import argparse
import math

import common
import live
from common import Figure, Report

NAME = "agent_latency"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=30)
    parser.add_argument("--comments", type=int, default=300)
    parser.add_argument("--live", type=int, default=5, help="sessions the comments go to")
    args = parser.parse_args()

    report = Report(NAME, "Agent latency: spawn, comment → prompt, close", __doc__ or "")
    with live.Live.start(NAME) as lv:
        tmux_ms = live.tmux_call_ms(lv.install)
        report.distribution("tmux", "one tmux client invocation (display-message)", tmux_ms)
        startup = live.agent_startup_ms(lv.install)
        report.distribution("agent_startup", "fake agent start-up alone (Popen → record)", startup)

        with common.step(f"{args.spawns} spawns, one at a time"):
            sessions = []
            for _ in range(args.spawns):
                sessions.append(lv.spawn())
                lv.wait_idle()
        exec_ms = [(s.exec_at - s.posted_at) * 1000 for s in sessions]
        start_ms = [(s.started_at - s.posted_at) * 1000 for s in sessions]
        spawn = report.distribution("spawn_exec", "start → harness process started", exec_ms)
        spawn_rec = report.distribution(
            "spawn_record", "start → fake agent's start record", start_ms
        )
        report.distribution("spawn_ack", "ack of the start comment", [s.ack_ms for s in sessions])
        report.figure(
            Figure(
                "spawn.p50",
                "authorized start → harness started, p50",
                spawn.p50,
                "ms",
                15,
                earlier=20,
            )
        )
        report.figure(
            Figure(
                "spawn.record.p50",
                "start → fake agent's start record, p50",
                spawn_rec.p50,
                "ms",
                note="adds the fake's Python start-up",
            )
        )
        path = common.PLOTS / f"{NAME}-spawn.svg"
        common.svg_distribution(
            path,
            f"Authorized start → harness process started (n={spawn.n})",
            exec_ms,
            marks=[(15, "target p50 15 ms", "#d62728"), (20, "earlier p50 20 ms", "#777777")],
        )
        report.plot(path)

        targets = sessions[: args.live]
        with common.step(f"warm-up: one comment per live session ({len(targets)})"):
            for s in targets:
                lv.comment(s)
                lv.wait_idle()
        lat: list[float] = []
        acks: list[float] = []
        with common.step(f"{args.comments} comments into live sessions, one at a time"):
            for i in range(args.comments):
                ms, ack = lv.comment(targets[i % len(targets)])
                lv.wait_idle()
                lat.append(ms)
                acks.append(ack)
                if (i + 1) % 100 == 0:
                    common.progress(f"{i + 1} comments")
        resume = report.distribution("resume", "comment → prompt inside the pane", lat)
        report.distribution("resume_ack", "ack of those comments", acks)
        report.figure(
            Figure(
                "resume.p50", "comment → prompt in the pane, p50", resume.p50, "ms", 10, earlier=22
            )
        )
        report.figure(
            Figure(
                "resume.p99", "comment → prompt in the pane, p99", resume.p99, "ms", 25, earlier=31
            )
        )
        path = common.PLOTS / f"{NAME}-resume.svg"
        common.svg_distribution(
            path,
            f"Comment → prompt inside a live agent's pane (n={resume.n})",
            lat,
            marks=[
                (10, "target p50", "#d62728"),
                (25, "target p99", "#d62728"),
                (22, "earlier p50", "#777777"),
            ],
        )
        report.plot(path)
        rss_live = lv.daemon.rss_mb()

        closes = []
        with common.step(f"closing {len(sessions)} items, one at a time"):
            for s in sessions:
                closes.append(lv.close_item(s))
                lv.wait_idle()
        acks_c = [c[0] for c in closes]
        exited = [c[1] for c in closes]
        dead = [c[2] for c in closes]
        report.distribution("close_ack", "ack of the close", acks_c)
        report.distribution("close_exit", "close → agent process exited", exited)
        pane = report.distribution("close_dead", "close → tmux shows the pane dead", dead)
        before = sum(1 for a, e in zip(acks_c, exited, strict=True) if a < e)
        report.note(f"the close's 202 came before the agent exited in {before} of {len(closes)}")
        report.figure(Figure("close.p50", "close → pane dead, p50", pane.p50, "ms", 15, earlier=19))
        report.figure(
            Figure(
                "close.ack.first",
                "close's 202 came before the agent exited",
                100.0 * before / max(len(closes), 1),
                "%",
                100,
                better="higher",
                earlier_text="never (closed before answering)",
            )
        )
        report.figure(
            Figure(
                "close.ack.p50",
                "close's 202, p50",
                summary_p50(acks_c),
                "ms",
                earlier=31,
                earlier_text="31 ms (closed before answering)",
            )
        )
        path = common.PLOTS / f"{NAME}-close.svg"
        common.svg_distribution(
            path,
            f"Close event → the agent's pane dead (n={pane.n})",
            dead,
            marks=[(15, "target p50", "#d62728"), (19, "earlier p50", "#777777")],
        )
        report.plot(path)
        report.figure(
            common.rss_figure(
                "rss.after.agents", f"daemon RSS with {args.spawns} live sessions", rss_live
            )
        )
        if not math.isnan(spawn.p50):
            share = spawn_rec.p50 - summary_p50(startup)
            report.note(
                f"spawn to the fake's start record minus the fake's own start-up: {share:.1f} ms"
            )
    report.finish()


def summary_p50(values: list[float]) -> float:
    return common.summarize(values).p50


if __name__ == "__main__":
    main()
