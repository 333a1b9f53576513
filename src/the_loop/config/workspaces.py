"""The ``workspaces:`` section: a git worktree per work item, made from one local clone per
repository (objects shared), optionally sparse, taken ready from a spare, removed by age."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from the_loop.refs import OWNER_RE, REPO_RE


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_default=True
    )


def _repo_name(value: str) -> str:
    owner, sep, repo = value.partition("/")
    if not sep or not OWNER_RE.match(owner) or not REPO_RE.match(repo) or repo in {".", ".."}:
        raise ValueError(f"{value!r} is not OWNER/REPO")
    return value


RepoName = Annotated[str, AfterValidator(_repo_name)]


def _cone_path(value: str) -> str:
    clean = value.strip().strip("/")
    if not clean or clean.startswith("!") or any(p in ("", ".", "..") for p in clean.split("/")):
        raise ValueError(f"{value!r} is not a directory of the repository")
    return clean


_ConePath = Annotated[str, AfterValidator(_cone_path)]


class WorkspacesConfig(_Model):
    """A git worktree per work item."""

    enabled: bool = False
    root: Path | None = Field(None, description="Defaults to <stateDir>/workspaces.")
    repos: dict[RepoName, Path] = Field(
        default_factory=dict, description="OWNER/REPO -> clone path."
    )
    setup: str | None = Field(None, description="Shell command run once in a new workspace.")
    remove_on_close: bool = False
    clone_url: str = Field(
        "https://{host}/{owner}/{repo}.git",
        description="Where a repository not in repos is cloned from, once, under "
        "<root>/_clones ({host}, {owner}, {repo} filled in).",
    )
    sparse: dict[RepoName, list[_ConePath]] = Field(
        default_factory=dict,
        description="OWNER/REPO -> the directories its worktrees check out (git "
        "sparse-checkout, cone mode); a repository not listed gets every file.",
    )
    spare: bool = Field(
        True,
        description="Keep one ready worktree per repository that the next spawn takes "
        "(renamed and re-branched); a new one is made after, off the spawn's path.",
    )
    keep_days: float | None = Field(
        None,
        ge=0,
        description="Remove a closed session's worktree this many days after it closed "
        "(checked hourly; never while its item has a live session). Unset keeps them.",
    )
