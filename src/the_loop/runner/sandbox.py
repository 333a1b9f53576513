"""The sandbox an agent's harness runs in (SPEC §18): the only code that builds ``bwrap`` argv.

``wrap`` turns a harness argv into ``bwrap [mounts] -- argv`` (docs/decisions/0053). The
layout (bubblewrap applies its options in order, later mounts over earlier ones; ``mounts``
orders them shallowest path first, so the deepest mount over a path decides, and what is
protected stays hidden inside the agent's tree too: docs/decisions/0110):

1. the whole system read-only (``--ro-bind / /``), a fresh ``/dev``, a ``/proc`` of the
   sandbox's own PID namespace (the daemon's ``/proc/<pid>/environ`` is not there);
2. hidden behind empty tmpfs: ``/tmp`` and ``/var/tmp``, ``/run`` (database and agent
   sockets), the daemon user's ``$HOME``; and, wherever they are, even inside the agent's
   tree: the state dir, the workspace root and the tmux socket's directory
   (``$TMUX_TMPDIR``, else ``/tmp``, ``/tmux-<uid>``); the config file is replaced by an
   empty file;
3. bound back read-only: the interpreter the hook runs with, the-loop's package, the harness
   binary (resolved, with its package and its ``#!`` interpreter) wherever they live, and
   ``sandbox.readOnlyPaths``; bound read-write: the agent's tree (worktree or a standing
   session's cwd, plus the clone's git dir a worktree needs), its own home and its own spool,
   and ``sandbox.writablePaths``; the hook channel's directory read-only (its socket), with
   the spool of every other agent hidden;
4. an unprivileged user inside (uid 1000, or the daemon's own uid when that is not root), its
   own PID, IPC, UTS (and with ``network`` not ``open``) network namespaces; the sandbox dies
   with its pane.

Secrets never travel in argv (it is world-readable): the environment reaches the sandbox
through tmux as before; ``env -u`` drops what a confined agent must not hold before bwrap
starts (its pid 1 inside keeps the environment it was started with).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from the_loop.runner import limits

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from the_loop.config import Config

BWRAP = "bwrap"
INSIDE_UID = 1000
HIDDEN_ENV = (
    "TMUX",
    "TMUX_PANE",
    "TMUX_TMPDIR",
    "PGPASSWORD",
    "PGPASSFILE",
    "PGSERVICEFILE",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "SSH_AUTH_SOCK",
    "THE_LOOP_CONFIG",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
)
"""Variables no confined agent keeps (besides the-loop's own secrets and the GitHub token)."""
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt")


@dataclass(frozen=True, slots=True)
class Mode:
    """The sandbox mode in force and why."""

    mode: str
    why: str
    warning: str | None = None


@functools.lru_cache(maxsize=4)
def bwrap_works(binary: str = BWRAP) -> tuple[bool, str]:
    """Whether BINARY can make a sandbox here (user and PID namespaces), and why not."""
    path = shutil.which(binary)
    if path is None:
        return False, f"{binary} is not installed (Debian: apt-get install bubblewrap)"
    argv = [path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-user"]
    argv += ["--unshare-pid", "--unshare-net", "--uid", str(INSIDE_UID), "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{path} did not run: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return False, f"{path} cannot make a sandbox here: {reason[-1] if reason else 'failed'}"
    return True, f"{path} makes user, PID and network namespaces here"


def mode_of(config: Config) -> Mode:
    """The mode CONFIG puts agents in: as configured, else bwrap where it works."""
    configured = config.sandbox.mode
    if configured == "none":
        return Mode("none", "sandbox.mode is none: agents run as the-loop's own user")
    works, why = bwrap_works()
    if configured == "bwrap":
        return Mode("bwrap", f"sandbox.mode is bwrap; {why}")
    if works:
        return Mode("bwrap", f"sandbox.mode is unset and {why}")
    warning = f"agents run unconfined (sandbox.mode none): {why}"
    return Mode("none", f"sandbox.mode is unset and {why}", warning)


@dataclass(slots=True)
class Layout:
    """What one sandbox holds; ``wrap`` turns it into bwrap argv."""

    tree: Path
    """The agent's working tree (read-write), also its current directory."""
    home: Path
    hidden: list[Path] = field(default_factory=list)
    """Hidden behind an empty tmpfs, unless the tree (or another bind) is that very path."""
    protected: list[Path] = field(default_factory=list)
    """Hidden behind an empty tmpfs wherever they are, inside the tree too (``mounts``)."""
    masked_files: list[Path] = field(default_factory=list)
    read_only: list[Path] = field(default_factory=list)
    writable: list[Path] = field(default_factory=list)
    channels: list[Path] = field(default_factory=list)
    """The hook channel's and the egress proxy's directories (bound read-only: sockets)."""
    spools: Path | None = None
    """The directory of every agent's spool, hidden but for ``spool``."""
    spool: Path | None = None
    network: str = "open"
    unset_env: list[str] = field(default_factory=list)
    set_env: dict[str, str] = field(default_factory=dict)
    """Plain settings for inside (never a secret: argv is world-readable)."""


def layout_for(
    config: Config,
    *,
    state_dir: Path,
    config_file: Path | None,
    tree: Path,
    home: Path,
    argv: Sequence[str],
    env: Mapping[str, str],
    withheld: Iterable[str] = (),
    programs: Iterable[str] = (),
) -> Layout:
    """The layout of an agent of CONFIG working in TREE with HOME, running ARGV with ENV;
    PROGRAMS (the other agent CLIs installed here) are read-only to it too."""
    settings = config.sandbox
    hidden = [Path("/tmp"), Path("/var/tmp"), Path("/run")]
    daemon_home = os.environ.get("HOME")
    if daemon_home and daemon_home != "/":
        hidden.append(Path(daemon_home))
    tmux_dir = os.environ.get("TMUX_TMPDIR")
    if tmux_dir:
        hidden.append(Path(tmux_dir))
    tmux_sockets = Path(tmux_dir or "/tmp") / f"tmux-{os.getuid()}"
    protected = [state_dir, config.workspace_root, tmux_sockets]
    git_read_only, git_writable = git_dirs(tree)
    read_only = [*program_paths(argv, env), *interpreter_paths(), *settings.read_only_paths]
    read_only += [path for program in programs for path in program_paths([program], env)]
    read_only += git_read_only
    writable = [*git_writable, *settings.writable_paths]
    unset = [*HIDDEN_ENV, config.github.token_env, *withheld]
    return Layout(
        tree=tree,
        home=home,
        hidden=hidden,
        protected=protected,
        masked_files=[config_file] if config_file is not None else [],
        read_only=read_only,
        writable=writable,
        network=settings.network,
        unset_env=sorted(set(unset)),
    )


def wrap(layout: Layout, argv: Sequence[str], binary: str = BWRAP) -> list[str]:
    """``bwrap … -- ARGV``: ARGV confined to LAYOUT."""
    out = [shutil.which(binary) or binary, "--die-with-parent"]
    out += ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    out += ["--unshare-cgroup-try", "--hostname", "the-loop-agent"]
    if layout.network != "open":
        out.append("--unshare-net")
    uid = os.getuid() or INSIDE_UID
    gid = os.getgid() or INSIDE_UID
    out += ["--uid", str(uid), "--gid", str(gid)]
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for mount in mounts(layout):
        out += mount.argv()
    settings = {**layout.set_env, "HOME": str(layout.home), "TMPDIR": "/tmp"}
    for name, value in settings.items():
        out += ["--setenv", name, value]
    out += ["--chdir", str(layout.tree), "--", *argv]
    return without_env(layout.unset_env, out)


@dataclass(frozen=True, slots=True)
class Mount:
    """One of a sandbox's mounts over the read-only system: ``tmpfs`` (hidden), ``ro`` or
    ``rw`` (the host's path bound there), ``null`` (a file replaced by an empty one)."""

    path: Path
    kind: str
    rank: int
    """The order among mounts of one path: a later one is what shows."""

    def argv(self) -> list[str]:
        where = str(self.path)
        if self.kind == "tmpfs":
            return ["--tmpfs", where]
        if self.kind == "null":
            return ["--ro-bind", "/dev/null", where]
        return ["--ro-bind" if self.kind == "ro" else "--bind", where, where]


_HIDE, _READ, _WRITE, _PROTECT, _MASK = range(5)


def mounts(layout: Layout) -> list[Mount]:
    """LAYOUT's mounts, shallowest path first (bubblewrap applies them in order, a later one
    over an earlier one), so that the deepest mount over a path decides what shows there,
    whatever the agent's tree is: a tree that holds the state dir (a standing session working
    in the operator's home, which holds the default state dir) still shows none of it, nor of
    the config file or the tmux socket's directory, while its own home, spool and sockets
    inside the state dir do show. At one path, what is hidden for the-loop's sake
    (``protected``) wins over a bind, and a bind over what is hidden for tidiness (``hidden``:
    ``/tmp``, the daemon's home)."""
    plan = [Mount(p, "tmpfs", _HIDE) for p in _outermost(layout.hidden) if _hideable(p)]
    if "/run" in (str(p) for p in layout.hidden):
        for keep in ("/run/systemd/resolve", "/run/resolvconf"):  # /etc/resolv.conf's target
            if os.path.isdir(keep):
                plan.append(Mount(Path(keep), "ro", _READ))
    plan += [Mount(p, "ro", _READ) for p in layout.channels if p.is_dir()]
    bound = [layout.tree, layout.home, *layout.writable]
    bound += [layout.spool] if layout.spool is not None else []
    plan += [Mount(p, "rw", _WRITE) for p in bound if p.exists()]
    for path in _outermost(layout.read_only):  # where the system's read-only view is not
        if path.exists() and _shown(path, plan) != "ro":
            plan.append(Mount(path, "ro", _READ))
    plan += [
        Mount(p, "tmpfs", _PROTECT)
        for p in layout.protected
        if _hideable(p) and _shown(p, plan) != "tmpfs"  # not hidden already
    ]
    if layout.spools is not None and layout.spools.is_dir():
        plan.append(Mount(layout.spools, "tmpfs", _PROTECT))
    for path in layout.masked_files:
        if path.is_file() and _shown(path, plan) in ("ro", "rw"):
            plan.append(Mount(path, "null", _MASK))
    return sorted(plan, key=_applied)


def _applied(mount: Mount) -> tuple[int, int]:
    """Where MOUNT comes in bubblewrap's order: by its path's depth, then its rank."""
    return len(mount.path.parts), mount.rank


def _hideable(path: Path) -> bool:
    return path.is_dir() and not _is_system(path)


def _shown(path: Path, plan: Sequence[Mount]) -> str:
    """What PATH shows under PLAN: the kind of the deepest mount over it (``ro``: the system
    bound read-only at ``/``)."""
    over = [m for m in plan if path.is_relative_to(m.path)]
    if not over:
        return "ro"
    return max(over, key=_applied).kind


def without_env(names: Iterable[str], argv: Sequence[str]) -> list[str]:
    """ARGV run by ``env -u NAME…``: the variables are gone before bwrap starts. (bwrap's own
    ``--unsetenv`` is not enough: its init process, pid 1 inside the sandbox, keeps the
    environment it was started with, readable at ``/proc/1/environ``.) Names only in argv."""
    out = [shutil.which("env") or "/usr/bin/env"]
    for name in sorted(set(names)):
        out += ["-u", name]
    return [*out, *argv]


def forwarded(argv: Sequence[str], socket: Path, ports: dict[int, str]) -> list[str]:
    """ARGV behind the in-sandbox forwarder of PORTS (port: ``proxy`` or ``port:N``) to the
    egress proxy at SOCKET (``sandbox_forward``)."""
    program = str(Path(__file__).with_name("sandbox_forward.py"))
    specs = [f"{port}={mode}" for port, mode in ports.items()]
    return [sys.executable, "-I", "-S", program, str(socket), *specs, "--", *argv]


def program_paths(argv: Sequence[str], env: Mapping[str, str]) -> list[Path]:
    """What running ARGV needs bound: its program (as found on PATH and resolved), the
    package it belongs to (the enclosing ``node_modules`` or ``lib``), and its ``#!``
    interpreter's, wherever they live."""
    if not argv:
        return []
    search = env.get("PATH") or os.environ.get("PATH", os.defpath)
    found = shutil.which(argv[0], path=search)
    if found is None:
        return []
    out = [Path(found).parent]
    real = Path(found).resolve()
    out.append(_package_of(real))
    interpreter = _shebang(real)
    if interpreter is not None:
        located = shutil.which(interpreter, path=search)
        if located is not None:
            out += [Path(located).parent, _package_of(Path(located).resolve())]
    return out


def interpreter_paths() -> list[Path]:
    """This Python (the hook runs with it) and the-loop's package, wherever they live."""
    package_root = Path(__file__).resolve().parents[2]
    base = Path(sys.base_prefix).resolve()
    return [Path(sys.prefix), base, package_root, Path(sys.executable).parent]


def git_dirs(tree: Path) -> tuple[list[Path], list[Path]]:
    """What a worktree at TREE needs of the git directory its ``.git`` file names, when that
    is outside TREE (docs/decisions/0062): ``(read-only, writable)``. The clone's common git
    dir is read-only (its ``config`` and ``hooks`` run as the daemon's user in other git
    commands, its other refs and worktrees are other sessions'); writable are the objects
    (content-addressed: new ones are added), the worktree's own admin dir (``HEAD``, index,
    its reflog) and the directories of refs and reflogs that hold its branch. Nothing unless
    the admin dir names TREE back (the ``.git`` file is the agent's to rewrite)."""
    marker = tree / ".git"
    if not marker.is_file():
        return [], []
    try:
        text = marker.read_text(encoding="utf-8").strip()
    except OSError:
        return [], []
    if not text.startswith("gitdir:"):
        return [], []
    admin = Path(text.removeprefix("gitdir:").strip())
    if not admin.is_absolute():
        admin = (tree / admin).resolve()
    try:  # git's admin dir names its worktree back; a .git file the agent rewrote does not
        back = Path((admin / "gitdir").read_text(encoding="utf-8").strip())
    except OSError:
        return [], []
    if admin.parent.name != "worktrees" or back.resolve() != (tree / ".git").resolve():
        return [], []
    common = admin.parent.parent
    if common.is_relative_to(tree):
        return [], []
    writable = [common / "objects", admin]
    try:
        head = (admin / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        head = ""
    if head.startswith("ref: refs/heads/"):
        folder = Path(head.removeprefix("ref: ")).parent
        writable += [common / folder, common / "logs" / folder]
    return [common], [path for path in writable if path.is_dir()]


def _package_of(path: Path) -> Path:
    parts = path.parts
    for marker in ("node_modules", "lib"):
        if marker in parts:
            index = len(parts) - 1 - parts[::-1].index(marker)
            return Path(*parts[: index + 1])
    return path.parent


def _shebang(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            head = handle.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        rest = [w for w in words[1:] if not w.startswith("-")]
        return rest[0] if rest else None
    return words[0]


def _is_system(path: Path) -> bool:
    text = str(path)
    return text == "/" or any(text == s or text.startswith(s + "/") for s in _SYSTEM)


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """PATHS made absolute, without duplicates and without those inside another."""
    unique = sorted({Path(os.path.abspath(p)) for p in paths}, key=lambda p: len(p.parts))
    out: list[Path] = []
    for path in unique:
        if not any(path.is_relative_to(kept) for kept in out):
            out.append(path)
    return out


def describe(config: Config) -> tuple[bool, str]:
    """What ``doctor`` says: whether the configured mode can be had, the mode, why, the
    network policy and the extra paths."""
    mode = mode_of(config)
    settings = config.sandbox
    detail = f"{mode.mode} ({mode.why})"
    if mode.mode == "bwrap":
        detail += f"; network {settings.network}"
        extra = [f"ro {p}" for p in settings.read_only_paths]
        extra += [f"rw {p}" for p in settings.writable_paths]
        if extra:
            detail += "; extra paths: " + ", ".join(extra)
        for said in limits.describe(settings.memory_mb, settings.pids):
            detail += f"; {said}"
    elif settings.memory_mb is not None or settings.pids is not None:
        detail += "; memoryMb/pids not enforced: they apply to confined agents only"
    ok = mode.warning is None and (mode.mode == "none" or bwrap_works()[0])
    return ok, detail if mode.warning is None else f"{detail}: {mode.warning}"
