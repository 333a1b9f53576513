"""The dashboard's Sessions page with 200 live agent sessions.

Two hundred authorized starts are posted back to back to a daemon running the fake agent
(``routing.maxConcurrentSessions: 250``) and the benchmark waits until every agent took its
first prompt. It then logs in (``POST /login`` with the token, as the browser does) and asks
for ``GET /`` with the session cookie over one keep-alive connection, one request at a time:
the figure is the time to the whole page (status, headers and the 200-row table), measured
by the client. The page is rendered on the server from the same core views the API uses
(sessions with their attention), so this is also the cost of that view.
"""

from __future__ import annotations

import argparse
import json
import time

import common
import live
from common import Figure, HttpConn, Report

NAME = "dashboard"


def login(lv: live.Live) -> str:
    """The session cookie of a JSON login with the daemon's full token."""
    body = json.dumps({"token": lv.daemon.token}).encode()
    raw = (
        f"POST /login HTTP/1.1\r\nHost: {lv.daemon.host}:{lv.daemon.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode("ascii") + body
    conn = HttpConn(lv.daemon.host, lv.daemon.port)
    conn.sock.sendall(raw)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = conn.sock.recv(65536)
        if not chunk:
            break
        head += chunk
    conn.close()
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"set-cookie: the_loop_session="):
            return line.split(b": ", 1)[1].split(b";", 1)[0].decode("ascii")
    raise RuntimeError(f"no session cookie in the login answer: {head[:300]!r}")


def page_request(lv: live.Live, path: str, cookie: str) -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\nHost: {lv.daemon.host}:{lv.daemon.port}\r\n"
        f"Cookie: {cookie}\r\nAccept: text/html\r\n\r\n"
    ).encode("ascii")


def cpu_share(pid: int, seconds: float) -> float:
    """The share of one core process PID used during SECONDS (utime + stime)."""

    t0, c0 = time.monotonic(), common.cpu_seconds(pid)
    common.wait_until(lambda: time.monotonic() - t0 >= seconds, timeout=seconds + 5, interval=0.5)
    return (common.cpu_seconds(pid) - c0) / (time.monotonic() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()

    report = Report(NAME, f"Dashboard: Sessions page with {args.sessions} live", __doc__ or "")
    with live.Live.start(NAME, max_sessions=args.sessions + 50) as lv:
        with common.step(f"{args.sessions} starts posted back to back"):
            lv.burst_spawn(args.sessions)
            lv.wait_idle(timeout=300)
        cookie = login(lv)
        conn = HttpConn(lv.daemon.host, lv.daemon.port)
        raw = page_request(lv, "/", cookie)
        status, body = conn.request(raw)
        rows = body.count(b"<tr data-session=")
        if status != 200 or rows != args.sessions:
            raise RuntimeError(f"GET / answered {status} with {rows} session rows")
        for _ in range(20):  # warm-up: templates compiled, connections and caches open
            conn.request(raw)
        idle_cpu = cpu_share(lv.daemon.pid, 5.0)
        lat: list[float] = []
        with common.step(f"{args.requests} requests for the Sessions page, one at a time"):
            for _ in range(args.requests):
                t0 = time.perf_counter()
                status, body = conn.request(raw)
                lat.append((time.perf_counter() - t0) * 1000)
                if status != 200:
                    raise RuntimeError(f"GET / answered {status}")
        conn.close()
        report.note(
            f"the daemon used {idle_cpu:.0%} of a core with the {args.sessions} agents live and "
            "no request (its background work: the screen detector, housekeeping); the "
            f"fastest page took {min(lat):.1f} ms"
        )
        s = report.distribution("sessions_page", f"GET / with {args.sessions} sessions", lat)
        report.figure(
            Figure(
                "dash.sessions.p50",
                f"Sessions page, {args.sessions} live sessions, p50",
                s.p50,
                "ms",
                30,
                note=f"{len(body) // 1024} KB of HTML",
            )
        )
        report.figure(
            Figure("dash.sessions.p95", f"Sessions page, {args.sessions} live, p95", s.p95, "ms")
        )
        path = common.PLOTS / f"{NAME}-sessions.svg"
        common.svg_distribution(
            path,
            f"Sessions page with {args.sessions} live sessions (n={s.n})",
            lat,
            marks=[(30, "target p50 30 ms", "#d62728")],
        )
        report.plot(path)
    report.finish()


if __name__ == "__main__":
    main()
