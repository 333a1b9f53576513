"""``the-loop config validate|schema|show`` and ``the-loop init``."""

from __future__ import annotations

import os
import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from the_loop.cli import common
from the_loop.cli.base import command, group
from the_loop.errors import Conflict, StateError

if TYPE_CHECKING:
    from the_loop.config import Config

REDACTED: dict[str, Any] = {"redacted": True}
"""What a secret value is shown as (a structure, never a string that looks like a value)."""
_ENV_LINE = re.compile(r"^(\s*-?\s*)([A-Za-z]+Env): ([A-Za-z_][A-Za-z0-9_]*)$")


@group("config", help="Validate, inspect and explain the configuration.")
def app() -> None:
    pass


@app.command("validate")
@click.argument(
    "path",
    required=False,
    type=click.Path(path_type=Path),
    help="File to check (default: the resolved one).",
)
def validate(path: Path | None) -> None:
    """Check a config file and list every problem.

    Exits 2 listing each problem as `key.path: message`.
    """
    from the_loop.config import load_config  # lazy: start-up

    loaded = load_config(path or common.STATE.config_path)
    where = str(loaded.path) if loaded.path else "no config file (all defaults)"
    print(f"ok: {where} is valid")
    for warning in loaded.config.warnings():
        print(f"warning: {warning}")
    # lazy: only validate explains command templates; the other commands stay light
    from the_loop.harness.command import explain_config

    for line in explain_config(loaded.config):
        print(line)


@app.command("schema")
def schema() -> None:
    """Print the JSON Schema of the config file.

    It is generated from the config model.
    """
    from the_loop.config import config_schema  # lazy: start-up

    common.print_json(config_schema())


@app.command("show")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    help="table (YAML) or json",
)
def show(fmt: str) -> None:
    """Print the effective configuration, secrets redacted.

    JSON has camelCase keys and real values. `*Env` keys name environment variables: the YAML
    view notes whether each is set."""
    # lazy: start-up
    import yaml

    from the_loop.config import load_config

    loaded = load_config(common.STATE.config_path)
    data = redacted_dump(loaded.config)
    if fmt == "json":
        common.print_json(data)
        return
    source = str(loaded.path) if loaded.path else "defaults (no config file found)"
    print(f"# effective configuration from {source}")
    print(_note_env(yaml.safe_dump(data, sort_keys=False).rstrip()))


def redacted_dump(config: Config) -> dict[str, Any]:
    """CONFIG as plain data with camelCase keys and its real values, except that a harness
    ``env`` value whose name looks like a secret becomes ``{"redacted": true}``. ``*Env`` keys
    keep their value: the name of a variable, never its content."""
    from the_loop.config import SECRETISH  # lazy: start-up

    data = config.model_dump(mode="json", by_alias=True)
    data["stateDir"] = str(config.state_path)
    _redact(data, SECRETISH)
    return data


def _redact(node: Any, secretish: re.Pattern[str]) -> None:
    if isinstance(node, dict):
        for key, value in list(node.items()):
            if key == "env" and isinstance(value, dict):
                node[key] = {
                    k: (dict(REDACTED) if secretish.search(k) else v) for k, v in value.items()
                }
            else:
                _redact(value, secretish)
    elif isinstance(node, list):
        for item in node:
            _redact(item, secretish)


def _note_env(text: str) -> str:
    """YAML TEXT with ``# set`` or ``# unset`` after each ``*Env: NAME`` line."""
    lines = []
    for line in text.splitlines():
        match = _ENV_LINE.match(line)
        if match:
            line += "  # set" if os.environ.get(match.group(3)) else "  # unset"
        lines.append(line)
    return "\n".join(lines)


def starter_config() -> str:
    """The commented starter config that ``init`` writes."""
    return resources.files("the_loop.data").joinpath("starter-config.yaml").read_text("utf-8")


@command("init")
@click.argument(
    "path",
    required=False,
    type=click.Path(path_type=Path),
    default=Path("the-loop.yaml"),
    help="Where to write the starter config.",
)
def init(path: Path) -> None:
    """Write a commented starter config.

    Refuses to overwrite an existing file.
    """
    if path.exists():
        raise Conflict(f"{path} already exists; not overwriting it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as handle:
            handle.write(starter_config())
    except FileExistsError:
        raise Conflict(f"{path} already exists; not overwriting it") from None
    except OSError as exc:
        raise StateError(f"cannot write {path}: {exc.strerror}") from None
    print(f"wrote {path}; check it with: the-loop config validate {path}")
    _daemon_note(path)


def _daemon_note(path: Path) -> None:
    """Say how a running daemon started on another config (or none) comes to use PATH: it
    reloads only the file it started on."""
    # lazy: start-up
    from the_loop.instance import read_info

    info = read_info(common.ctx().state_dir)
    if info is None or info.config_path == str(path.absolute()):
        return
    was = info.config_path or "its built-in defaults (it found no config file)"
    print(
        f"note: the running daemon (pid {info.pid}) uses {was} and reloads only that; to run "
        f"it on {path}: `the-loop stop && the-loop --config {path} start` (or stop `make run` "
        "with Ctrl-C and run it again from this directory)"
    )
