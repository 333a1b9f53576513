"""The browser terminal's WebSocket, driven directly (no browser) against a real daemon, real
tmux and the fake agent: the screen, typing, read-only, Origin and auth, sizes, cleanup."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import await_until, wait_until
from tests.work import Work

READ_ONLY = "read-only-token-for-the-terminal-tests"


def start_daemon(work: Work, **tmux: Any) -> Daemon:
    work.configure(github={"enabled": True}, tmux=tmux)
    d = Daemon(work)
    d.start(THE_LOOP_READONLY_TOKEN=READ_ONLY)
    return d


@pytest.fixture
def loop_daemon(work: Work) -> Iterator[Daemon]:
    """A daemon with a read-only token besides the full one."""
    d = start_daemon(work)
    yield d
    d.stop()


@pytest.fixture
def keeps_agents(work: Work) -> Iterator[Daemon]:
    """A daemon that leaves the agent running when a session is closed."""
    d = start_daemon(work, killHarnessOnClose=False)
    yield d
    d.stop()


def spawned(daemon: Daemon) -> str:
    r = daemon.post("issue_comment", P.issue_comment_event("the-loop do fix it"), "term-1")
    assert r.status_code == 202
    wait_until(lambda: daemon.api("GET", "/sessions").json(), timeout=30, what="a session")
    sid = str(daemon.api("GET", "/sessions").json()[0]["id"])
    daemon.work.wait_prompts(sid, 1, timeout=30)
    return sid


def ws_url(daemon: Daemon, path: str) -> str:
    return daemon.url.replace("http://", "ws://") + "/api/v1" + path


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def cookie_login(daemon: Daemon, token: str) -> dict[str, str]:
    r = httpx.post(f"{daemon.url}/login", json={"token": token}, timeout=30)
    assert r.status_code == 200, r.text
    return {"Cookie": f"the_loop_session={r.cookies['the_loop_session']}"}


async def hello(ws: ClientConnection) -> dict[str, Any]:
    first = await asyncio.wait_for(ws.recv(), timeout=30)
    assert isinstance(first, str), first
    frame: dict[str, Any] = json.loads(first)
    assert frame["type"] == "hello", frame
    return frame


async def screen_until(ws: ClientConnection, needle: bytes, timeout: float = 30) -> bytes:
    """Binary output read until NEEDLE shows up in it."""
    seen = b""

    async def more() -> bool:
        nonlocal seen
        chunk = await asyncio.wait_for(ws.recv(), timeout=timeout)
        if isinstance(chunk, str):  # a read-only viewer is told the window's size
            assert json.loads(chunk)["type"] in ("size", "ended"), chunk
            return False
        seen += chunk
        return needle in seen

    await await_until(more, timeout=timeout, interval=0, what=f"{needle!r} on the screen")
    return seen


async def next_text(ws: ClientConnection, kind: str, timeout: float = 30) -> dict[str, Any]:
    """The next TEXT frame of type KIND (terminal output in between is skipped)."""

    async def found() -> dict[str, Any] | None:
        frame = await asyncio.wait_for(ws.recv(), timeout=timeout)
        if isinstance(frame, str) and json.loads(frame).get("type") == kind:
            return json.loads(frame)  # type: ignore[no-any-return]
        return None

    return await await_until(found, timeout=timeout, interval=0, what=f"a {kind} frame")


def client_pids(work: Work, target: str) -> list[int]:
    out = work.tmux("list-clients", "-t", f"={target}", "-F", "#{client_pid}").stdout.split()
    return [int(p) for p in out]


def window_size(work: Work, target: str) -> str:
    return work.tmux(
        "display-message", "-p", "-t", f"={target}:", "#{window_width}x#{window_height}"
    ).stdout.strip()


def ptys_of(pid: int) -> int:
    """How many pty masters process PID holds open."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == "/dev/ptmx":
                count += 1
        except OSError:
            continue
    return count


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def typed(work: Work, conversation: str) -> list[str]:
    """What reached the agent after its first prompt (the one the-loop pasted at spawn)."""
    return work.prompts(conversation)[1:]


async def test_screen_and_typing_reach_the_agent(loop_daemon: Daemon) -> None:
    sid = spawned(loop_daemon)
    async with connect(ws_url(loop_daemon, f"/sessions/{sid}/terminal"),
                       additional_headers=bearer(loop_daemon.token)) as ws:  # fmt: skip
        frame = await hello(ws)
        target = loop_daemon.api("GET", f"/sessions/{sid}").json()["tmuxTarget"]
        assert frame == {
            "type": "hello", "readOnly": False, "target": target, "cols": 80, "rows": 24
        }  # fmt: skip
        # typed at once, before the tmux client has drawn anything: still arrives as typed
        await ws.send(json.dumps({"type": "input", "data": "typed at once\r"}))
        await screen_until(ws, b"FAKE-AGENT GOT #2")
        # malformed frames are ignored and the bridge keeps going
        junk = ["not json", "[1]", '{"type": "input", "data": 5}', '{"type": "warp"}']
        junk += ['{"type": "resize", "cols": "x", "rows": 3}', '{"type": "resize"}']
        for frame_text in junk:
            await ws.send(frame_text)
        await ws.send(b"\x00binary frames are not input\r")
        await ws.send(json.dumps({"type": "input", "data": "typed in the browser\r"}))
        await screen_until(ws, b"FAKE-AGENT GOT #3")
        assert typed(loop_daemon.work, sid) == ["typed at once", "typed in the browser"]


async def test_read_only_viewers_cannot_type(loop_daemon: Daemon) -> None:
    sid = spawned(loop_daemon)
    url = ws_url(loop_daemon, f"/sessions/{sid}/terminal")
    origin = loop_daemon.url
    for headers in (bearer(READ_ONLY), cookie_login(loop_daemon, READ_ONLY)):
        async with connect(url, additional_headers=headers, origin=origin) as ws:  # type: ignore[arg-type]
            assert (await hello(ws))["readOnly"] is True
            await screen_until(ws, b"FAKE-AGENT READY")
            await ws.send(json.dumps({"type": "input", "data": "read-only typing\r"}))
    # a full viewer's typing arrives after the read-only frames were handled: they were dropped
    async with connect(url, additional_headers=cookie_login(loop_daemon, loop_daemon.token),
                       origin=origin) as ws:  # type: ignore[arg-type]  # fmt: skip
        assert (await hello(ws))["readOnly"] is False
        await ws.send(json.dumps({"type": "input", "data": "full typing\r"}))
        await screen_until(ws, b"FAKE-AGENT GOT #2")
    assert typed(loop_daemon.work, sid) == ["full typing"]


async def test_a_closed_session_is_shown_read_only(keeps_agents: Daemon) -> None:
    loop_daemon = keeps_agents
    sid = spawned(loop_daemon)
    closed = loop_daemon.api("POST", f"/sessions/{sid}/close", json={})
    assert closed.status_code == 200, closed.text
    assert loop_daemon.api("GET", f"/sessions/{sid}").json()["pane"] == "live"  # agent still up
    url = ws_url(loop_daemon, f"/sessions/{sid}/terminal")
    async with connect(url, additional_headers=bearer(loop_daemon.token)) as ws:
        assert (await hello(ws))["readOnly"] is True
        await screen_until(ws, b"FAKE-AGENT GOT #1")
        await ws.send(json.dumps({"type": "input", "data": "closed typing\r"}))
    # what reached the agent is only what the-loop delivers (a message through the API is
    # refused for a closed session, so paste straight through tmux as a marker)
    target = loop_daemon.api("GET", f"/sessions/{sid}").json()["tmuxTarget"]
    loop_daemon.work.tmux("send-keys", "-t", f"={target}:", "-l", "marker")
    loop_daemon.work.tmux("send-keys", "-t", f"={target}:", "Enter")
    wait_until(lambda: typed(loop_daemon.work, sid), timeout=30, what="the marker")
    assert typed(loop_daemon.work, sid) == ["marker"]


@pytest.fixture
def focus_daemon(work: Work) -> Iterator[Daemon]:
    """A daemon whose agents ask their terminal for focus events and clear their screen as
    they are told to end, as Claude Code does."""
    yield from agents_daemon(work, FAKE_AGENT_FOCUS="1", FAKE_AGENT_CLEAR_ON_TERM="1")


def agents_daemon(work: Work, grace: float | None = None, **agents: str) -> Iterator[Daemon]:
    """A daemon whose fake agents run with AGENTS in their environment (GRACE: the seconds
    between SIGTERM and SIGKILL when one is ended)."""
    tmux = {} if grace is None else {"harnessKillGraceSeconds": grace}
    work.configure(github={"enabled": True}, harness_env=agents, tmux=tmux)
    d = Daemon(work)
    d.start(THE_LOOP_READONLY_TOKEN=READ_ONLY)
    yield d
    d.stop()


async def test_an_exited_agents_screen_is_shown_and_no_client_attaches_to_its_dead_pane(
    focus_daemon: Daemon,
) -> None:
    """A closed session's agent is ended and its dead pane kept as a record. Its terminal
    shows that screen, read-only, without attaching a tmux client to the dead pane: tmux 3.3a
    exits when a client attaches to a dead pane whose program asked for focus events, which
    would end every other agent on the host (decision 0087)."""
    d, work = focus_daemon, focus_daemon.work
    sid = spawned(d)
    other = d.post("issue_comment", P.issue_comment_event("the-loop do more", number=8), "t-8")
    assert other.status_code == 202
    wait_until(lambda: len(d.api("GET", "/sessions").json()) == 2, 30, what="a second session")
    closed = d.api("POST", f"/sessions/{sid}/close", json={})
    assert closed.status_code == 200, closed.text
    target = d.api("GET", f"/sessions/{sid}").json()["tmuxTarget"]
    wait_until(lambda: work.pane_dead(target) == "1", 30, what="the closed session's pane dead")
    for token in (d.token, READ_ONLY):
        url = ws_url(d, f"/sessions/{sid}/terminal")
        async with connect(url, additional_headers=bearer(token)) as ws:
            assert (await hello(ws))["readOnly"] is True
            assert b"FAKE-AGENT GOT #1" in await record_drawn(ws)
            await ws.send(json.dumps({"type": "input", "data": "typed at a record\r"}))
            assert client_pids(work, target) == [], "a tmux client attached to a dead pane"
    listed = work.tmux("list-sessions", "-F", "#{session_name}")
    assert listed.returncode == 0, f"the tmux server is gone: {listed.stderr}"
    others = [s["id"] for s in d.api("GET", "/sessions").json() if s["id"] != sid]
    assert [d.api("GET", f"/sessions/{o}").json()["pane"] for o in others] == ["live"]


def _server_and_others_live(d: Daemon, *gone: str) -> None:
    """The tmux server still runs, and so does every agent but those of sessions GONE."""
    listed = d.work.tmux("list-sessions", "-F", "#{session_name}")
    assert listed.returncode == 0, f"the tmux server is gone: {listed.stderr}"
    others = [s["id"] for s in d.api("GET", "/sessions").json() if s["id"] not in gone]
    panes = {o: d.api("GET", f"/sessions/{o}").json()["pane"] for o in others}
    assert panes and set(panes.values()) == {"live"}, panes


def _two_sessions(d: Daemon) -> tuple[str, str]:
    """A session to watch, and another agent that must outlive what happens to the first."""
    sid = spawned(d)
    other = d.post("issue_comment", P.issue_comment_event("the-loop do more", number=8), "t-8")
    assert other.status_code == 202
    wait_until(lambda: len(d.api("GET", "/sessions").json()) == 2, 30, what="a second session")
    return sid, str(d.api("GET", f"/sessions/{sid}").json()["tmuxTarget"])


async def test_watchers_of_an_agent_that_ends_leave_without_ending_the_others(
    focus_daemon: Daemon,
) -> None:
    """Viewers watch an agent (it asked for focus events) when it ends — closed through the
    API, or exiting on its own — and leave afterwards: the tmux server and the other agents
    run on. tmux 3.3a exits when a client leaves a dead pane whose program asked for focus
    events while that client was focused (decision 0087): a viewer's client never is, and a
    close detaches the viewers while the pane is still alive. An agent that exits on its own
    has its viewers' clients detached by its pane's death hook, and they see its last screen
    instead, as a viewer coming later would (decision 0088); so do the viewers of an agent
    the-loop closes: the screen it showed when it was told to end."""
    d, work = focus_daemon, focus_daemon.work
    sid, target = _two_sessions(d)
    url = ws_url(d, f"/sessions/{sid}/terminal")
    async with (
        connect(url, additional_headers=bearer(d.token)) as writer,
        connect(url, additional_headers=bearer(READ_ONLY)) as watcher,
    ):
        for ws in (writer, watcher):
            await hello(ws)
            await screen_until(ws, b"\x1b[")

        def focused() -> list[str]:
            flags = work.tmux("list-clients", "-t", f"={target}", "-F", "#{client_flags}")
            return [f for f in flags.stdout.split() if "focused" in f.split(",")]

        wait_until(lambda: len(client_pids(work, target)) == 2 and not focused(), 30,
                   what="both viewers attached and unfocused")  # fmt: skip
        await writer.send(json.dumps({"type": "input", "data": "\x1b[I"}))  # a focus-in report
        pane_pid = int(
            work.tmux("display-message", "-p", "-t", f"={target}:", "#{pane_pid}").stdout
        )
        os.kill(pane_pid, signal.SIGKILL)  # the agent exits on its own while watched
        wait_until(lambda: work.pane_dead(target) == "1", 30, what="the watched agent dead")
        for ws in (writer, watcher):
            await screen_until(ws, b"Pane is dead (signal 9")  # its record, on the same socket
        assert client_pids(work, target) == []  # shown without a client
    assert client_pids(work, target) == []
    _server_and_others_live(d, sid)

    exited = sid
    sid, target = spawned_again(d, 9)  # and one closed while watched
    url = ws_url(d, f"/sessions/{sid}/terminal")
    async with connect(url, additional_headers=bearer(d.token)) as writer:
        await hello(writer)
        await screen_until(writer, b"\x1b[")
        closed = d.api("POST", f"/sessions/{sid}/close", json={})
        assert closed.status_code == 200, closed.text
        assert b"FAKE-AGENT GOT #1" in await record_drawn(writer)  # not the cleared screen
        assert client_pids(work, target) == []
        assert work.pane_dead(target) == "1"
    _server_and_others_live(d, exited, sid)


RECORD = b"\x1b[?25l\x1b[H\x1b[2J"
"""How the bridge begins to draw a record (a screen kept, shown without a tmux client)."""


async def record_drawn(ws: ClientConnection, timeout: float = 30) -> bytes:
    """The next output that draws a record (``RECORD``), after the page was told the agent
    ended; other output is skipped."""
    drawn: list[bytes] = []
    told: list[str] = []

    async def more() -> bool:
        chunk = await asyncio.wait_for(ws.recv(), timeout=timeout)
        if isinstance(chunk, str) and json.loads(chunk)["type"] == "ended":
            told.append(chunk)
        if isinstance(chunk, bytes) and chunk.startswith(RECORD):
            assert told, "a record drawn without the page told the agent ended"
            drawn.append(chunk)
        return bool(drawn)

    await await_until(more, timeout=timeout, interval=0, what="a record drawn")
    return drawn[0]


@pytest.fixture
def slow_to_end(work: Work) -> Iterator[Daemon]:
    """A daemon whose agents ask for focus events and ignore SIGTERM: a close ends them only
    after the grace, with SIGKILL."""
    yield from agents_daemon(work, 3, FAKE_AGENT_FOCUS="1", FAKE_AGENT_IGNORE_TERM="1")


async def test_a_viewer_of_an_agent_being_closed_sees_its_record_at_once(
    slow_to_end: Daemon,
) -> None:
    """An agent the-loop closes is detached from its viewers while it still runs (decision
    0087), and may take a while to end. Its viewers are shown the screen it had when it was
    told to end, at once, on the same socket, not an ended terminal."""
    d, work = slow_to_end, slow_to_end.work
    sid, target = _two_sessions(d)
    url = ws_url(d, f"/sessions/{sid}/terminal")
    async with connect(url, additional_headers=bearer(READ_ONLY)) as watcher:
        await hello(watcher)
        await screen_until(watcher, b"FAKE-AGENT GOT #1")
        closing = asyncio.create_task(
            asyncio.to_thread(d.api, "POST", f"/sessions/{sid}/close", json={})
        )
        assert b"FAKE-AGENT GOT #1" in await record_drawn(watcher)
        assert work.pane_dead(target) == "0", "shown only once the agent had ended"
        assert client_pids(work, target) == []
        closed = await closing
        assert closed.status_code == 200, closed.text
        assert work.pane_dead(target) == "1"
    _server_and_others_live(d, sid)


def spawned_again(d: Daemon, number: int) -> tuple[str, str]:
    body = P.issue_comment_event("the-loop do it", number=number)
    assert d.post("issue_comment", body, f"t-{number}").status_code == 202
    ref = f"github:octo/repo%23{number}"
    wait_until(lambda: d.api("GET", f"/sessions/{ref}").status_code == 200, 30, what="spawn")
    found = d.api("GET", f"/sessions/{ref}").json()
    d.work.wait_prompts(found["id"], 1, timeout=30)
    return str(found["id"]), str(found["tmuxTarget"])


async def test_refused_handshakes(loop_daemon: Daemon) -> None:
    sid = spawned(loop_daemon)
    url = ws_url(loop_daemon, f"/sessions/{sid}/terminal")
    cookie = cookie_login(loop_daemon, loop_daemon.token)
    refused: list[tuple[dict[str, str], str | None]] = [
        ({}, None),  # nobody
        ({}, loop_daemon.url),
        (bearer("wrong-token"), None),
        (bearer(loop_daemon.token), "http://evil.example"),  # bearer with a foreign Origin
        (cookie, "http://evil.example"),  # cookie from a foreign page
        (cookie, None),  # a cookie needs an Origin
        ({"Cookie": "the_loop_session=forged"}, loop_daemon.url),
    ]
    for headers, origin in refused:
        with pytest.raises(InvalidStatus) as caught:
            async with connect(url, additional_headers=headers, origin=origin):  # type: ignore[arg-type]
                pass
        assert caught.value.response.status_code == 403, (headers, origin)
    async with connect(url, additional_headers=cookie, origin=loop_daemon.url) as ws:  # type: ignore[arg-type]
        assert (await hello(ws))["readOnly"] is False


async def test_unknown_targets_say_why(loop_daemon: Daemon) -> None:
    headers = bearer(loop_daemon.token)
    for path in ["/sessions/s-nope/terminal", "/standing/nobody/terminal"]:
        async with connect(ws_url(loop_daemon, path), additional_headers=headers) as ws:
            frame = json.loads(await asyncio.wait_for(ws.recv(), timeout=30))
            assert frame["type"] == "error" and frame["code"] == "not_found", frame
            with pytest.raises(ConnectionClosed) as caught:
                await asyncio.wait_for(ws.recv(), timeout=30)
            assert caught.value.rcvd is not None and caught.value.rcvd.code == 4404


async def test_standing_terminal(loop_daemon: Daemon) -> None:
    made = loop_daemon.api("POST", "/standing", json={"name": "ops", "prompt": "brief"})
    assert made.status_code == 201, made.text
    conversation = made.json()["start"]["conversationId"]
    loop_daemon.work.wait_prompts(conversation, 1, timeout=30)
    url = ws_url(loop_daemon, "/standing/ops/terminal")
    async with connect(url, additional_headers=bearer(loop_daemon.token)) as ws:
        frame = await hello(ws)
        assert frame["readOnly"] is False and frame["target"]
        await screen_until(ws, b"FAKE-AGENT GOT #1")
        await ws.send(json.dumps({"type": "input", "data": "to the standing one\r"}))
        await screen_until(ws, b"FAKE-AGENT GOT #2")
    assert typed(loop_daemon.work, conversation) == ["to the standing one"]


async def test_viewers_size_the_window_as_decided_and_leave_nothing_behind(
    loop_daemon: Daemon,
) -> None:
    """A read-only viewer never changes the agent's window and is sized to it (a "size"
    frame when the window changes); the writable viewer sizes the window to itself; once both
    left the window is back to its size, and no client, child or pty is left."""
    sid = spawned(loop_daemon)
    work = loop_daemon.work
    target = loop_daemon.api("GET", f"/sessions/{sid}").json()["tmuxTarget"]
    size_before = window_size(work, target)
    clients_before = client_pids(work, target)
    assert loop_daemon.proc is not None
    daemon_pid = loop_daemon.proc.pid
    ptys_before = ptys_of(daemon_pid)
    watch_url = ws_url(loop_daemon, f"/sessions/{sid}/terminal?cols=40&rows=10")
    read_only = bearer(READ_ONLY)
    async with connect(watch_url, additional_headers=read_only) as watcher:
        frame = await hello(watcher)
        cols, rows = (int(n) for n in size_before.split("x"))
        assert (frame["cols"], frame["rows"]) == (cols, rows)  # the window, no status line (0108)
        await watcher.send(json.dumps({"type": "resize", "cols": 30, "rows": 8}))
        url = ws_url(loop_daemon, f"/sessions/{sid}/terminal?cols=40&rows=10")
        async with connect(url, additional_headers=bearer(loop_daemon.token)) as ws:
            await hello(ws)
            await screen_until(ws, b"\x1b[")  # tmux drew the window
            assert ptys_of(daemon_pid) == ptys_before + 2
            await ws.send(json.dumps({"type": "resize", "cols": 50, "rows": 12}))
            wait_until(lambda: window_size(work, target) == "50x12", timeout=30,
                       what="the window sized to the writable viewer")  # fmt: skip

            # the window passed through the writable viewer's first size (40x10) on the way, and
            # the watcher may have been told of it first: the newest size is the one that counts
            async def told_50x12() -> bool:
                frame = await next_text(watcher, "size")
                return (frame["cols"], frame["rows"]) == (50, 12)

            await await_until(told_50x12, timeout=30, interval=0, what="the watcher told 50x12")
            pids = client_pids(work, target)
        assert window_size(work, target) == "50x12"  # a viewer still watches
    wait_until(lambda: client_pids(work, target) == clients_before, timeout=30, what="no client")
    wait_until(lambda: all(gone(p) for p in pids), timeout=30, what="the bridges' children gone")
    wait_until(lambda: ptys_of(daemon_pid) == ptys_before, timeout=30, what="the ptys closed")
    wait_until(lambda: window_size(work, target) == size_before, timeout=30, what="restored")


async def test_a_read_only_viewer_asks_tmux_nothing_while_the_screen_stands_still(
    loop_daemon: Daemon,
) -> None:
    """A watcher follows the agent's window size by asking tmux after its screen changed (tmux
    redraws every client of a window that changes size), not on a beat: while nothing on the
    agent's screen changes, the daemon runs no tmux command for it."""
    sid = spawned(loop_daemon)

    def commands() -> int:
        return int(loop_daemon.metric("the_loop_tmux_commands_total") or 0)

    url = ws_url(loop_daemon, f"/sessions/{sid}/terminal")
    async with connect(url, additional_headers=bearer(READ_ONLY)) as watcher:
        await hello(watcher)
        await screen_until(watcher, b"\x1b[")  # drawn: the one look that follows is done in 2 s
        t0 = time.monotonic()

        def after(seconds: float) -> Callable[[], Awaitable[bool]]:
            async def passed() -> bool:
                return time.monotonic() - t0 >= seconds

            return passed

        await await_until(after(2.0), 10, interval=0.5, what="2 s")
        before = commands()
        await await_until(after(5.0), 10, interval=0.5, what="3 s more")
        spent = commands() - before
        assert spent <= 1, f"{spent} tmux commands in 3 s for a screen that stood still"


async def test_daemon_shutdown_ends_the_bridges(loop_daemon: Daemon) -> None:
    sid = spawned(loop_daemon)
    work = loop_daemon.work
    target = loop_daemon.api("GET", f"/sessions/{sid}").json()["tmuxTarget"]
    url = ws_url(loop_daemon, f"/sessions/{sid}/terminal")
    async with connect(url, additional_headers=bearer(loop_daemon.token)) as ws:
        await hello(ws)
        pids = wait_until(lambda: client_pids(work, target), timeout=30, what="a client")
        await asyncio.to_thread(loop_daemon.stop, signal.SIGTERM)
        wait_until(lambda: gone(pids[0]), timeout=30, what="the bridge's child gone")
        assert client_pids(work, target) == []


async def test_logout_ends_open_terminals(loop_daemon: Daemon) -> None:
    sid = spawned(loop_daemon)
    r = httpx.post(f"{loop_daemon.url}/login", json={"token": loop_daemon.token}, timeout=30)
    cookie, csrf = r.cookies["the_loop_session"], r.json()["csrfToken"]
    url = ws_url(loop_daemon, f"/sessions/{sid}/terminal")
    headers = {"Cookie": f"the_loop_session={cookie}"}
    async with connect(url, additional_headers=headers, origin=loop_daemon.url) as ws:  # type: ignore[arg-type]
        await hello(ws)
        out = await asyncio.to_thread(
            httpx.post,
            f"{loop_daemon.url}/logout",
            cookies={"the_loop_session": cookie},
            headers={"X-CSRF-Token": csrf},
        )
        assert out.status_code == 303
        with pytest.raises(ConnectionClosed) as caught:
            while True:
                await asyncio.wait_for(ws.recv(), timeout=30)
        assert caught.value.rcvd is not None and caught.value.rcvd.code == 1008
