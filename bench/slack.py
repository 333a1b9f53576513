"""Slack: signed Events API requests into a real ``the-loop serve``, and thread replies into a
standing session's pane.

1. **ack**: a signed ``event_callback`` (a thread reply by an authorized user), a new TCP
   connection per request (``Connection: close``, as Slack sends them), one at a time; the
   time from ``connect()`` to the whole response read. Every 200 is power-loss-durable: the
   event and its ``slack.received`` event are committed to the inbox with ``synchronous =
   FULL`` before the answer (the commit counted). The replies go to a thread bound to nothing,
   so the inbox worker drops them quickly and the figure is the intake path.
   The same events are then sent one every 20 ms (**paced**): each finds the inbox worker done
   with the one before, as Slack's events, sent as they happen, usually do. Back to back, each
   acknowledgement shares the GIL, the write lock and its sync with the worker processing the
   previous delivery (``bench/analysis.md``, item 18).
2. **reply → pane**: a reply in the thread bound to a running standing session (the fake
   agent in tmux), one at a time, each once the previous one arrived; from just before the
   request (``time.time()``) to the fake agent's own record of the prompt (same clock): the
   intake, the inbox worker, ``standing say`` and the paste into the pane.

The announcement and everything else posted go to a fake Slack Web API on loopback.
"""

from __future__ import annotations

import argparse
import json
import socket
import sqlite3
import time
import uuid
from typing import Any

import common
import live
from common import Daemon, Figure, HttpConn, Install, Report

from tests.fakes import fake_slack as fake_module
from the_loop.slack.signature import sign

NAME = "slack"
SIGNING = "bench-slack-signing-secret"
CHANNEL = "C0BENCH001"
USER = "U0BENCH001"
PACE_MS = 20


def event_request(
    daemon: Daemon, text: str, thread_ts: str, *, close: bool, event_id: str | None = None
) -> bytes:
    body = json.dumps(
        {
            "type": "event_callback",
            "team_id": "T0BENCH",
            "event_id": event_id or f"Ev{uuid.uuid4().hex[:16]}",
            "event_time": int(time.time()),
            "event": {
                "type": "message",
                "channel": CHANNEL,
                "user": USER,
                "text": text,
                "ts": f"{time.time():.6f}",
                "thread_ts": thread_ts,
            },
        }
    ).encode()
    stamp = str(int(time.time()))
    head = (
        f"POST /webhooks/slack HTTP/1.1\r\n"
        f"Host: {daemon.host}:{daemon.port}\r\n"
        "User-Agent: Slackbot 1.0 (+https://api.slack.com/robots)\r\n"
        "Content-Type: application/json\r\n"
        f"X-Slack-Request-Timestamp: {stamp}\r\n"
        f"X-Slack-Signature: {sign(SIGNING.encode(), stamp, body)}\r\n"
        f"Content-Length: {len(body)}\r\n" + ("Connection: close\r\n" if close else "") + "\r\n"
    )
    return head.encode("ascii") + body


def one_new_connection(daemon: Daemon, raw: bytes) -> tuple[float, int]:
    t0 = time.perf_counter()
    sock = socket.create_connection((daemon.host, daemon.port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.sendall(raw)
        buf = bytearray()
        while chunk := sock.recv(65536):
            buf += chunk
    finally:
        sock.close()
    return (time.perf_counter() - t0) * 1000, int(buf[9:12]) if len(buf) >= 12 else 0


def paced_acks(daemon: Daemon, count: int) -> list[float]:
    """COUNT signed events on new connections, one every PACE_MS (as Slack sends them: each
    as it happens), so that each finds the inbox worker done with the one before."""
    latencies: list[float] = []
    interval = PACE_MS / 1000
    start = time.perf_counter()
    for i in range(count):
        due = start + i * interval
        now = time.perf_counter()
        if now < due:
            time.sleep(due - now)  # pacing the request rate, not waiting for a state
        raw = event_request(daemon, f"paced {i}", "1700000000.000001", close=True)
        ms, status = one_new_connection(daemon, raw)
        if status != 200:
            raise RuntimeError(f"paced event {i} answered {status}")
        latencies.append(ms)
    return latencies


def slack_rows(install: Install) -> int:
    conn = sqlite3.connect(install.state_dir / "the-loop.db", timeout=30)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM inbox WHERE source = 'slack'").fetchone()[0])
    finally:
        conn.close()


def conversation_of(install: Install) -> str:
    def found() -> str | None:
        rows: list[dict[str, Any]] = json.loads(
            install.cli("standing", "list", "--format", "json").stdout or "[]"
        )
        return next((r["conversationId"] for r in rows if r.get("status") == "running"), None)

    value = common.wait_until(found, timeout=60, interval=0.1, what="the standing session")
    assert isinstance(value, str)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--acks", type=int, default=1000)
    parser.add_argument("--replies", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--paced", type=int, default=300, help="events sent one every 20 ms")
    args = parser.parse_args()

    report = Report(NAME, "Slack: signed event ack, thread reply → pane", __doc__ or "")
    fake_module._Handler.disable_nagle_algorithm = True
    with fake_module.FakeSlack() as slack, Install(NAME) as install:
        install.extra_env.update(SLACK_SIGNING_SECRET=SIGNING, SLACK_BOT_TOKEN=slack.token)
        install.write_config(
            harnesses={"fake": live.timed_harness(install.agent_dir)},
            slack={
                "enabled": True,
                "apiUrl": slack.api_url,
                "channel": CHANNEL,
                "authorizedUsers": [USER],
            },
            github={"enabled": True},
            standing={
                "enabled": True,
                "sessions": [{"name": "ops", "prompt": "bench", "slack": {"enabled": True}}],
            },
        )
        daemon = Daemon(install).start()
        thread = common.wait_until(
            lambda: next((m.ts for m in slack.posts(CHANNEL) if m.thread_ts is None), None),
            timeout=60,
            interval=0.01,
            what="the announcement",
        )
        conversation = conversation_of(install)
        log = live.AgentLog(install.agent_dir, conversation)
        common.wait_until(lambda: log.prompt_with("bench"), timeout=60, what="the boot prompt")

        with common.step(f"{args.acks} signed Slack events and GitHub pushes, interleaved"):
            before = slack_rows(install)
            acks: list[float] = []
            pushes: list[float] = []
            run = uuid.uuid4().hex[:8]
            for i in range(args.warmup + args.acks):
                raw = event_request(daemon, f"unbound {i}", "1700000000.000001", close=True)
                ms, status = one_new_connection(daemon, raw)
                if status != 200:
                    raise RuntimeError(f"event {i} answered {status}")
                push = common.webhook_request(
                    daemon.host, daemon.port, "push", f"ref-{run}-{i}", b'{"zen": "x"}', close=True
                )
                push_ms, push_status = one_new_connection(daemon, push)
                if push_status != 202:
                    raise RuntimeError(f"push {i} answered {push_status}")
                if i >= args.warmup:
                    acks.append(ms)
                    pushes.append(push_ms)
            stored = slack_rows(install) - before
            if stored != args.warmup + args.acks:
                raise RuntimeError(f"{stored} events stored, not {args.warmup + args.acks}")
        report.distribution(
            "github_ack", "signed GitHub push acknowledged, interleaved (reference)", pushes
        )
        ack = report.distribution("ack", "signed Slack event acknowledged (new connection)", acks)
        report.figure(
            Figure("slack.ack.p50", "signed Slack event acknowledged, p50", ack.p50, "ms", 2)
        )
        report.figure(
            Figure("slack.ack.p99", "signed Slack event acknowledged, p99", ack.p99, "ms")
        )
        with common.step(f"{args.paced} signed Slack events, one every {PACE_MS} ms"):
            spaced = paced_acks(daemon, args.paced)
        calm = report.distribution(
            "ack_paced", f"signed Slack event acknowledged, one every {PACE_MS} ms", spaced
        )
        report.figure(
            Figure(
                "slack.ack.paced.p50",
                f"signed Slack event acknowledged, one every {PACE_MS} ms, p50",
                calm.p50,
                "ms",
                note="the inbox worker done with the previous event (informational)",
            )
        )

        conn = HttpConn(daemon.host, daemon.port)
        lat: list[float] = []
        with common.step(f"{args.replies} thread replies into the standing session"):
            try:
                for i in range(args.replies + 5):
                    marker = f"bench-marker-{uuid.uuid4().hex}"
                    raw = event_request(daemon, f"look at this ({marker})", thread, close=False)
                    t0 = time.time()
                    status, body = conn.request(raw)
                    if status != 200:
                        raise RuntimeError(f"reply {i} answered {status}: {body[:200]!r}")
                    record = common.wait_until(
                        lambda m=marker: log.prompt_with(m),  # type: ignore[misc]
                        timeout=30,
                        interval=0.001,
                        what="the reply in the pane",
                    )
                    if i >= 5:
                        lat.append((float(record["ts"]) - t0) * 1000)
            finally:
                conn.close()
        api: list[float] = []
        with common.step(f"{args.replies} `standing say` through the REST API (reference)"):
            conn = HttpConn(daemon.host, daemon.port)
            try:
                for i in range(args.replies):
                    marker = f"bench-api-{uuid.uuid4().hex}"
                    body = json.dumps({"text": f"look at this ({marker})"}).encode()
                    raw = (
                        f"POST /api/v1/standing/ops/messages HTTP/1.1\r\n"
                        f"Host: {daemon.host}:{daemon.port}\r\n"
                        f"Authorization: Bearer {daemon.token}\r\n"
                        "Content-Type: application/json\r\n"
                        f"Content-Length: {len(body)}\r\n\r\n"
                    ).encode() + body
                    t0 = time.time()
                    status, answer = conn.request(raw)
                    if status != 200:
                        raise RuntimeError(f"say {i} answered {status}: {answer[:200]!r}")
                    record = common.wait_until(
                        lambda m=marker: log.prompt_with(m),  # type: ignore[misc]
                        timeout=30,
                        interval=0.001,
                        what="the message in the pane",
                    )
                    api.append((float(record["ts"]) - t0) * 1000)
            finally:
                conn.close()
        report.distribution("api_say", "`standing say` over REST → pane (reference)", api)
        reply = report.distribution("reply", "thread reply → prompt inside the pane", lat)
        report.figure(
            Figure("slack.reply.p50", "thread reply → prompt in the pane, p50", reply.p50, "ms", 20)
        )
        report.figure(
            Figure("slack.reply.p99", "thread reply → prompt in the pane, p99", reply.p99, "ms")
        )
        path = common.PLOTS / f"{NAME}-reply.svg"
        common.svg_distribution(
            path,
            f"Slack thread reply → prompt inside a standing session's pane (n={reply.n})",
            lat,
            marks=[(20, "target p50 20 ms", "#d62728")],
        )
        report.plot(path)
        daemon.stop()
        install.cli("standing", "stop")
    report.finish()


if __name__ == "__main__":
    main()
