"""GitHub broker: what brokering adds to a confined agent's GitHub API call (SPEC §18).

A real ``the-loop serve`` and the fake GitHub on loopback. A GET of an issue's comments, a new
connection each, alternating: **direct** to the fake (with the token, as an unconfined agent
does) and **brokered**: through the daemon's egress socket the way the in-sandbox forwarder
carries it (``AGENT TOKEN api``, then the plain request), so the daemon checks the hook token
and the request, adds the token and sends it on. The difference of the medians is the
broker's added latency per request (the in-sandbox forwarder's own hop is not included).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import time

from common import Daemon, Figure, Install, Report

from tests.fakes.fake_github import FakeGitHub
from the_loop.agent.attention.spawn import issue_token
from the_loop.agent.egress import SOCKET, egress_dir
from the_loop.store import open_database

NAME = "github_broker"
REPO = "octo/app"


def _ms(connect: socket.socket, request: bytes) -> float:
    start = time.perf_counter()
    with connect as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    elapsed = (time.perf_counter() - start) * 1000
    if not answer.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"not answered 200: {answer[:200]!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    report = Report(NAME, "GitHub broker", "an API GET direct vs through the daemon's broker")
    with FakeGitHub() as gh, Install(NAME) as install:
        gh.create_repo(REPO)
        number = gh.add_issue(REPO, "Flaky", "fix it", labels=["the-loop"])
        gh.add_comment(REPO, number, "a comment", author="alice")
        install.extra_env["FAKE_GH_TOKEN"] = gh.token
        install.write_config(
            github={"apiUrl": gh.api_url, "tokenEnv": "FAKE_GH_TOKEN", "repos": [REPO]}
        )
        Daemon(install).start()
        db = open_database(install.state_dir)
        agent = "bench-agent"
        ref = f"github:127.0.0.1/{REPO}#{number}"
        hook = issue_token(db, agent, work_item=ref, transcript_root=None)
        path = f"/repos/{REPO}/issues/{number}/comments"
        plain = f"GET {gh.prefix}{path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        direct = (plain + f"Authorization: Bearer {gh.token}\r\n\r\n").encode()
        brokered = f"{agent} {hook} api\n".encode() + (plain + "\r\n").encode()
        where = str(egress_dir(install.state_dir) / SOCKET)

        def via_broker() -> float:
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(where)
            return _ms(conn, brokered)

        def straight() -> float:
            return _ms(socket.create_connection(("127.0.0.1", gh.port)), direct)

        via_broker(), straight()  # warm both paths
        times: dict[str, list[float]] = {"direct": [], "brokered": []}
        for _ in range(args.runs):
            times["direct"].append(straight())
            times["brokered"].append(via_broker())
    p50 = {name: statistics.median(values) for name, values in times.items()}
    report.figure(Figure("broker.api.direct.p50", "API GET direct, p50", p50["direct"], "ms"))
    report.figure(Figure("broker.api.brokered.p50", "API GET brokered, p50", p50["brokered"], "ms"))
    added = p50["brokered"] - p50["direct"]
    report.figure(Figure("broker.api.added.p50", "added by the broker, p50", added, "ms"))
    print(
        f"API GET p50: direct {p50['direct']:.2f} ms, brokered {p50['brokered']:.2f} ms, "
        f"added {added:.2f} ms"
    )
    report.finish()


if __name__ == "__main__":
    main()
