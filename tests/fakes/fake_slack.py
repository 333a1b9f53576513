"""A fake Slack Web API on loopback (real HTTP), faithful where the-loop looks.

Served at ``<origin>/api/`` like ``https://slack.com/api/``: ``chat.postMessage`` (returns the
new message's ``ts``, threads by ``thread_ts``, keeps ``blocks`` and ``metadata``),
``chat.update``, ``chat.postEphemeral`` (returns ``message_ts``), ``conversations.replies``
and ``conversations.history`` (with ``metadata`` when ``include_all_metadata``) and
``auth.test``. Arguments are read from a JSON body, a form body or the query, as Slack
accepts them. The bot token is checked on every call (``Authorization: Bearer``): a missing
one answers ``not_authed``, a wrong one ``invalid_auth`` — both HTTP 200 with ``ok: false``,
as Slack does.

Scriptable faults, consumed in order: ``rate_limit_next`` (HTTP 429 with ``Retry-After``),
``fail_next`` (a 5xx before anything happens) and ``lose_answer_next`` (the call takes effect,
then the answer is a 5xx: the case the outbox must not post twice).

Every call is recorded (``Call``): method, arguments, HTTP status. Thread-safe.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.fakes.loopback import LoopbackServer

DEFAULT_TOKEN = "xoxb-fake-bot-token-for-tests"
BOT_USER = "UBOT0000001"
BOT_ID = "BBOT0000001"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    status: int


@dataclass
class Message:
    channel: str
    ts: str
    text: str
    thread_ts: str | None = None
    blocks: list[dict[str, Any]] | None = None
    metadata: dict[str, Any] | None = None
    updates: int = 0

    def as_json(self, metadata: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "message",
            "ts": self.ts,
            "text": self.text,
            "user": BOT_USER,
            "bot_id": BOT_ID,
        }
        if self.thread_ts:
            out["thread_ts"] = self.thread_ts
        if self.blocks is not None:
            out["blocks"] = self.blocks
        if metadata and self.metadata is not None:
            out["metadata"] = self.metadata
        return out


@dataclass
class FakeSlack(LoopbackServer):
    token: str = DEFAULT_TOKEN
    calls: list[Call] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    ephemerals: list[dict[str, Any]] = field(default_factory=list)
    _faults: list[tuple[str, int, float]] = field(default_factory=list)

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _Handler

    @property
    def api_url(self) -> str:
        return f"{self.origin}/api"

    # --- faults -------------------------------------------------------------------------

    def rate_limit_next(self, n: int = 1, *, retry_after: float = 1) -> None:
        with self._lock:
            self._faults += [("429", 429, retry_after)] * n

    def fail_next(self, n: int = 1, *, status: int = 500) -> None:
        with self._lock:
            self._faults += [("fail", status, 0.0)] * n

    def lose_answer_next(self, n: int = 1, *, status: int = 502) -> None:
        with self._lock:
            self._faults += [("lose", status, 0.0)] * n

    # --- what was done ------------------------------------------------------------------

    def posts(self, channel: str | None = None) -> list[Message]:
        with self._lock:
            return [m for m in self.messages if channel is None or m.channel == channel]

    def thread(self, channel: str, thread_ts: str) -> list[Message]:
        with self._lock:
            return [m for m in self.messages if m.channel == channel and m.thread_ts == thread_ts]

    def count(self, method: str, status: int | None = None) -> int:
        with self._lock:
            return sum(
                1
                for c in self.calls
                if c.method == method and (status is None or c.status == status)
            )

    # --- the API ------------------------------------------------------------------------

    def handle(
        self, method: str, auth: str | None, args: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self._lock:
            status, body, headers = self._handle(method, auth, args)
            self.calls.append(Call(method, args, status))
            return status, body, headers

    def _handle(
        self, method: str, auth: str | None, args: dict[str, Any]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        if auth is None or not auth.startswith("Bearer "):
            return 200, {"ok": False, "error": "not_authed"}, {}
        if auth.removeprefix("Bearer ") != self.token:
            return 200, {"ok": False, "error": "invalid_auth"}, {}
        lose: int | None = None
        if self._faults:
            kind, status, seconds = self._faults.pop(0)
            if kind == "429":
                return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": f"{seconds:g}"}
            if kind == "fail":
                return status, {"ok": False, "error": "internal_error"}, {}
            lose = status
        handler = _METHODS.get(method)
        if handler is None:
            return 200, {"ok": False, "error": "unknown_method"}, {}
        answer = handler(self, args)
        if lose is not None:
            return lose, {"ok": False, "error": "internal_error"}, {}
        return 200, answer, {}

    def _new_ts(self) -> str:
        return f"{int(time.time())}.{len(self.messages) + len(self.ephemerals) + 1:06d}"

    def _post(self, args: dict[str, Any]) -> dict[str, Any]:
        channel, text = str(args.get("channel") or ""), args.get("text")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if not text and not args.get("blocks"):
            return {"ok": False, "error": "no_text"}
        message = Message(
            channel=channel,
            ts=self._new_ts(),
            text=str(text or ""),
            thread_ts=str(args["thread_ts"]) if args.get("thread_ts") else None,
            blocks=_json_arg(args.get("blocks")),
            metadata=_json_arg(args.get("metadata")),
        )
        self.messages.append(message)
        return {"ok": True, "channel": channel, "ts": message.ts, "message": message.as_json(False)}

    def _update(self, args: dict[str, Any]) -> dict[str, Any]:
        for message in self.messages:
            if message.channel == args.get("channel") and message.ts == args.get("ts"):
                message.text = str(args.get("text") or message.text)
                if "blocks" in args:
                    message.blocks = _json_arg(args["blocks"])
                message.updates += 1
                return {"ok": True, "channel": message.channel, "ts": message.ts}
        return {"ok": False, "error": "message_not_found"}

    def _ephemeral(self, args: dict[str, Any]) -> dict[str, Any]:
        if not args.get("user") or not args.get("channel"):
            return {"ok": False, "error": "user_not_in_channel"}
        ts = self._new_ts()
        self.ephemerals.append({**args, "message_ts": ts})
        return {"ok": True, "message_ts": ts}

    def _replies(self, args: dict[str, Any]) -> dict[str, Any]:
        channel, ts = args.get("channel"), str(args.get("ts") or "")
        meta = _truthy(args.get("include_all_metadata"))
        found = [
            m.as_json(meta)
            for m in self.messages
            if m.channel == channel and (m.ts == ts or m.thread_ts == ts)
        ]
        if not found:
            return {"ok": False, "error": "thread_not_found"}
        return {"ok": True, "messages": found, "has_more": False}

    def _history(self, args: dict[str, Any]) -> dict[str, Any]:
        channel = args.get("channel")
        oldest = float(args.get("oldest") or 0)
        meta = _truthy(args.get("include_all_metadata"))
        found = [
            m.as_json(meta)
            for m in reversed(self.messages)
            if m.channel == channel and m.thread_ts is None and float(m.ts) >= oldest
        ]
        return {"ok": True, "messages": found, "has_more": False}

    def _auth_test(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "user_id": BOT_USER, "bot_id": BOT_ID}


_METHODS = {
    "chat.postMessage": FakeSlack._post,
    "chat.update": FakeSlack._update,
    "chat.postEphemeral": FakeSlack._ephemeral,
    "conversations.replies": FakeSlack._replies,
    "conversations.history": FakeSlack._history,
    "auth.test": FakeSlack._auth_test,
}


def _json_arg(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in ("1", "true")


class _Handler(BaseHTTPRequestHandler):
    fake: FakeSlack
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def _serve(self) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        args: dict[str, Any] = dict(parse_qsl(url.query))
        kind = self.headers.get("Content-Type", "")
        if raw and "json" in kind:
            args.update(json.loads(raw))
        elif raw:
            args.update(parse_qsl(raw.decode()))
        method = url.path.removeprefix("/api/")
        status, body, headers = self.fake.handle(method, self.headers.get("Authorization"), args)
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
