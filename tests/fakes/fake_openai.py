"""A fake OpenAI Responses API on loopback, faithful enough for the real Codex CLI.

Real HTTP (``ThreadingHTTPServer`` in a background thread). ``POST /v1/responses`` answers a
streamed response as server-sent events (``response.created``, ``response.output_item.added``,
``response.output_text.delta``, ``response.output_item.done``, ``response.completed``) whose
one output item is an assistant message, or, when the reply is a ``FunctionCall``, a call of
one of the tools the request offers (an output item of type ``function_call``: ``call_id``,
``name``, ``arguments`` as JSON text, streamed with ``response.function_call_arguments.delta``
and ``.done``); ``GET /v1/models`` lists one model; anything else gets the API's JSON error
shape with 404. Every request is recorded (method, path, headers, parsed JSON body). The
request that carries the call's result (a ``function_call_output`` input item) is told by
``ResponsesRequest.answers_a_tool``.

Codex is pointed at it with a model provider of its own in ``$CODEX_HOME/config.toml``
(``codex_home`` writes one) and the key in the environment variable that provider names: no
login is needed, and nothing leaves loopback.

Usage::

    with FakeOpenAI() as api:
        env = api.codex_env(tmp_path / "codex-home")
        ...
        wait_until(lambda: "hello" in api.user_prompts())
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.loopback import LoopbackServer

MODEL = "fake-codex-model"
KEY_ENV = "FAKE_OPENAI_API_KEY"
PLACEHOLDER_KEY = "sk-fake-openai-key-for-tests"


@dataclass(frozen=True)
class FunctionCall:
    """A reply that calls the tool NAME with ARGUMENTS (sent as JSON text); ``call_id`` is
    made from the request's ``seq`` when not given."""

    name: str
    arguments: dict[str, Any]
    call_id: str = ""


Reply = Callable[["ResponsesRequest"], "str | FunctionCall"]
Usage = Callable[["ResponsesRequest", str], dict[str, Any]]
"""The ``usage`` object of a response to a request with reply text (``default_usage``; a
function call's text is its arguments' JSON)."""


@dataclass(frozen=True)
class ResponsesRequest:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    seq: int

    @property
    def is_turn(self) -> bool:
        return self.method == "POST" and self.path.endswith("/responses")

    @property
    def is_conversation(self) -> bool:
        """A conversation turn (it offers tools); the short title request does not."""
        return self.is_turn and isinstance(self.body, dict) and bool(self.body.get("tools"))

    @property
    def items(self) -> list[dict[str, Any]]:
        if not isinstance(self.body, dict):
            return []
        return [i for i in self.body.get("input") or [] if isinstance(i, dict)]

    def user_texts(self) -> list[str]:
        """The text of every user message of this request's input, in order (the context
        messages Codex adds itself, which are wrapped in ``<...>`` tags, left out)."""
        out = []
        for item in self.items:
            if item.get("type", "message") != "message" or item.get("role") != "user":
                continue
            text = "".join(
                str(part.get("text", ""))
                for part in item.get("content") or []
                if isinstance(part, dict) and part.get("type") == "input_text"
            )
            if text and not text.lstrip().startswith("<"):
                out.append(text)
        return out

    @property
    def prompt(self) -> str | None:
        texts = self.user_texts()
        return texts[-1] if texts else None

    def tool_names(self) -> list[str]:
        """The names of the function tools this request offers (namespaces left out)."""
        if not isinstance(self.body, dict):
            return []
        tools = [t for t in self.body.get("tools") or [] if isinstance(t, dict)]
        return [str(t["name"]) for t in tools if t.get("type") == "function" and "name" in t]

    def tool_outputs(self) -> list[dict[str, Any]]:
        """Every ``function_call_output`` item the CLI sent back in this request, in order."""
        return [i for i in self.items if i.get("type") == "function_call_output"]

    @property
    def answers_a_tool(self) -> bool:
        """Whether the newest input item carries a tool's result (the turn goes on)."""
        items = self.items
        return bool(items) and items[-1].get("type") == "function_call_output"

    def shell_call(self, command: str, justification: str = "") -> FunctionCall:
        """A call of the shell tool this request offers (``exec_command``, one shell string in
        ``cmd``, as Codex 0.171 offers it) to run COMMAND. With a JUSTIFICATION it asks to run
        outside the sandbox: Codex then asks the user first (in its ``on-request`` approval
        mode a sandboxed command runs without asking)."""
        offered = self.tool_names()
        assert "exec_command" in offered, f"no exec_command tool offered: {offered}"
        arguments: dict[str, Any] = {"cmd": command}
        if justification:
            arguments["sandbox_permissions"] = "require_escalated"
            arguments["justification"] = justification
        return FunctionCall("exec_command", arguments)


def default_reply(request: ResponsesRequest) -> str:
    return f"FAKE-CODEX-REPLY-{request.seq}"


@dataclass
class FakeOpenAI(LoopbackServer):
    """The fake API server. Start with ``start()`` or a ``with`` block; ``url`` is its base."""

    reply: Reply = default_reply
    usage: Usage | None = None
    requests: list[ResponsesRequest] = field(default_factory=list)
    sent_usage: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The usage object each answered request (by ``seq``) was sent."""

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _Handler

    @property
    def url(self) -> str:
        return self.origin + "/v1"

    def codex_home(self, home: Path) -> Path:
        """Write ``HOME/config.toml`` pointing Codex at this fake (a provider of its own, no
        login, no update check, no telemetry); returns HOME."""
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            f'model = "{MODEL}"\n'
            'model_provider = "fake"\n'
            "check_for_update_on_startup = false\n"
            "[analytics]\nenabled = false\n"
            "[model_providers.fake]\n"
            'name = "fake"\n'
            f'base_url = "{self.url}"\n'
            'wire_api = "responses"\n'
            f'env_key = "{KEY_ENV}"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n",
            encoding="utf-8",
        )
        return home

    def codex_env(self, home: Path) -> dict[str, str]:
        """The environment that points the real ``codex`` at this fake."""
        return {"CODEX_HOME": str(self.codex_home(home)), KEY_ENV: PLACEHOLDER_KEY}

    def record(self, method: str, target: str, headers: dict[str, str], body: Any) -> Any:
        with self._lock:
            request = ResponsesRequest(
                method, urlsplit(target).path, headers, body, next(self._seq)
            )
            self.requests.append(request)
        return request

    def turns(self) -> list[ResponsesRequest]:
        """Every request to the Responses endpoint."""
        with self._lock:
            return [r for r in self.requests if r.is_turn]

    def conversation_turns(self) -> list[ResponsesRequest]:
        """Conversation turns only (the title request of the interactive CLI left out)."""
        return [r for r in self.turns() if r.is_conversation]

    def user_prompts(self) -> list[str]:
        """The newest user prompt of each conversation turn, in arrival order."""
        return [r.prompt for r in self.conversation_turns() if r.prompt is not None]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
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
            self._json(200, {"object": "list", "data": [_model()], "models": []})
        else:
            self._not_found()

    def do_POST(self) -> None:
        request = self.fake.record("POST", self.path, self._headers(), self._body())
        if request.is_turn:
            self._respond(request)
        else:
            self._not_found()

    def _not_found(self) -> None:
        error = {"message": "not found", "type": "invalid_request_error", "code": "not_found"}
        self._json(404, {"error": error})

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _respond(self, request: ResponsesRequest) -> None:
        answer = self.fake.reply(request)
        text = json.dumps(answer.arguments) if isinstance(answer, FunctionCall) else answer
        usage = (self.fake.usage or default_usage)(request, text)
        with self.fake._lock:
            self.fake.sent_usage[request.seq] = usage
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        events = (
            _call_events(request.seq, answer, usage)
            if isinstance(answer, FunctionCall)
            else _events(request.seq, answer, usage)
        )
        for event in events:
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True


def _model() -> dict[str, Any]:
    return {"id": MODEL, "object": "model", "created": 0, "owned_by": "fake"}


def default_usage(request: ResponsesRequest, text: str) -> dict[str, Any]:
    output = max(1, len(text) // 4)
    return {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10 + output,
    }


def _response(seq: int) -> dict[str, Any]:
    return {
        "id": f"resp_fake_{seq:06d}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": MODEL,
        "output": [],
    }


def _events(seq: int, text: str, usage: dict[str, Any]) -> list[dict[str, Any]]:
    response, item_id = _response(seq), f"msg_fake_{seq:06d}"
    done_item = {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return [
        {"type": "response.created", "response": response},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**done_item, "status": "in_progress", "content": []},
        },
        {
            "type": "response.output_text.delta",
            "item_id": item_id,
            "output_index": 0,
            "content_index": 0,
            "delta": text,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [done_item], "usage": usage},
        },
    ]


def _call_events(seq: int, call: FunctionCall, usage: dict[str, Any]) -> list[dict[str, Any]]:
    """A response whose one output item calls CALL's tool, streamed as the API streams it."""
    response, item_id = _response(seq), f"fc_fake_{seq:06d}"
    arguments = json.dumps(call.arguments)
    done_item = {
        "id": item_id,
        "type": "function_call",
        "status": "completed",
        "call_id": call.call_id or f"call_fake_{seq:06d}",
        "name": call.name,
        "arguments": arguments,
    }
    at = {"item_id": item_id, "output_index": 0}
    return [
        {"type": "response.created", "response": response},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**done_item, "status": "in_progress", "arguments": ""},
        },
        {"type": "response.function_call_arguments.delta", **at, "delta": arguments},
        {"type": "response.function_call_arguments.done", **at, "arguments": arguments},
        {"type": "response.output_item.done", "output_index": 0, "item": done_item},
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [done_item], "usage": usage},
        },
    ]
