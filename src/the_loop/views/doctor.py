"""Checks that everything the-loop needs is installed and usable; one typed report.

Each missing piece carries one line of install guidance per platform.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel

from the_loop.agent import egress
from the_loop.config import Config
from the_loop.harness import configured_binary, harness_names
from the_loop.instance import DaemonInfo, daemon_running, read_info
from the_loop.runner import TmuxRunner, sandbox

MIN_TMUX = (3, 2)

INSTALL_HINTS: dict[str, str] = {
    "tmux": "apt install tmux · brew install tmux · dnf install tmux",
    "git": "apt install git · brew install git · dnf install git",
    "claude": "npm install -g @anthropic-ai/claude-code",
    "codex": "npm install -g @openai/codex",
    "gemini": "npm install -g @google/gemini-cli",
    "cursor-agent": "see https://cursor.com/cli (the installer script)",
}


class CheckStatus(StrEnum):
    ok = "ok"
    missing = "missing"
    failed = "failed"
    warning = "warning"


class Check(BaseModel):
    name: str
    status: CheckStatus
    detail: str
    hint: str = ""
    required: bool = True


class DoctorReport(BaseModel):
    ok: bool
    checks: list[Check]


def run_doctor(
    config: Config, daemon_port_in_use_ok: bool | None = None, tmux: TmuxRunner | None = None
) -> DoctorReport:
    """Run every check against CONFIG; ``ok`` is false when anything required fails. The port
    the daemon of CONFIG's state dir serves is reported as in use by the-loop (its pid); another
    busy port is only a warning with DAEMON_PORT_IN_USE_OK (the daemon asking about itself).
    Accepted-but-risky settings (``Config.warnings``) are warnings. TMUX is the doorway asked
    for the version (default: one made from CONFIG)."""
    own = own_daemon(config.state_path)
    if daemon_port_in_use_ok is None:
        daemon_port_in_use_ok = False
    checks = [
        check_tmux(tmux or TmuxRunner.from_config(config)),
        check_binary("git", "git"),
        *check_harnesses(config),
        check_state_dir(config.state_path),
        check_port(config.server.host, config.server.port, daemon_port_in_use_ok, own),
    ]
    if config.github.enabled:
        checks.append(check_github_token(config.github.token_env))
    checks.append(check_sandbox(config))
    checks += [
        Check(name="config", status=CheckStatus.warning, detail=w, required=False)
        for w in config.warnings()
    ]
    good = (CheckStatus.ok, CheckStatus.warning)
    return DoctorReport(ok=all(c.status in good or not c.required for c in checks), checks=checks)


def check_sandbox(config: Config) -> Check:
    """How agents are confined here; a warning when they cannot be as configured, or cannot
    reach a loopback port they are allowed (``egress.unmirrored``)."""
    confined, why = sandbox.describe(config)
    unreachable = egress.unmirrored(config)
    status = CheckStatus.ok if confined and unreachable is None else CheckStatus.warning
    detail = why if unreachable is None else f"{why}; {unreachable}"
    return Check(name="sandbox", status=status, detail=detail, required=False)


def _version_tuple(text: str) -> tuple[int, int] | None:
    m = re.search(r"([0-9]+)\.([0-9]+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_tmux(tmux: TmuxRunner) -> Check:
    """TMUX's binary is on PATH and at least 3.2, as its ``version()`` answers."""
    path = shutil.which(tmux.binary)
    if path is None:
        return Check(
            name="tmux",
            status=CheckStatus.missing,
            detail="tmux not found on PATH",
            hint=INSTALL_HINTS["tmux"],
        )
    answer = tmux.version()
    if not answer.ok:
        return Check(
            name="tmux",
            status=CheckStatus.failed,
            detail=f"{path} -V failed: {answer.describe()}",
            hint=INSTALL_HINTS["tmux"],
        )
    out = answer.stdout.strip()
    version = _version_tuple(out)
    if version is not None and version < MIN_TMUX:
        return Check(
            name="tmux",
            status=CheckStatus.failed,
            detail=f"{out} is older than 3.2",
            hint=INSTALL_HINTS["tmux"],
        )
    return Check(name="tmux", status=CheckStatus.ok, detail=f"{out} ({path})")


def check_binary(name: str, binary: str, required: bool = True, label: str = "") -> Check:
    path = shutil.which(binary)
    title = label or name
    if path is None:
        hint = INSTALL_HINTS.get(Path(binary).name, f"install {binary} and put it on PATH")
        return Check(
            name=title,
            status=CheckStatus.missing,
            required=required,
            detail=f"{binary} not found on PATH",
            hint=hint,
        )
    return Check(name=title, status=CheckStatus.ok, detail=path, required=required)


def check_harnesses(config: Config) -> list[Check]:
    """One check per harness the config will run (the default, and each standing one)."""
    checks: list[Check] = []
    for name in harness_names(config):
        binary = configured_binary(config, name)
        required = name == config.routing.default_harness or any(
            s.harness == name for s in config.standing.sessions
        )
        checks.append(check_harness_binary(name, binary, config.harness(name).env, required))
        checks.append(check_permission_mode(name, config.harness(name).permission_mode))
        adapter, env = config.harness(name).adapter or name, config.harness(name).env
        login = check_login(name, adapter, env)
        if login is not None:
            checks.append(login)
        if adapter == "gemini":
            checks.append(check_gemini_sign_in(name, env))
    return checks


def check_gemini_sign_in(name: str, env: dict[str, str]) -> Check:
    """Whether Gemini has a sign-in chosen (``security.auth.selectedType`` in its
    ``settings.json``, carried into a confined agent's home): without one it asks how to sign
    in before anything else, even with a key set, and its agents are blocked (decision 0078)."""
    title = f"harness {name} sign-in"
    # lazy: the harness package is only needed by doctor's harness checks
    from the_loop.harness import harness_dir

    settings = harness_dir("", ".gemini", env) / "settings.json"
    try:
        data = json.loads(settings.read_text())
        auth = data.get("security", {}).get("auth", {}) if isinstance(data, dict) else {}
        chosen = auth.get("selectedType") if isinstance(auth, dict) else None
    except (OSError, ValueError, AttributeError):
        chosen = None
    if isinstance(chosen, str) and chosen:
        return Check(name=title, status=CheckStatus.ok, detail=f"{chosen} ({settings})")
    return Check(
        name=title,
        status=CheckStatus.warning,
        required=False,
        detail=f"no sign-in chosen in {settings}: Gemini asks how to sign in before anything "
        "else, and its agents are blocked",
        hint="run `gemini` once on this host and choose how to sign in (with a key set: "
        '"Use Gemini API Key")',
    )


_LOGINS: dict[str, tuple[tuple[str, ...], str, str, str]] = {
    # adapter: (key variables, config dir variable, default config dir, credentials file)
    "claude": (("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"), "CLAUDE_CONFIG_DIR", ".claude",
               ".credentials.json"),
    "codex": (("OPENAI_API_KEY", "CODEX_API_KEY"), "CODEX_HOME", ".codex", "auth.json"),
    "gemini": (("GEMINI_API_KEY", "GOOGLE_API_KEY"), "GEMINI_DIR", ".gemini",
               "oauth_creds.json"),
}  # fmt: skip


def check_login(name: str, adapter: str, env: dict[str, str]) -> Check | None:
    """Whether harness NAME (a built-in ADAPTER) has a key or a login to work with: a key in
    its ``env`` or the daemon's environment, or its credentials file; None for others."""
    known = _LOGINS.get(adapter)
    if known is None:
        return None
    keys, dir_var, default_dir, credentials = known
    title = f"harness {name} login"
    if adapter == "codex" and (own := _codex_provider(title, env)) is not None:
        return own
    given = next((k for k in keys if env.get(k) or os.environ.get(k)), None)
    if given is not None:
        return Check(name=title, status=CheckStatus.ok, detail=f"{given} is set", required=False)
    # lazy: the harness package is only needed by doctor's harness checks
    from the_loop.harness import harness_dir

    found = harness_dir(dir_var, default_dir, env) / credentials
    if found.is_file():
        return Check(
            name=title, status=CheckStatus.ok, detail=f"logged in ({found})", required=False
        )
    return Check(
        name=title,
        status=CheckStatus.warning,
        required=False,
        detail=f"no key ({' or '.join(keys)}) and no login ({found}): its agents will be blocked",
        hint=f"log in once with `{adapter}` on this host, or set {keys[0]} in "
        f"harnesses.{name}.env or the daemon's environment",
    )


def _codex_provider(title: str, env: dict[str, str]) -> Check | None:
    """The login check of a Codex whose ``config.toml`` chooses a model provider of its own
    (no OpenAI login needed: the key its ``env_key`` names, if any); None otherwise."""
    # lazy: the harness package is only needed by doctor's harness checks
    from the_loop.harness import own_settings

    found = own_settings.own_provider(env)
    if found is None:
        return None
    provider, key = found
    if key is None or env.get(key) or os.environ.get(key):
        given = f", {key} is set" if key else ""
        detail = f"model provider {provider} of its own config.toml{given}"
        return Check(name=title, status=CheckStatus.ok, detail=detail, required=False)
    return Check(
        name=title,
        status=CheckStatus.warning,
        required=False,
        detail=f"model provider {provider} reads its key from {key}, which is not set",
        hint=f"set {key} in the harness's env or the daemon's environment",
    )


def check_permission_mode(name: str, mode: str) -> Check:
    """Whether harness NAME asks before it runs tools (``permissionMode``)."""
    title = f"harness {name} permissions"
    if mode == "ask":
        return Check(name=title, status=CheckStatus.ok, detail="ask: it asks before tools")
    return Check(
        name=title,
        status=CheckStatus.warning,
        required=False,
        detail=f"{mode}: it runs tools without asking (harnesses.{name}.permissionMode)",
        hint=f"remove harnesses.{name}.permissionMode to have it ask",
    )


def check_harness_binary(name: str, binary: str, env: dict[str, str], required: bool) -> Check:
    """Where harness NAME's BINARY is found (PATH, then the project's node_modules/.bin)."""
    # lazy: the harness package is only needed by doctor's harness checks
    from the_loop.harness import locate

    found = locate(binary, env)
    title = f"harness {name}"
    if found is not None:
        return Check(name=title, status=CheckStatus.ok, detail=found.describe(), required=required)
    where = "" if "/" in binary else " on PATH or in the project's node_modules/.bin"
    return Check(
        name=title,
        status=CheckStatus.missing,
        required=required,
        detail=f"{binary} not found{where}",
        hint=INSTALL_HINTS.get(Path(binary).name, f"install {binary} and put it on PATH"),
    )


def check_state_dir(path: Path) -> Check:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if path.exists() and not path.is_dir():
        return Check(
            name="state dir", status=CheckStatus.failed, detail=f"{path} is not a directory"
        )
    if not os.access(probe, os.W_OK | os.X_OK):
        return Check(
            name="state dir",
            status=CheckStatus.failed,
            detail=f"{path} is not writable (checked {probe})",
            hint=f"make {probe} writable or set stateDir",
        )
    return Check(name="state dir", status=CheckStatus.ok, detail=str(path))


def own_daemon(state_dir: Path) -> DaemonInfo | None:
    """The daemon of STATE_DIR as it recorded itself, while it holds the lock; else None."""
    info = read_info(state_dir)
    return info if info is not None and daemon_running(state_dir) else None


def is_install_hint(hint: str) -> bool:
    """Whether HINT says what to install (else it says what to change)."""
    return hint in INSTALL_HINTS.values() or hint.startswith("install ")


def check_port(host: str, port: int, in_use_ok: bool, own: DaemonInfo | None = None) -> Check:
    """HOST:PORT can be bound, or is already served by the-loop's own daemon OWN."""
    if own is not None and (port in (0, own.port)) and own.host == host:
        return Check(
            name="port",
            status=CheckStatus.ok,
            detail=f"{host}:{own.port} in use by the-loop (pid {own.pid})",
        )
    if port == 0:
        return Check(name="port", status=CheckStatus.ok, detail="0 (a free port is picked)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            status = CheckStatus.warning if in_use_ok else CheckStatus.failed
            return Check(
                name="port",
                status=status,
                detail=f"{host}:{port} unavailable: {exc.strerror}",
                hint="stop what uses it or set server.port",
            )
    return Check(name="port", status=CheckStatus.ok, detail=f"{host}:{port} is free")


def check_github_token(token_env: str) -> Check:
    if os.environ.get(token_env):
        return Check(name="github token", status=CheckStatus.ok, detail=f"${token_env} is set")
    if shutil.which("gh"):
        return Check(
            name="github token",
            status=CheckStatus.ok,
            detail=f"${token_env} unset; `gh auth token` will be used",
        )
    return Check(
        name="github token",
        status=CheckStatus.missing,
        detail=f"${token_env} is unset and gh is not installed",
        hint=f"export {token_env}=<token> · or install gh and run gh auth login",
    )
