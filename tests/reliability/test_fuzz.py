"""Property-based fuzzing of everything that takes outside input: webhook bodies and headers,
names (refs, standing names, paths, ids), config files. Always a 4xx or a clear CLI error; never
a 500, a traceback, or a state change (SPEC §12)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.daemon import SECRET, Daemon
from the_loop.config import parse_config_text
from the_loop.errors import BadInput, ConfigInvalid
from the_loop.github.signature import sign
from the_loop.refs import WorkItemRef, safe_session_id, validate_standing_name

pytestmark = pytest.mark.reliability
FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
header_text = st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=60)
names = st.text(max_size=60)


def _state(daemon: Daemon) -> tuple[Any, Any]:
    return (daemon.api("GET", "/sessions").json(), daemon.api("GET", "/status").json()["inbox"])


@FUZZ
@given(
    body=st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()),
    event=header_text,
    delivery=header_text,
    signature=st.none() | header_text,
)
def test_unsigned_or_badly_signed_webhooks_are_refused(
    daemon: Daemon, body: bytes, event: str, delivery: str, signature: str | None
) -> None:
    before = _state(daemon)
    headers = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery}
    if signature is not None:
        headers["X-Hub-Signature-256"] = signature
    r = httpx.post(f"{daemon.url}/webhooks/github", content=body, headers=headers, timeout=10)
    assert r.status_code == 401
    assert r.json()["error"]["code"] == "unauthorized"
    assert _state(daemon) == before


@FUZZ
@given(
    payload=json_values,
    event=st.sampled_from(
        [
            "issues",
            "issue_comment",
            "pull_request",
            "pull_request_review",
            "workflow_run",
            "check_run",
            "check_suite",
            "status",
            "pull_request_review_comment",
        ]
    )
    | header_text,
    delivery=header_text,
)
def test_signed_garbage_is_a_2xx_or_a_4xx_never_a_500(
    daemon: Daemon, payload: Any, event: str, delivery: str
) -> None:
    body = json.dumps(payload).encode()
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": sign(SECRET.encode(), body),
    }
    r = httpx.post(f"{daemon.url}/webhooks/github", content=body, headers=headers, timeout=10)
    assert r.status_code in (200, 202, 400), (r.status_code, r.text)
    assert r.headers["content-type"].startswith("application/json")
    assert daemon.api("GET", "/sessions").json() == []


@FUZZ
@given(name=st.text(min_size=1, max_size=60))
def test_api_names_are_4xx_never_500(daemon: Daemon, name: str) -> None:
    assume(name not in {".", ".."})  # the HTTP client itself resolves dot segments
    quoted = quote(name, safe="")
    for method, path in (
        ("GET", f"/standing/{quoted}"),
        ("GET", f"/sessions/{quoted}"),
        ("POST", f"/standing/{quoted}/start"),
        ("GET", f"/sessions/{quoted}/screen"),
    ):
        r = daemon.api(method, path)
        assert 400 <= r.status_code < 500, (method, path, r.status_code, r.text)
        assert "error" in r.json()
    assert daemon.api("GET", "/standing").json() == []


@FUZZ
@given(name=names)
def test_cli_names_are_clear_errors(cli: Any, name: str) -> None:
    for args in (
        ["events", "--work-item", name],
        ["events", "--standing", name],
        ["sessions", "show", name],
        ["standing", "start", name],
        ["inbox", "replay", name],
        ["events", "--since", name],
    ):
        if name.startswith("-") and args[-2].startswith("--"):
            args = [*args[:-1][:-1], f"{args[-2]}={name}"]
        elif name.startswith("-"):
            args = [*args[:-1], "--", name]
        result = cli(*args)
        assert result.exit_code in (0, 1, 2), (args, result)
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr, args
    assert cli("standing", "list", "--format", "json").stdout.strip() == "[]"


@settings(max_examples=300, deadline=None)
@given(text=names)
def test_name_grammars_accept_or_refuse_cleanly(text: str) -> None:
    for parse in (WorkItemRef.parse, validate_standing_name, safe_session_id):
        try:
            parse(text)
        except BadInput as exc:
            assert str(exc)


@settings(max_examples=200, deadline=None)
@given(data=json_values)
def test_config_files_validate_or_list_problems(data: Any) -> None:
    try:
        parse_config_text(json.dumps(data))
    except ConfigInvalid as exc:
        assert exc.problems and all(": " in p for p in exc.problems)
