"""The errors of the GitHub doorway, one class per way GitHub can refuse or fail.

Permanent refusals (``GitHubError`` and its subclasses) must not be retried; transient failures
(``GitHubUnavailable``, ``RateLimited``) may be, after ``RateLimited.retry_after``.
"""

from __future__ import annotations

import time

from the_loop.errors import LoopError, NotFound, Unavailable


class GitHubError(LoopError):
    """GitHub refused a request for good (a 4xx other than a rate limit): do not retry.

    ``github_status`` is GitHub's HTTP status, ``github_message`` its ``message``.
    """

    status = 502
    code = "github_error"

    def __init__(self, message: str, *, github_status: int = 0, github_message: str = "") -> None:
        super().__init__(message)
        self.github_status = github_status
        self.github_message = github_message


class GitHubNotFound(GitHubError, NotFound):
    """GitHub answered 404 (or GraphQL NOT_FOUND): the repository or item does not exist."""

    status = 404
    code = "github_not_found"


class GitHubAuthFailed(GitHubError):
    """GitHub rejected the token (401)."""

    code = "github_auth_failed"


class GitHubTokenMissing(LoopError):
    """No token: the environment variable is unset and ``gh auth token`` gave none."""

    status = 503
    code = "github_token_missing"


class GitHubUnavailable(Unavailable):
    """GitHub did not answer usefully (5xx, timeout, connection error): retrying may help."""

    code = "github_unavailable"


class RateLimited(GitHubUnavailable):
    """GitHub's rate limit is exhausted until ``reset_at`` (epoch seconds).

    ``secondary`` tells a secondary (abuse) limit from the primary hourly one; ``resource`` is
    the limit's resource (``core``, ``graphql``, or ``*`` for a secondary limit).
    """

    code = "github_rate_limited"

    def __init__(
        self, message: str, *, reset_at: float, secondary: bool = False, resource: str = "core"
    ) -> None:
        super().__init__(message)
        self.reset_at = reset_at
        self.secondary = secondary
        self.resource = resource

    def retry_after(self, now: float | None = None) -> float:
        """Seconds from NOW (default: the current time) until a request may be sent again."""
        return max(0.0, self.reset_at - (time.time() if now is None else now))
