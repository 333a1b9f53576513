"""Spend and memory: what suspending idle agents saves, and how fast a comment wakes one.

- **memory, 20 live vs 20 suspended**: 20 fake-agent sessions started by signed webhooks and
  idle, then suspended by ``sessions.suspendAfterMinutes`` (set by a config reload); at each
  point the live agents' total RSS (their pane process trees from ``/proc``, the figure
  ``status`` shows) and the daemon's RSS. A fake agent holds almost nothing, so what suspension
  frees on the host is measured with the real Claude Code in ``bench/claude_agents.py``;
- **resume**: a comment on an item whose session is suspended → the prompt recorded by the
  fake agent inside its pane (the conversation resumed with ``--resume``, ``tmux.
  resumeProbeSeconds`` 0.1 s), one at a time, each session resumed twice (suspended again in
  between).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import common
import live
import yaml
from common import Figure, Report

NAME = "spend"
SUSPEND_MINUTES = 0.02  # 1.2 s
SECTIONS: dict[str, Any] = {
    "attention": {"quietSeconds": 0.3, "pollSeconds": 0.1},
    "tmux": {"resumeProbeSeconds": 0.1},
    "sessions": {"suspendAfterMinutes": 0},
}


def api(lv: live.Live, path: str) -> Any:
    raw = common.get_request(lv.daemon.host, lv.daemon.port, f"/api/v1{path}", lv.daemon.token)
    status, body = lv.conn.request(raw)
    if status != 200:
        raise RuntimeError(f"{path} answered {status}: {body[:300]!r}")
    return json.loads(body)


def holds(lv: live.Live) -> list[str | None]:
    return [s["hold"] for s in api(lv, "/sessions?limit=1000") if s["status"] == "active"]


def states(lv: live.Live) -> list[str]:
    return [api(lv, f"/attention/{s.ref.replace('#', '%23')}")["state"] for s in lv.sessions]


def set_suspend(lv: live.Live, minutes: float) -> None:
    path = lv.install.config_path
    data = yaml.safe_load(path.read_text())
    data["sessions"] = {"suspendAfterMinutes": minutes}
    path.write_text(yaml.safe_dump(data))


def measure(lv: live.Live) -> tuple[float, int, float]:
    memory = api(lv, "/status")["memory"]
    return memory["agentsRssMb"], memory["liveAgents"], lv.daemon.rss_mb()


def breakdown(lv: live.Live) -> str:
    """Median ms from each wake to the agent's restart (``session.respawned``, after the
    resume probe) and on to the prompt delivered (``session.delivered``: the agent ready)."""
    from the_loop.wire import parse_iso

    events = api(lv, "/events?type=session.*&limit=100000")
    events.sort(key=lambda e: e["id"])
    to_respawn: list[float] = []
    to_delivered: list[float] = []
    woke: dict[str, float] = {}
    respawned: dict[str, float] = {}
    for e in events:
        ts = parse_iso(e["ts"]).timestamp()
        sid = e["sessionId"]
        if e["type"] == "session.woken":
            woke[sid] = ts
        elif e["type"] == "session.respawned" and sid in woke:
            respawned[sid] = ts
            to_respawn.append((ts - woke[sid]) * 1000)
        elif e["type"] == "session.delivered" and sid in respawned:
            to_delivered.append((ts - respawned.pop(sid)) * 1000)
            woke.pop(sid, None)
    mid = common.summarize
    return (
        f"wake → harness restarted and probed: median {mid(to_respawn).p50:.0f} ms; "
        f"→ prompt delivered (agent ready, pasted): median {mid(to_delivered).p50:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    report = Report(NAME, "Spend and memory: suspend idle agents, wake on a comment", __doc__ or "")
    with live.Live.start(NAME, **SECTIONS) as lv:
        with common.step(f"{args.sessions} sessions, idle"):
            lv.burst_spawn(args.sessions)
            lv.wait_idle()
            common.wait_until(
                lambda: all(s == "waiting" for s in states(lv)), timeout=120, what="all idle"
            )
        live_rss, live_n, live_daemon = measure(lv)
        with common.step("suspended by a config reload"):
            set_suspend(lv, SUSPEND_MINUTES)
            common.wait_until(
                lambda: holds(lv) == ["suspended"] * args.sessions, timeout=120, what="suspended"
            )
            common.wait_until(lambda: measure(lv)[1] == 0, timeout=60, what="no live agent")
        held_rss, _held_n, held_daemon = measure(lv)
        report.figure(
            Figure(f"spend.rss.live{live_n}", f"{live_n} live agents' RSS", live_rss, "MB")
        )
        report.figure(
            Figure(f"spend.rss.suspended{args.sessions}", "the same, suspended", held_rss, "MB")
        )
        report.note(
            f"daemon RSS {live_daemon:.1f} → {held_daemon:.1f} MB (what suspension frees on the "
            "host: bench/claude_agents.py, with the real Claude Code)"
        )
        lat: list[float] = []
        with common.step(f"{args.rounds} x {args.sessions} comments into suspended sessions"):
            for round_ in range(args.rounds):
                if round_:
                    common.wait_until(
                        lambda: holds(lv) == ["suspended"] * args.sessions,
                        timeout=120,
                        what="suspended again",
                    )
                for session in list(lv.sessions):
                    ms, _ack = lv.comment(session)
                    lv.wait_idle()
                    lat.append(ms)
        woken = api(lv, "/events?type=session.woken&limit=1000")
        report.note(f"{len(woken)} wakes recorded for {len(lat)} comments")
        report.note(breakdown(lv))
        resume = report.distribution("resume", "comment → prompt in a suspended agent's pane", lat)
        report.figure(
            Figure(
                "spend.resume.p50",
                "suspended → resumed, prompt in the pane, p50",
                resume.p50,
                "ms",
                300,
            )
        )
        report.figure(
            Figure(
                "spend.resume.p99", "suspended → resumed, prompt in the pane, p99", resume.p99, "ms"
            )
        )
    report.finish()


if __name__ == "__main__":
    main()
