"""Browser terminal: the first screen after opening, and a keystroke into the pane.

One live work-item session (the fake agent in tmux, spawned by a signed webhook into a real
daemon); the client is the ``websockets`` asyncio client on loopback, speaking the dashboard's
protocol with the full bearer token (the same bridge a cookie login gets).

- **first screen**: from just before opening the WebSocket to the first output bytes that hold
  the agent's screen (``FAKE-AGENT`` text, tmux's full redraw after attaching); each sample a
  new connection (a new tmux client in a new pty), closed before the next;
- **keystroke**: on one open terminal, from just before sending ``{"type": "input"}`` (a short
  word and Enter) to the fake agent's own timestamp of the submitted line: through the bridge,
  the pty, the tmux client, the server and the pane, into the program. The output the agent
  prints is read (and discarded) meanwhile, as a browser would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid

import common
import live
from common import Figure, Report
from websockets.asyncio.client import ClientConnection, connect

NAME = "terminal"


def session_id(lv: live.Live, ref: str) -> str:
    status, body = common.http_get(
        lv.daemon.host, lv.daemon.port, "/api/v1/sessions", lv.daemon.token
    )
    if status != 200:
        raise RuntimeError(f"GET /sessions answered {status}")
    return next(s["id"] for s in json.loads(body) if s["workItem"] == ref)


async def first_screen(url: str, headers: dict[str, str]) -> tuple[float, float]:
    """(ms to the hello frame, ms to the first output holding the screen) for one opening."""
    t0 = time.perf_counter()
    async with connect(url, additional_headers=headers, max_size=None) as ws:
        hello = await ws.recv()
        t_hello = time.perf_counter()
        assert isinstance(hello, str) and json.loads(hello)["type"] == "hello", hello
        seen = b""
        while b"FAKE-AGENT" not in seen:
            chunk = await asyncio.wait_for(ws.recv(), timeout=30)
            if isinstance(chunk, bytes):
                seen += chunk
        t_screen = time.perf_counter()
    return (t_hello - t0) * 1000, (t_screen - t0) * 1000


async def drain(ws: ClientConnection) -> None:
    async for _ in ws:
        pass


async def keystrokes(url: str, headers: dict[str, str], log: live.AgentLog, n: int) -> list[float]:
    out: list[float] = []
    async with connect(url, additional_headers=headers, max_size=None) as ws:
        await ws.recv()  # hello
        reader = asyncio.create_task(drain(ws))
        for i in range(n):
            marker = f"k{i}x{uuid.uuid4().hex[:6]}"
            t0 = time.time()
            await ws.send(json.dumps({"type": "input", "data": marker + "\r"}))
            deadline = time.monotonic() + 30
            while (record := log.prompt_with(marker)) is None:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"keystroke {marker} never reached the agent")
                await asyncio.sleep(0.001)
            out.append((float(record["ts"]) - t0) * 1000)
            if (i + 1) % 100 == 0:
                common.progress(f"{i + 1} keystrokes")
        reader.cancel()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opens", type=int, default=40)
    parser.add_argument("--keys", type=int, default=300)
    args = parser.parse_args()

    report = Report(NAME, "Browser terminal: first screen, keystroke → pane", __doc__ or "")
    with live.Live.start(NAME) as lv:
        session = lv.spawn()
        lv.wait_idle()
        sid = session_id(lv, session.ref)
        url = lv.daemon.url.replace("http://", "ws://") + f"/api/v1/sessions/{sid}/terminal"
        headers = {"Authorization": f"Bearer {lv.daemon.token}"}
        hellos: list[float] = []
        screens: list[float] = []
        with common.step(f"{args.opens} openings, one at a time"):
            asyncio.run(first_screen(url, headers))  # warm-up
            for _ in range(args.opens):
                hello_ms, screen_ms = asyncio.run(first_screen(url, headers))
                hellos.append(hello_ms)
                screens.append(screen_ms)
        report.distribution("hello", "open → hello frame (authenticated, planned)", hellos)
        screen = report.distribution("first_screen", "open → first screen", screens)
        report.figure(
            Figure("terminal.first_screen.p50", "terminal first screen, p50", screen.p50, "ms", 300)
        )
        with common.step(f"{args.keys} keystrokes on one terminal"):
            keys = asyncio.run(keystrokes(url, headers, session.log, args.keys))
        key = report.distribution("keystroke", "input frame → line in the agent", keys)
        report.figure(Figure("terminal.keystroke.p50", "keystroke → pane, p50", key.p50, "ms", 15))
        report.figure(Figure("terminal.keystroke.p95", "keystroke → pane, p95", key.p95, "ms"))
        path = common.PLOTS / f"{NAME}-keystroke.svg"
        common.svg_distribution(
            path,
            f"Keystroke from the WebSocket → the agent (n={key.n})",
            keys,
            marks=[(15, "target p50 15 ms", "#d62728")],
        )
        report.plot(path)
        report.note(f"daemon RSS with one terminal session done: {lv.daemon.rss_mb():.1f} MB")
    report.finish()


if __name__ == "__main__":
    main()
