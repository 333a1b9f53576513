"""The one exception tree of the-loop.

Every error the core raises is a ``LoopError``. Each class carries the HTTP status the API
answers with, the exit code the CLI exits with and a short machine-readable ``code``. Edges
translate once: the CLI prints ``error: <message>``, the API answers
``{"error": {"code", "message"}}``.
"""

from __future__ import annotations


class LoopError(Exception):
    """Base of every error the-loop reports to a person or a client."""

    status: int = 500
    exit_code: int = 1
    code: str = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class BadInput(LoopError):
    """The caller gave something malformed or not allowed (CLI exit 2, HTTP 400)."""

    status = 400
    exit_code = 2
    code = "bad_input"


class ValidationFailed(BadInput):
    """Input parsed but failed validation; carries every problem (HTTP 422)."""

    status = 422
    code = "validation_failed"

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems: list[str] = problems or []


class ConfigInvalid(ValidationFailed):
    """The configuration file is invalid; ``problems`` holds ``key.path: message`` lines."""

    code = "config_invalid"


class Conflict(LoopError):
    """The request contradicts the current state (already exists, already declared)."""

    status = 409
    exit_code = 2
    code = "conflict"


class Refused(Conflict):
    """The-loop will not do this because it would touch something it does not own."""

    code = "refused"


class UnsupportedRunner(BadInput):
    """A harness was asked for under a runner it cannot run in."""

    code = "unsupported_runner"


class NotFound(LoopError):
    """The named thing does not exist (CLI exit 1, HTTP 404)."""

    status = 404
    exit_code = 1
    code = "not_found"


class NotRunning(LoopError):
    """The named thing exists but is not running (CLI exit 1, HTTP 409)."""

    status = 409
    exit_code = 1
    code = "not_running"


class Unauthorized(LoopError):
    """No valid credentials were presented (HTTP 401)."""

    status = 401
    exit_code = 1
    code = "unauthorized"


class Forbidden(LoopError):
    """The credentials do not allow this operation (HTTP 403)."""

    status = 403
    exit_code = 1
    code = "forbidden"


class Unavailable(LoopError):
    """A dependency did not answer (tmux, GitHub, the daemon); retrying may help (HTTP 503)."""

    status = 503
    exit_code = 1
    code = "unavailable"


class PeerFailed(LoopError):
    """Another node did not give a usable answer to a node-to-node request (HTTP 502)."""

    status = 502
    exit_code = 1
    code = "node_failed"


class PeerTimeout(PeerFailed):
    """Another node did not answer a node-to-node request in time (HTTP 504)."""

    status = 504
    code = "node_timeout"


class StateError(LoopError):
    """The state directory or database cannot be used (unwritable, corrupt, locked)."""

    status = 503
    exit_code = 1
    code = "state_error"


class AlreadyRunning(StateError):
    """Another daemon holds the state directory's lock."""

    code = "already_running"


class SpawnFailed(LoopError):
    """An agent could not be started (missing binary, tmux refused)."""

    status = 502
    exit_code = 1
    code = "spawn_failed"


def message_of(exc: BaseException) -> str:
    """EXC's message for a person: a ``LoopError``'s own, else its class name and text."""
    return exc.message if isinstance(exc, LoopError) else f"{type(exc).__name__}: {exc}"
