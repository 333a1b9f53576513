"""The GitHub token: from the environment, else from ``gh auth token``; never logged."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from urllib.parse import urlsplit

from the_loop.github.errors import GitHubTokenMissing

DEFAULT_API_URL = "https://api.github.com"
GH_TIMEOUT_SECONDS = 10.0


def resolve_token(
    token_env: str = "GITHUB_TOKEN",
    *,
    api_url: str = DEFAULT_API_URL,
    environ: Mapping[str, str] | None = None,
    gh_timeout: float = GH_TIMEOUT_SECONDS,
) -> str:
    """The token from ``$TOKEN_ENV``, else from ``gh auth token`` for API_URL's host.

    Raises ``GitHubTokenMissing`` naming both sources when neither gives one; never includes
    the token in a message.
    """
    env = os.environ if environ is None else environ
    token = env.get(token_env, "").strip()
    if token:
        return token
    argv = ["gh", "auth", "token"]
    host = _gh_host(api_url)
    if host != "github.com":
        argv += ["--hostname", host]
    return _gh_token(argv, token_env, gh_timeout)


def _gh_host(api_url: str) -> str:
    host = urlsplit(api_url).netloc.lower()
    return "github.com" if host in {"api.github.com", "github.com"} else host


def _gh_token(argv: list[str], token_env: str, timeout: float) -> str:
    hint = f"export {token_env}=<token>, or install gh and run `gh auth login`"
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise GitHubTokenMissing(f"${token_env} is unset and gh is not installed: {hint}") from None
    except subprocess.TimeoutExpired:
        raise GitHubTokenMissing(
            f"${token_env} is unset and `gh auth token` did not answer within {timeout:g}s"
        ) from None
    except OSError as exc:
        raise GitHubTokenMissing(f"${token_env} is unset and gh failed: {exc.strerror}") from None
    token = proc.stdout.strip()
    if proc.returncode != 0 or not token:
        why = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise GitHubTokenMissing(
            f"${token_env} is unset and `gh auth token` gave no token ({why[0][:200]}): {hint}"
        )
    return token
