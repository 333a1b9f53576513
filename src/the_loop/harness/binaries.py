"""Where a harness binary is found: on PATH, else in the project's ``node_modules/.bin``.

``make setup`` installs the pinned agent CLIs (Claude Code, Codex, Gemini) with npm into the
``node_modules`` of the checkout the-loop runs from; that directory is not on anybody's PATH.
A bare program name is looked up on the PATH the harness will get (its ``env.PATH`` when the
config sets one, else the process's), then in ``<project>/node_modules/.bin``, where
``<project>`` is the directory holding the ``src/the_loop`` package this code was loaded from
(a checkout, or an editable install of one). An installed wheel has no such directory and
looks on PATH only. The current directory is never searched: a workspace is a clone of
somebody's repository, and its ``node_modules`` must not choose the program that runs.
A name with a ``/`` is used as written. See docs/decisions/0016-harness-binary-lookup.md.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from the_loop.config import Config
    from the_loop.harness.base import Launch

_PACKAGE = Path(__file__).resolve().parents[1]


@dataclass(frozen=True, slots=True)
class Located:
    """An executable and where it was found: ``PATH``, ``node_modules`` or ``configured``."""

    path: str
    where: str

    def describe(self) -> str:
        if self.where == "PATH":
            return f"{self.path} (on PATH)"
        if self.where == "node_modules":
            return f"{self.path} (the project's node_modules/.bin, not on PATH)"
        return f"{self.path} (as configured)"


def project_node_bin() -> Path | None:
    """``<project>/node_modules/.bin`` when the-loop runs from a checkout that has one."""
    if _PACKAGE.parent.name != "src":
        return None
    candidate = _PACKAGE.parent.parent / "node_modules" / ".bin"
    return candidate if candidate.is_dir() else None


def locate(binary: str, env: Mapping[str, str] | None = None) -> Located | None:
    """Where BINARY is (see the module doc); None when it is nowhere. ENV is the harness's
    extra environment (its PATH, when set, replaces the process's)."""
    if "/" in binary:
        return Located(binary, "configured") if _executable(Path(binary)) else None
    search = (env or {}).get("PATH") or os.environ.get("PATH", os.defpath)
    found = shutil.which(binary, path=search)
    if found is not None:
        return Located(found, "PATH")
    node_bin = project_node_bin()
    if node_bin is not None and _executable(node_bin / binary):
        return Located(str(node_bin / binary), "node_modules")
    return None


def with_located_binary(launch: Launch) -> Launch:
    """LAUNCH with its program replaced by the project's ``node_modules/.bin`` copy when it is
    only found there (a program on PATH, or not found at all, is left as written: the runner
    then reports it missing)."""
    found = locate(launch.argv[0], launch.env) if launch.argv else None
    if found is None or found.where != "node_modules":
        return launch
    return replace(launch, argv=(found.path, *launch.argv[1:]))


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


_DEFAULT_BINARIES = {
    "claude": "claude",
    "codex": "codex",
    "gemini": "gemini",
    "cursor": "cursor-agent",
    "demo": sys.executable,  # the offline demo agent runs on the-loop's own interpreter
}


def configured_binary(config: Config, name: str) -> str:
    """The executable harness NAME will run (its argv[0], before ``locate``)."""
    harness = config.harness(name)
    if harness.binary:
        return harness.binary
    adapter = harness.adapter or name
    template = harness.interactive or harness.headless
    if adapter == "command" and template:
        return template[0]
    return _DEFAULT_BINARIES.get(adapter, adapter)


def harness_names(config: Config) -> list[str]:
    """Every harness CONFIG may run: the default, each standing session's, each configured."""
    names = [config.routing.default_harness]
    names += [s.harness for s in config.standing.sessions if s.harness]
    names += list(config.harnesses)
    return list(dict.fromkeys(names))


def installed_programs(config: Config) -> list[str]:
    """Where every harness CONFIG may run is installed (``locate``d): an agent's sandbox
    binds them read-only, so that no agent rewrites another's CLI (decision 0110)."""
    found = (
        locate(configured_binary(config, n), config.harness(n).env) for n in harness_names(config)
    )
    return [located.path for located in found if located is not None]
