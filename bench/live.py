"""Live agent sessions for the benchmarks: a daemon with webhooks, the fake agent in tmux, and
a fake GitHub on loopback receiving the write-backs (👀, 🎉, the announcement comment).

The harness is the tests' fake interactive agent behind a one-line ``bash`` preamble that
writes ``$EPOCHREALTIME`` to ``<agent dir>/<session id>.exec`` and then ``exec``s the agent (same
pid): that timestamp is when the harness process started, before the fake agent's Python
interpreter spends its own start-up. Clocks are ``time.time()`` on both sides (one machine).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import common
from common import PYTHON, Daemon, HttpConn, Install

from tests.fakes import fake_agent
from tests.fakes import payloads as P
from tests.fakes.fake_github import FakeGitHub

REPO = "octo/repo"
PREAMBLE = 'printf "%s\\n" "$EPOCHREALTIME" >"$FAKE_AGENT_DIR/$0.exec"; exec "$@"'


def timed_harness(agent_dir: Path) -> dict[str, Any]:
    """The fake agent as a ``command`` harness, behind the exec-time preamble."""
    script = str(fake_agent.SCRIPT)
    head = ["/bin/bash", "-c", PREAMBLE, "{session_id}", PYTHON, script]
    return {
        "adapter": "command",
        "interactive": [*head, "--session-id", "{session_id}", "--", "{prompt}"],
        "resume": [*head, "--resume", "{session_id}", "--", "{prompt}"],
        "env": {"FAKE_AGENT_DIR": str(agent_dir)},
    }


class AgentLog:
    """Reads one conversation's records incrementally (only the bytes added since last time)."""

    def __init__(self, agent_dir: Path, conversation: str) -> None:
        self.path = fake_agent.conversation_file(agent_dir, conversation)
        self.offset = 0
        self.records: list[dict[str, Any]] = []

    def poll(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        fresh = [json.loads(line) for line in data[: end + 1].splitlines() if line.strip()]
        self.offset += end + 1
        self.records += fresh
        return fresh

    def prompt_with(self, marker: str) -> dict[str, Any] | None:
        self.poll()
        for record in reversed(self.records):
            if record.get("kind") == "prompt" and marker in record.get("text", ""):
                return record
        return None

    def start(self) -> dict[str, Any] | None:
        self.poll()
        return next((r for r in self.records if r.get("kind") == "start"), None)


@dataclass
class Session:
    number: int
    ref: str
    target: str
    conversation: str
    pid: int
    log: AgentLog
    posted_at: float
    exec_at: float
    started_at: float
    ready_at: float
    ack_ms: float


@dataclass
class Live:
    """An installation with a running daemon, FakeGitHub, and helpers to drive agents."""

    install: Install
    gh: FakeGitHub
    daemon: Daemon
    conn: HttpConn
    sessions: list[Session] = field(default_factory=list)
    delivery_seq: int = 0

    @classmethod
    def start(
        cls,
        name: str,
        max_sessions: int = 250,
        harnesses: dict[str, Any] | None = None,
        default_harness: str = "fake",
        launcher: list[str] | None = None,
        **sections: Any,
    ) -> Live:
        """A running daemon (run by LAUNCHER, ``common.Daemon``); HARNESSES are added beside the
        timed fake one (DEFAULT_HARNESS names the one sessions start with); SECTIONS are more
        config sections (camelCase)."""
        install = Install(name)
        gh = common.fake_github().start()
        try:
            gh.create_repo(REPO)
            install.extra_env["FAKE_GH_TOKEN"] = gh.token
            install.write_config(
                harnesses={"fake": timed_harness(install.agent_dir), **(harnesses or {})},
                routing={
                    "defaultHarness": default_harness,
                    "authorizedUsers": ["alice"],
                    "maxConcurrentSessions": max_sessions,
                },
                github={
                    "enabled": True,
                    "apiUrl": gh.api_url,
                    "tokenEnv": "FAKE_GH_TOKEN",
                    "timeoutSeconds": 5,
                    "retries": 1,
                },
                **sections,
            )
            daemon = Daemon(install, launcher=launcher).start()
            conn = HttpConn(daemon.host, daemon.port)
        except BaseException:
            gh.stop()
            install.close()
            raise
        return cls(install, gh, daemon, conn)

    def close(self) -> None:
        self.conn.close()
        self.daemon.stop()
        self.gh.stop()
        self.install.close()

    def __enter__(self) -> Live:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests ------------------------------------------------------------------------

    def _delivery(self, what: str) -> str:
        self.delivery_seq += 1
        return f"bench-{what}-{self.delivery_seq}-{uuid.uuid4().hex[:8]}"

    def post(self, event: str, payload: dict[str, Any], what: str) -> tuple[float, float]:
        """POST a signed delivery; returns (time.time() just before sending, ack ms)."""
        body = json.dumps(payload).encode()
        raw = common.webhook_request(
            self.daemon.host, self.daemon.port, event, self._delivery(what), body
        )
        t0 = time.time()
        p0 = time.perf_counter()
        status, answer = self.conn.request(raw)
        ack = (time.perf_counter() - p0) * 1000
        if status != 202:
            raise RuntimeError(f"{event} answered {status}: {answer[:300]!r}")
        return t0, ack

    def host(self) -> str:
        return "127.0.0.1"

    def ref(self, number: int) -> str:
        return f"github:{self.host()}/{REPO}#{number}"

    def target(self, number: int) -> str:
        from the_loop.refs import WorkItemRef

        return WorkItemRef.parse(self.ref(number)).tmux_target

    # -- spawn ----------------------------------------------------------------------------

    def new_item(self) -> tuple[int, int]:
        number = self.gh.add_issue(
            REPO, f"Bench item {uuid.uuid4().hex[:6]}", "A flaky test.", labels=["the-loop"]
        )
        comment = self.gh.add_comment(REPO, number, "the-loop start", author="alice")
        return number, comment

    def spawn(self, timeout: float = 60.0) -> Session:
        """Post an authorized start on a new item; wait until its agent took its first prompt."""
        number, comment_id = self.new_item()
        payload = P.issue_comment_event("the-loop start", number=number)
        payload["comment"]["id"] = comment_id
        before = common.agent_conversations(self.install.agent_dir)
        t0, ack = self.post("issue_comment", payload, "spawn")
        return self.wait_spawned(number, t0, ack, before, timeout)

    def wait_spawned(
        self, number: int, t0: float, ack: float, before: set[str], timeout: float = 60.0
    ) -> Session:
        agent_dir = self.install.agent_dir

        def fresh() -> str | None:
            found = sorted(common.agent_conversations(agent_dir) - before - self.known())
            for conversation in found:
                log = AgentLog(agent_dir, conversation)
                if f"{self.ref(number)}:" in first_text(log):
                    return conversation
            return None

        conversation = common.wait_until(
            fresh, timeout=timeout, interval=0.002, what=f"the agent of #{number}"
        )
        log = AgentLog(agent_dir, conversation)
        start = common.wait_until(log.start, timeout=timeout, interval=0.002)

        def first_prompt() -> dict[str, Any] | None:
            log.poll()
            return next((r for r in log.records if r.get("kind") == "prompt"), None)

        first = common.wait_until(first_prompt, timeout=timeout, interval=0.002)
        exec_file = agent_dir / f"{conversation}.exec"
        exec_at = float(exec_file.read_text().strip()) if exec_file.exists() else float("nan")
        session = Session(
            number=number,
            ref=self.ref(number),
            target=self.target(number),
            conversation=conversation,
            pid=int(start["pid"]),
            log=log,
            posted_at=t0,
            exec_at=exec_at,
            started_at=float(start["ts"]),
            ready_at=float(first["ts"]),
            ack_ms=ack,
        )
        self.sessions.append(session)
        return session

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Wait until the inbox holds nothing pending or processing, and the outbox nothing
        waiting to be posted (the write-backs)."""
        db = self.install.state_dir / "the-loop.db"
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        sql = (
            "SELECT (SELECT COUNT(*) FROM inbox WHERE status IN ('pending', 'processing'))"
            " + (SELECT COUNT(*) FROM outbox WHERE status IN ('pending', 'sending'))"
        )
        try:
            common.wait_until(
                lambda: conn.execute(sql).fetchone()[0] == 0,
                timeout=timeout,
                interval=0.002,
                what="an idle inbox and outbox",
            )
        finally:
            conn.close()

    def burst_spawn(self, count: int, timeout: float = 300.0) -> list[Session]:
        """Post COUNT authorized starts back to back (one connection), then wait until every
        agent took its first prompt; the sessions come back in posting order."""
        items = [self.new_item() for _ in range(count)]
        before = common.agent_conversations(self.install.agent_dir) | self.known()
        posted: dict[int, tuple[float, float]] = {}
        for number, comment_id in items:
            payload = P.issue_comment_event("the-loop start", number=number)
            payload["comment"]["id"] = comment_id
            posted[number] = self.post("issue_comment", payload, "spawn")
        found: dict[int, Session] = {}
        pattern = re.compile(re.escape(f"github:{self.host()}/{REPO}#") + r"(\d+):")
        pending: dict[str, AgentLog] = {}

        def scan() -> bool:
            for conversation in common.agent_conversations(self.install.agent_dir) - before:
                if conversation not in pending and conversation not in self.known():
                    pending[conversation] = AgentLog(self.install.agent_dir, conversation)
            for conversation, log in list(pending.items()):
                start = log.start()
                prompt = next((r for r in log.records if r.get("kind") == "prompt"), None)
                if start is None or prompt is None:
                    continue
                m = pattern.search(str(prompt["text"]))
                if m is None or int(m.group(1)) not in posted:
                    continue
                number = int(m.group(1))
                exec_file = self.install.agent_dir / f"{conversation}.exec"
                t0, ack = posted[number]
                found[number] = Session(
                    number,
                    self.ref(number),
                    self.target(number),
                    conversation,
                    int(start["pid"]),
                    log,
                    t0,
                    float(exec_file.read_text().strip()),
                    float(start["ts"]),
                    float(prompt["ts"]),
                    ack,
                )
                del pending[conversation]
            return len(found) == count

        common.wait_until(scan, timeout=timeout, interval=0.01, what=f"{count} live agents")
        ordered = [found[number] for number, _ in items]
        self.sessions += ordered
        return ordered

    def known(self) -> set[str]:
        return {s.conversation for s in self.sessions}

    # -- deliver ----------------------------------------------------------------------------

    def comment(self, session: Session, timeout: float = 30.0) -> tuple[float, float]:
        """Post a comment on SESSION's item; returns (ms until the prompt arrived, ack ms)."""
        marker = f"bench-marker-{uuid.uuid4().hex}"
        payload = P.issue_comment_event(
            f"Please also look at the retry logic ({marker}).", number=session.number
        )
        payload["comment"]["id"] = 10_000_000 + self.delivery_seq
        t0, ack = self.post("issue_comment", payload, "comment")
        record = common.wait_until(
            lambda: session.log.prompt_with(marker),
            timeout=timeout,
            interval=0.001,
            what="a delivered comment",
        )
        return (float(record["ts"]) - t0) * 1000, ack

    # -- close ----------------------------------------------------------------------------

    def close_item(self, session: Session, timeout: float = 30.0) -> tuple[float, float, float]:
        """Post ``issues`` closed for SESSION's item; returns ms until (ack, agent process
        exited, tmux showed ``#{pane_dead}`` = 1), all from just before the POST."""
        payload = P.issues_event("closed", number=session.number, state="closed")
        t0, ack = self.post("issues", payload, "close")
        exited = common.wait_until(
            lambda: _gone(session.pid) and time.time(),
            timeout=timeout,
            interval=0.0005,
            what="the agent to exit",
        )
        dead = common.wait_until(
            lambda: self.pane_dead(session.target) and time.time(),
            timeout=timeout,
            interval=0.001,
            what="the pane to be dead",
        )
        return ack, (exited - t0) * 1000, (dead - t0) * 1000

    def pane_dead(self, target: str) -> bool:
        out = self.install.tmux("display-message", "-p", "-t", f"={target}:", "#{pane_dead}")
        return out.stdout.strip() == "1"


def _gone(pid: int) -> bool:
    """True once PID has exited (gone, or a zombie waiting for tmux to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def tmux_call_ms(install: Install, samples: int = 30) -> list[float]:
    """How long one tmux client invocation takes here (``display-message -p``)."""
    out = []
    install.tmux("new-session", "-d", "-s", "bench-probe", "sleep", "600")
    for _ in range(samples):
        t0 = time.perf_counter()
        install.tmux("display-message", "-p", "-t", "=bench-probe:", "#{pane_dead}")
        out.append((time.perf_counter() - t0) * 1000)
    install.tmux("kill-session", "-t", "=bench-probe")
    return out


def agent_startup_ms(install: Install, samples: int = 15) -> list[float]:
    """The fake agent's own start-up: from Popen to its start record (no tmux, no the-loop)."""
    import subprocess

    env = dict(os.environ, FAKE_AGENT_DIR=str(install.agent_dir))
    out = []
    for i in range(samples):
        conversation = f"startup-probe-{i}"
        t0 = time.time()
        proc = subprocess.Popen(
            [PYTHON, str(fake_agent.SCRIPT), "--session-id", conversation],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        ts = common.wait_until(
            lambda c=conversation: common.first_start_ts(install.agent_dir, c), interval=0.001
        )
        out.append((ts - t0) * 1000)
        proc.wait(timeout=10)
        fake_agent.conversation_file(install.agent_dir, conversation).unlink()
    return out


def first_text(log: AgentLog) -> str:
    """The text of the agent's first prompt (the spawn prompt names the work item; it is
    pasted, never in the argv), or "" before it arrived."""
    log.poll()
    first = next((r for r in log.records if r.get("kind") == "prompt"), None)
    return str(first["text"]) if first else ""
