"""Reading GitHub's answers: JSON bodies, models, rate-limit headers, and the typed error a
refusal stands for. Pure functions of a response (and the clock where a reset is computed)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from the_loop.github.errors import (
    GitHubAuthFailed,
    GitHubError,
    GitHubNotFound,
    GitHubUnavailable,
    RateLimited,
)
from the_loop.github.models import RateState

if TYPE_CHECKING:
    import httpx

SECONDARY_DEFAULT_WAIT = 60.0
M = TypeVar("M", bound=BaseModel)


def loads(body: bytes, what: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise GitHubUnavailable(f"GitHub answered {what} with a body that is not JSON") from None


def json_of(response: httpx.Response, what: str) -> Any:
    data = loads(response.content, what)
    if not isinstance(data, dict | list):
        raise GitHubUnavailable(f"GitHub answered {what} with unexpected JSON")
    return data


def parse_model(model: type[M], data: object, what: str) -> M:
    """Validate DATA as MODEL; an unexpected shape is a ``GitHubError`` naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise GitHubError(
            f"unexpected {what} from GitHub: {where}: {first['msg']}", github_status=200
        ) from None


def _message_of(response: httpx.Response) -> str:
    try:
        data = json.loads(response.content)
    except ValueError:
        return response.reason_phrase or ""
    message = data.get("message") if isinstance(data, dict) else None
    return str(message) if message else (response.reason_phrase or "")


def rate_from_headers(headers: httpx.Headers) -> RateState | None:
    try:
        return RateState(
            limit=int(headers["x-ratelimit-limit"]),
            remaining=int(headers["x-ratelimit-remaining"]),
            used=int(headers.get("x-ratelimit-used", "0")),
            reset=int(headers["x-ratelimit-reset"]),
            resource=headers.get("x-ratelimit-resource", "core"),
        )
    except (KeyError, ValueError):
        return None


def rate_limit_error(response: httpx.Response, what: str, now: float) -> RateLimited | None:
    """The ``RateLimited`` a 403/429 stands for, or None when it is a plain refusal."""
    headers = response.headers
    message = _message_of(response)
    retry_after = headers.get("retry-after")
    if retry_after is not None or "secondary rate limit" in message.lower():
        wait = _seconds(retry_after, SECONDARY_DEFAULT_WAIT)
        return RateLimited(
            f"GitHub's secondary rate limit hit on {what}: retry after {wait:g}s",
            reset_at=now + wait,
            secondary=True,
            resource="*",
        )
    state = rate_from_headers(headers)
    if headers.get("x-ratelimit-remaining") == "0" or response.status_code == 429:
        reset = float(state.reset) if state else now + SECONDARY_DEFAULT_WAIT
        resource = state.resource if state else "core"
        return RateLimited(
            f"GitHub's {resource} rate limit is used up ({what}); it resets in "
            f"{max(0.0, reset - now):.0f}s",
            reset_at=reset,
            resource=resource,
        )
    return None


def gates_closed_by(
    response: httpx.Response, state: RateState | None, what: str, now: float
) -> list[RateLimited]:
    """The rate-limit gates RESPONSE (to WHAT, its headers read as STATE) closes at NOW: its
    resource once nothing remains before a reset ahead, and the limit a 403/429 stands for."""
    closed: list[RateLimited] = []
    if state is not None and state.remaining <= 0 and state.reset > now:
        closed.append(
            RateLimited(
                f"GitHub's {state.resource} rate limit is used up",
                reset_at=float(state.reset),
                resource=state.resource,
            )
        )
    if response.status_code in (403, 429):
        limited = rate_limit_error(response, what, now)
        if limited is not None:
            closed.append(limited)
    return closed


def _seconds(value: str | None, default: float) -> float:
    try:
        return max(0.0, float(value)) if value is not None else default
    except ValueError:
        return default


def permanent_error(response: httpx.Response, what: str, token_source: str) -> GitHubError:
    status = response.status_code
    message = _message_of(response)
    if status == 401:
        return GitHubAuthFailed(
            f"GitHub rejected the token from {token_source} ({status} {message}) on {what}; "
            "check the token or run `gh auth login`",
            github_status=status,
            github_message=message,
        )
    cls = GitHubNotFound if status == 404 else GitHubError
    return cls(
        f"GitHub answered {status} to {what}: {message}",
        github_status=status,
        github_message=message,
    )


def raise_graphql_errors(payload: Mapping[str, Any], response: httpx.Response, now: float) -> None:
    """Raise the typed error for a GraphQL answer carrying ``errors``."""
    errors = payload.get("errors")
    if not errors or not isinstance(errors, list):
        return
    first = errors[0] if isinstance(errors[0], dict) else {}
    kind, message = str(first.get("type", "")), str(first.get("message", "GraphQL error"))
    if kind == "RATE_LIMITED":
        state = rate_from_headers(response.headers)
        reset = float(state.reset) if state else now + SECONDARY_DEFAULT_WAIT
        raise RateLimited(
            f"GitHub's GraphQL rate limit: {message}", reset_at=reset, resource="graphql"
        )
    if kind == "NOT_FOUND":
        raise GitHubNotFound(
            f"GitHub GraphQL: {message}", github_status=404, github_message=message
        )
    if payload.get("data") is None:
        raise GitHubError(f"GitHub GraphQL: {message}", github_status=200, github_message=message)
