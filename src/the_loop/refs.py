"""The grammar of names: work item refs, slugs, standing names, tmux targets, session ids.

Every name that becomes a tmux target, a file name or an argv element is validated here, once,
when it is parsed. Nothing else in the code builds such a name by hand.

GitHub compares owner and repository names without regard to case, so a GitHub ref is kept in
lower case: ``Octo/Repo#21`` and ``octo/repo#21`` are one work item (one session, one tmux
target). A local work item (``local:NAME``, no tracker) is case-insensitive the same way.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from the_loop.errors import BadInput

OWNER_RE = re.compile(r"\A[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\Z")
REPO_RE = re.compile(r"\A(?!\.{1,2}\Z)(?!.*\.[Gg][Ii][Tt]\Z)[A-Za-z0-9._-]{1,100}\Z")
"""A repository name as GitHub allows it: not ``.`` or ``..``, not ending in ``.git``."""
HOST_RE = re.compile(
    r"\A(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*(?::[0-9]{1,5})?\Z"
)
STANDING_NAME_RE = re.compile(r"\A[a-z0-9][a-z0-9-]{0,39}\Z")
SESSION_ID_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
TARGET_RE = re.compile(r"\Aloop-[A-Za-z0-9._-]+\Z")
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
LOCAL_NAME_RE = re.compile(r"\A[a-z0-9][a-z0-9._-]{0,62}\Z")
_REF_RE = re.compile(r"\A(?:github:)?(?P<path>[^#\s]+)#(?P<number>[0-9]{1,10})\Z")
LOCAL_PREFIX = "local:"

REF_GRAMMAR = "github:OWNER/REPO#N, github:HOST/OWNER/REPO#N or local:NAME"
LOCAL_GRAMMAR = (
    "local:NAME, NAME of letters, digits, '.', '_' and '-', starting with a letter or digit, "
    "at most 63"
)
STANDING_GRAMMAR = "lowercase letters, digits and '-', starting with a letter or digit, at most 40"
DEFAULT_HOST = "github.com"
REPO_RULE = "REPO is letters, digits, '.', '_' and '-', not '.' or '..', not ending in '.git'"


def _valid_repo(repo: str) -> bool:
    return REPO_RE.fullmatch(repo) is not None


def validate_owner_repo(full_name: str) -> tuple[str, str]:
    """Split and validate ``OWNER/REPO``; raise ``BadInput`` showing the grammar otherwise."""
    owner, sep, repo = full_name.partition("/")
    if not sep or not OWNER_RE.match(owner) or not _valid_repo(repo):
        raise BadInput(f"invalid repository {full_name!r}: expected OWNER/REPO ({REPO_RULE})")
    return owner, repo


@dataclass(frozen=True, slots=True, order=True)
class WorkItemRef:
    """An issue or pull request: ``github:OWNER/REPO#N`` (host only when not github.com),
    owner and repository in lower case; or a local work item ``local:NAME`` with no tracker
    (``WorkItemRef.local(NAME)``: empty host and owner, NAME as its repo, number 0)."""

    owner: str
    repo: str
    number: int
    host: str = DEFAULT_HOST

    def __post_init__(self) -> None:
        if self.host == "" and self.owner == "" and self.number == 0:
            if not isinstance(self.repo, str) or not LOCAL_NAME_RE.match(self.repo.lower()):
                raise BadInput(f"invalid local work item name {self.repo!r}: {LOCAL_GRAMMAR}")
            object.__setattr__(self, "repo", self.repo.lower())
            return
        if not OWNER_RE.match(self.owner) or not _valid_repo(self.repo):
            raise BadInput(
                f"invalid work item owner/repo {self.owner}/{self.repo}: expected {REF_GRAMMAR}"
            )
        if not HOST_RE.match(self.host):
            raise BadInput(f"invalid GitHub host {self.host!r}: expected {REF_GRAMMAR}")
        if self.number < 1:
            raise BadInput(f"invalid work item number {self.number}: expected {REF_GRAMMAR}")
        object.__setattr__(self, "owner", self.owner.lower())
        object.__setattr__(self, "repo", self.repo.lower())

    @classmethod
    def local(cls, name: str) -> WorkItemRef:
        """The local work item NAME (``local:NAME``); ``BadInput`` showing the grammar."""
        return cls(owner="", repo=name, number=0, host="")

    @classmethod
    def parse(cls, text: str) -> WorkItemRef:
        """Parse a ref; ``github:`` may be omitted. Raise ``BadInput`` showing the grammar."""
        if text.strip().lower().startswith(LOCAL_PREFIX):
            return cls.local(text.strip()[len(LOCAL_PREFIX) :])
        m = _REF_RE.match(text.strip())
        if not m:
            raise BadInput(f"invalid work item ref {text!r}: expected {REF_GRAMMAR}")
        parts = m.group("path").split("/")
        if len(parts) == 2:
            host = DEFAULT_HOST
            owner, repo = parts
        elif len(parts) == 3:
            host, owner, repo = parts
        else:
            raise BadInput(f"invalid work item ref {text!r}: expected {REF_GRAMMAR}")
        return cls(owner=owner, repo=repo, number=int(m.group("number")), host=host.lower())

    @property
    def is_local(self) -> bool:
        """True for a local work item (``local:NAME``): no tracker, nothing written back."""
        return self.host == ""

    @property
    def full_name(self) -> str:
        """``OWNER/REPO``; ``local:NAME`` for a local item (no repository)."""
        if self.is_local:
            return f"{LOCAL_PREFIX}{self.repo}"
        return f"{self.owner}/{self.repo}"

    @property
    def repo_key(self) -> str:
        """``OWNER/REPO`` with the host in front when it is not github.com."""
        if self.host in (DEFAULT_HOST, ""):
            return self.full_name
        return f"{self.host}/{self.full_name}"

    def __str__(self) -> str:
        if self.is_local:
            return self.full_name
        return f"github:{self.repo_key}#{self.number}"

    @property
    def slug(self) -> str:
        if self.is_local:
            return _SLUG_UNSAFE.sub("-", f"local-{self.repo}")
        raw = f"github-{self.repo_key.replace('/', '-')}-{self.number}"
        return _SLUG_UNSAFE.sub("-", raw)

    @property
    def tmux_target(self) -> str:
        return tmux_safe(f"loop-{self.slug}")


def names_work_item(text: str) -> bool:
    """Whether TEXT is written as a work item ref (``…#N`` or ``local:NAME``), not as a session
    id or a standing session's name: what a command given either takes it for."""
    return "#" in text or text.strip().lower().startswith(LOCAL_PREFIX)


def tmux_safe(name: str) -> str:
    """Rewrite ``.`` and ``:`` to ``_`` the way tmux itself does for session names."""
    return name.replace(".", "_").replace(":", "_")


def validate_standing_name(name: str) -> str:
    """Return NAME when it is a valid standing session name; raise ``BadInput`` otherwise."""
    if not isinstance(name, str) or not STANDING_NAME_RE.match(name):
        raise BadInput(f"invalid standing session name {name!r}: {STANDING_GRAMMAR}")
    return name


def standing_target(name: str) -> str:
    return tmux_safe(f"loop-standing-{validate_standing_name(name)}")


STANDING_KEY = "standing:"
"""The prefix of a standing session's agent key (and of its Slack thread key): ``standing:NAME``;
a work-item session's agent key is its session id."""


def standing_key(name: str) -> str:
    """The agent key of standing session NAME (its prompt queue, mark, usage, hold, thread)."""
    return f"{STANDING_KEY}{name}"


def standing_of(key: str) -> str | None:
    """The standing session's name whose agent (or thread) key is KEY; None for any other key."""
    return key[len(STANDING_KEY) :] if key.startswith(STANDING_KEY) else None


def attach_command(key: str) -> str:
    """The command that attaches a person's terminal to agent KEY's pane (a standing session's,
    or a work item's session by its id), as the refusals that send them there name it."""
    name = standing_of(key)
    return f"the-loop sessions attach {key}" if name is None else f"the-loop standing attach {name}"


def is_loop_target(target: str) -> bool:
    """True when TARGET is a name the-loop could own (``^loop-[A-Za-z0-9._-]+$``)."""
    return bool(TARGET_RE.match(target))


def safe_session_id(value: object) -> str:
    """Return VALUE when it is safe to put in an argv as a session id; raise ``BadInput``.

    Guards every id read back from storage: it can never start with ``-`` and so never be
    taken for a flag.
    """
    if not isinstance(value, str) or not SESSION_ID_RE.match(value):
        raise BadInput(f"refusing unsafe session id {value!r}: expected {SESSION_ID_RE.pattern}")
    return value


def new_session_id() -> str:
    return str(uuid.uuid4())


def branch_name(ref: WorkItemRef) -> str:
    """The git branch a work item's worktree and its agent's pushes use."""
    return f"the-loop/{ref.slug}"
