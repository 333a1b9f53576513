"""Attention: the cost of ``the-loop hook``, how soon its state is visible, and notice latency.

- **hook**: wall time of the real hook process (``the-loop hook``, the command the Claude
  Code settings run), a ``UserPromptSubmit`` / ``Stop`` pair alternating, JSON on stdin,
  measured around ``subprocess.run`` (start-up, imports, the report over the daemon's hook
  channel and its acknowledgement once applied, exit);
- **hook, spooled**: the same while no daemon listens (the report is written to the spool);
- **hook → API**: from just before the hook process starts to the first
  ``GET /api/v1/attention/<agent>`` (keep-alive, polled back to back) that shows the new state,
  on a running daemon over the same database;
- **notice**: a ``PermissionRequest`` hook opens a wait on a work item; from the moment it
  was recorded plus ``attention.notifyAfterSeconds`` to the notice comment on a fake GitHub on
  loopback (the daemon's attention task and outbox post it);
- **waiting**: N ``PermissionRequest`` hooks (``--waiting``, 50 by default) wait on a person at
  once, as N agents would at their dialogs; the daemon's CPU over a window (``--seconds``,
  ``utime + stime`` from ``/proc/<pid>/stat``) and its looks at the waited prompts
  (``the_loop_task_passes_total{task="hook-decisions"}``) with nothing happening. Then one
  answer through the API, timed to the hook's exit.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import time

import common
import httpx
from common import Daemon, Figure, HttpConn, Install, Report, cpu_seconds

from the_loop.agent.attention.spawn import hook_dir, issue_token
from the_loop.harness.claude_hooks import hook_argv
from the_loop.store import attention as store
from the_loop.store import open_database

NAME = "attention"
AGENT = "bench-agent-1"
REF = "github:127.0.0.1/octo/repo#1"
NOTIFY_AFTER = 1.0


def hook_env(install: Install, agent: str, work_item: str | None = None) -> dict[str, str]:
    """An agent's hook environment, with a token issued as a spawn issues one."""
    db = open_database(install.state_dir)
    try:
        token = issue_token(db, agent, work_item=work_item, transcript_root=None)
    finally:
        db.close()
    env = install.env()
    env.update(
        {
            "THE_LOOP_AGENT": agent,
            "THE_LOOP_HOOK_TOKEN": token,
            "THE_LOOP_HOOK_DIR": str(hook_dir(install.state_dir)),
        }
    )
    if work_item:
        env["THE_LOOP_WORK_ITEM"] = work_item
    return env


def fire(env: dict[str, str], event: str, **fields: object) -> float:
    """Run one hook; its wall time in ms."""
    body = json.dumps({"hook_event_name": event, "session_id": "s", **fields})
    started = time.perf_counter()
    subprocess.run(hook_argv(), input=body, text=True, env=env, check=True, capture_output=True)
    return (time.perf_counter() - started) * 1000


def hook_process(install: Install, count: int, env: dict[str, str] | None = None) -> list[float]:
    env = env or hook_env(install, AGENT)
    fire(env, "SessionStart")
    return [
        fire(env, "UserPromptSubmit" if i % 2 == 0 else "Stop", last_assistant_message="done")
        for i in range(count)
    ]


def hook_spooled(install: Install, count: int) -> list[float]:
    """Hooks while no daemon listens: into a channel directory of their own (spooled)."""
    env = hook_env(install, "bench-spooled")
    env["THE_LOOP_HOOK_DIR"] = str(install.state_dir / "bench-spool")
    return hook_process(install, count, env)


def hook_to_api(install: Install, daemon: Daemon, count: int) -> list[float]:
    env = hook_env(install, AGENT)
    conn = HttpConn(daemon.host, daemon.port)
    raw = common.get_request(daemon.host, daemon.port, f"/api/v1/attention/{AGENT}", daemon.token)
    out: list[float] = []
    for i in range(count):
        event, want = ("UserPromptSubmit", "working") if i % 2 == 0 else ("Stop", "waiting")
        body = json.dumps({"hook_event_name": event, "session_id": "s"})
        started = time.perf_counter()
        proc = subprocess.Popen(
            hook_argv(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True
        )
        assert proc.stdin is not None
        proc.stdin.write(body)
        proc.stdin.close()
        while True:
            status, answer = conn.request(raw)
            if status == 200 and json.loads(answer)["state"] == want:
                break
        out.append((time.perf_counter() - started) * 1000)
        proc.wait()
    conn.close()
    return out


def notice_latency(install: Install, gh: object, count: int) -> list[float]:
    out: list[float] = []
    db = open_database(install.state_dir)
    for i in range(count):
        agent = f"bench-notice-{i}"
        with db.transaction() as tx:
            store.register(
                tx,
                agent,
                work_item=REF,
                standing=None,
                harness="claude",
                requester="alice",
                now=time.time(),
            )
        env = hook_env(install, agent, REF)
        body = json.dumps(
            {
                "hook_event_name": "PermissionRequest",
                "tool_name": "Bash",
                "tool_input": {"command": f"make deploy-{i}"},
            }
        )
        proc = subprocess.Popen(
            hook_argv(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True
        )
        assert proc.stdin is not None
        proc.stdin.write(body)
        proc.stdin.close()
        prompt = common.wait_until(
            lambda a=agent: store.pending_of(db.connect(), a), timeout=10, interval=0.005
        )
        due = prompt.created_at + NOTIFY_AFTER
        common.wait_until(
            lambda p=prompt.id: any(p in c["body"] for c in gh.comments("octo/repo", 1)),  # type: ignore[attr-defined]
            timeout=10,
            interval=0.002,
        )
        out.append((time.time() - due) * 1000)
        proc.kill()  # the permission hook waits for an answer nobody gives here
        proc.wait()
    db.close()
    return out


def waiting_cost(install: Install, daemon: Daemon, count: int, seconds: float) -> dict[str, float]:
    """COUNT permission hooks waiting at once: the daemon's share of a core and its looks over
    SECONDS with nothing happening, then one answer through the API to its hook's exit (ms)."""
    db = open_database(install.state_dir)
    hooks: list[subprocess.Popen[str]] = []
    try:
        for i in range(count):
            body = {"hook_event_name": "PermissionRequest", "tool_name": "Bash",
                    "tool_input": {"command": f"make deploy-{i}"}}  # fmt: skip
            proc = subprocess.Popen(
                hook_argv(),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                env=hook_env(install, f"bench-waiting-{i}"),
                text=True,
            )
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(body))
            proc.stdin.close()
            hooks.append(proc)
        agents = [f"bench-waiting-{i}" for i in range(count)]
        common.wait_until(
            lambda: all(store.pending_of(db.connect(), a) for a in agents),
            timeout=120,
            what="every hook waiting",
        )
        looks = 'the_loop_task_passes_total{task="hook-decisions"}'

        def counted() -> int:
            _, text = common.http_get(daemon.host, daemon.port, "/metrics", daemon.token)
            found = dict(line.rsplit(" ", 1) for line in text.decode().splitlines() if " " in line)
            return int(float(found.get(looks, "0")))

        before, t0 = counted(), time.monotonic()
        cpu0 = cpu_seconds(daemon.pid)
        common.wait_until(lambda: time.monotonic() - t0 >= seconds, seconds + 5, interval=0.5)
        spent = time.monotonic() - t0
        share = (cpu_seconds(daemon.pid) - cpu0) / spent
        taken = counted() - before
        first = store.pending_of(db.connect(), agents[0])
        assert first is not None
        started = time.perf_counter()
        sent = httpx.post(
            f"{daemon.url}/api/v1/sessions/{agents[0]}/permission",
            json={"decision": "allow", "promptId": first.id},
            headers={"Authorization": f"Bearer {daemon.token}"},
            timeout=30,
        )
        if sent.status_code != 200:
            raise RuntimeError(f"the answer was refused: {sent.status_code} {sent.text[:200]}")
        hooks[0].wait(timeout=30)
        answered = (time.perf_counter() - started) * 1000
        return {"share": share * 100, "looks": taken, "answered": answered}
    finally:
        for proc in hooks:
            proc.kill()
            proc.wait()
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hooks", type=int, default=60)
    parser.add_argument("--notices", type=int, default=10)
    parser.add_argument("--waiting", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    report = Report(NAME, "Attention: hook cost, hook → API, notice latency", __doc__ or "")
    gh = common.fake_github()
    gh.start()
    gh.create_repo("octo/repo")
    gh.add_issue("octo/repo", "Flaky", "body")
    with Install(NAME) as install:
        install.extra_env["FAKE_GH_TOKEN"] = gh.token
        install.write_config(
            github={
                "enabled": True,
                "apiUrl": gh.api_url,
                "tokenEnv": "FAKE_GH_TOKEN",
                "repos": ["octo/repo"],
            },
            attention={"notifyAfterSeconds": NOTIFY_AFTER, "pollSeconds": 0.1},
        )
        open_database(install.state_dir).close()
        with common.step(f"{args.hooks} hook processes, no daemon (spooled)"):
            s = report.distribution(
                "hook_spool",
                "the-loop hook, spooled, whole process",
                hook_spooled(install, args.hooks),
            )
        report.figure(Figure("hook_spool.p50", "the-loop hook spooled, p50", s.p50, "ms", 40))
        daemon = Daemon(install).start()
        with common.step(f"{args.hooks} hook processes"):
            s = report.distribution(
                "hook", "the-loop hook, whole process", hook_process(install, args.hooks)
            )
        report.figure(Figure("hook.p50", "the-loop hook whole process, p50", s.p50, "ms", 40))
        with common.step(f"{args.hooks} hooks seen through the API"):
            s = report.distribution(
                "hook_api",
                "hook started → state in the API",
                hook_to_api(install, daemon, args.hooks),
            )
        report.figure(Figure("hook_api.p50", "hook fired → state via API, p50", s.p50, "ms", 50))
        with common.step(f"{args.notices} notices"):
            s = report.distribution(
                "notice",
                "notifyAfterSeconds → notice on GitHub",
                notice_latency(install, gh, args.notices),
            )
        report.figure(
            Figure("notice.max", "notice after notifyAfterSeconds, max", s.max, "ms", 1000)
        )
        with common.step(f"{args.waiting} permission hooks waiting, {args.seconds:g} s"):
            got = waiting_cost(install, daemon, args.waiting, args.seconds)
        report.note(
            f"{args.waiting} permission hooks waiting on a person: the daemon used "
            f"{got['share']:.2f} % of a core over {args.seconds:g} s with nothing happening, "
            f"and looked at the waited prompts {got['looks']:.0f} times; an answer through the "
            f"API reached its hook (the hook's exit) in {got['answered']:.0f} ms"
        )
        report.figure(
            Figure(f"waiting.cpu.{args.waiting}",
                   f"daemon CPU, {args.waiting} permission hooks waiting", got["share"], "% core")
        )  # fmt: skip
        daemon.stop()
    gh.stop()
    report.note("python start-up alone: " + _python_startup())
    report.finish()


def _python_startup() -> str:
    times = []
    for _ in range(10):
        started = time.perf_counter()
        subprocess.run([common.PYTHON, "-c", "pass"], check=True)
        times.append((time.perf_counter() - started) * 1000)
    return f"p50 {sorted(times)[5]:.1f} ms"


if __name__ == "__main__":
    try:
        main()
    except sqlite3.Error as exc:
        raise SystemExit(f"bench: {exc}") from None
