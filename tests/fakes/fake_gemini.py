"""A fake Gemini API (generativelanguage) on loopback, faithful enough for the real Gemini CLI.

Real HTTP (``ThreadingHTTPServer`` in a background thread).
``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` answers server-sent events, each
a ``GenerateContentResponse`` (the text in two chunks, the last with ``finishReason: STOP`` and
``usageMetadata``: the test's ``usage`` for the request, else a count of the text);
``:generateContent`` answers one JSON response (for a request that asks for
JSON, a JSON object); ``:countTokens`` a count; ``GET .../models`` one model; anything else the
API's JSON error with 404. Every request is recorded (method, path, headers, parsed body).

The CLI is pointed at it with ``GOOGLE_GEMINI_BASE_URL`` (plain http is accepted for loopback)
and a placeholder ``GEMINI_API_KEY``: ``gemini_env`` gives both, and a settings file choosing
API-key auth.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.loopback import LoopbackServer

PLACEHOLDER_KEY = "fake-gemini-api-key-for-tests"


@dataclass(frozen=True)
class FunctionCall:
    """A reply that calls one of the CLI's tools (``run_shell_command`` …) with ARGS."""

    name: str
    args: dict[str, Any]


Reply = Callable[["GeminiRequest"], "str | FunctionCall"]
Usage = Callable[["GeminiRequest"], "dict[str, int] | None"]


@dataclass(frozen=True)
class GeminiRequest:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    seq: int

    @property
    def action(self) -> str:
        """``streamGenerateContent``, ``generateContent``, ``countTokens`` or ``""``."""
        return self.path.rsplit(":", 1)[1] if ":" in self.path else ""

    @property
    def is_conversation(self) -> bool:
        """A conversation turn: streamed, and it offers tools (side requests do not)."""
        return (
            self.action == "streamGenerateContent"
            and isinstance(self.body, dict)
            and bool(self.body.get("tools"))
        )

    def user_texts(self) -> list[str]:
        """The text of every user turn that is not a tool response, in order (the context parts
        the CLI adds, wrapped in ``<...>`` tags, left out)."""
        if not isinstance(self.body, dict):
            return []
        out = []
        for content in self.body.get("contents") or []:
            if not isinstance(content, dict) or content.get("role") != "user":
                continue
            parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
            texts = [str(p["text"]) for p in parts if "text" in p]
            # the context the CLI adds itself comes in parts wrapped in <...> tags
            text = "".join(t for t in texts if not t.lstrip().startswith("<"))
            if text:
                out.append(text)
        return out

    @property
    def prompt(self) -> str | None:
        texts = self.user_texts()
        return texts[-1] if texts else None


def default_reply(request: GeminiRequest) -> str:
    return f"FAKE-GEMINI-REPLY-{request.seq}"


@dataclass
class FakeGemini(LoopbackServer):
    """The fake API server. Start with ``start()`` or a ``with`` block; ``url`` is its base."""

    reply: Reply = default_reply
    usage: Usage | None = None
    """The ``usageMetadata`` each request's answer ends with (None: a count of its text)."""
    sent_usage: dict[int, dict[str, int]] = field(default_factory=dict)
    """What ``usage`` answered, by request ``seq``."""
    requests: list[GeminiRequest] = field(default_factory=list)

    def usage_of(self, request: GeminiRequest) -> dict[str, int] | None:
        chosen = self.usage(request) if self.usage is not None else None
        if chosen is not None:
            with self._lock:
                self.sent_usage[request.seq] = chosen
        return chosen

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _Handler

    @property
    def url(self) -> str:
        return self.origin

    def gemini_env(self, home: Path) -> dict[str, str]:
        """The environment that points the real ``gemini`` at this fake: HOME (with a
        settings file choosing API-key auth, no telemetry, no update check), the key and the
        base URL."""
        settings = home / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(
            json.dumps(
                {
                    "security": {"auth": {"selectedType": "gemini-api-key"}},
                    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                    "privacy": {"usageStatisticsEnabled": False},
                    "telemetry": {"enabled": False},
                }
            )
        )
        return {
            "HOME": str(home),
            "GEMINI_API_KEY": PLACEHOLDER_KEY,
            "GOOGLE_GEMINI_BASE_URL": self.url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }

    def record(self, method: str, target: str, headers: dict[str, str], body: Any) -> Any:
        with self._lock:
            request = GeminiRequest(method, urlsplit(target).path, headers, body, next(self._seq))
            self.requests.append(request)
        return request

    def snapshot(self) -> list[GeminiRequest]:
        with self._lock:
            return list(self.requests)

    def conversation_turns(self) -> list[GeminiRequest]:
        return [r for r in self.snapshot() if r.is_conversation]

    def user_prompts(self) -> list[str]:
        """The newest user prompt of each conversation turn, in arrival order."""
        return [r.prompt for r in self.conversation_turns() if r.prompt is not None]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGemini
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def do_GET(self) -> None:
        request = self.fake.record("GET", self.path, self._headers(), None)
        if request.path.endswith("/models"):
            self._json(200, {"models": [{"name": "models/gemini-fake"}]})
        else:
            self._not_found()

    def do_POST(self) -> None:
        request = self.fake.record("POST", self.path, self._headers(), self._body())
        answer = self.fake.reply(request)
        usage = self.fake.usage_of(request)
        if isinstance(answer, FunctionCall):
            self._call(answer, usage)
        elif request.action == "streamGenerateContent":
            self._stream(answer, usage)
        elif request.action == "generateContent":
            side = _side_answer(request.body, answer)
            self._json(200, _response(side, final=True, usage=usage))
        elif request.action == "countTokens":
            self._json(200, {"totalTokens": max(1, len(json.dumps(request.body)) // 4)})
        else:
            self._not_found()

    def _not_found(self) -> None:
        self._json(404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json; charset=UTF-8")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, text: str, usage: dict[str, int] | None) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        half = len(text) // 2
        for chunk, final in ((text[:half], False), (text[half:], True)):
            event = json.dumps(_response(chunk, final, usage))
            self.wfile.write(f"data: {event}\r\n\r\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def _call(self, call: FunctionCall, usage: dict[str, int] | None) -> None:
        """One streamed response whose only part calls CALL's tool."""
        response = _response("", final=True, usage=usage)
        part = {"functionCall": {"name": call.name, "args": call.args}}
        response["candidates"][0]["content"]["parts"] = [part]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(f"data: {json.dumps(response)}\r\n\r\n".encode())
        self.wfile.flush()
        self.close_connection = True


def _side_answer(body: Any, text: str) -> str:
    """A side request (model routing, next-speaker checks) that asks for JSON gets an object
    filled in from the schema it gives (strings: TEXT, numbers: 1, enums: the first value)."""
    config = body.get("generationConfig") if isinstance(body, dict) else None
    if not isinstance(config, dict) or config.get("responseMimeType") != "application/json":
        return text
    schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
    return json.dumps(_fill(schema, text))


def _fill(schema: Any, text: str) -> Any:
    if not isinstance(schema, dict):
        return text
    if schema.get("enum"):
        return schema["enum"][0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        properties = schema.get("properties") or {}
        return {key: _fill(value, text) for key, value in properties.items()}
    if kind == "array":
        return [_fill(schema.get("items"), text)]
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return False
    return text


def _response(text: str, final: bool, usage: dict[str, int] | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [{"text": text}]},
        "index": 0,
    }
    response: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-fake"}
    if final:
        candidate["finishReason"] = "STOP"
        response["usageMetadata"] = usage or {
            "promptTokenCount": 10,
            "candidatesTokenCount": max(1, len(text) // 4),
            "totalTokenCount": 10 + max(1, len(text) // 4),
        }
    return response
