"""Fixtures shared with other folders."""

from __future__ import annotations

from tests.standing.conftest import st  # noqa: F401  (the standing fixture)
