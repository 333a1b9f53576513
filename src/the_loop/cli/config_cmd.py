"""``the-loop config validate|schema|show`` and ``the-loop init``."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import typer

from the_loop.cli import common
from the_loop.config import config_schema, load_config, redacted_dump
from the_loop.errors import Conflict, StateError

app = typer.Typer(help="Validate, inspect and explain the configuration.", no_args_is_help=True)


@app.command("validate")
def validate(
    path: Path | None = typer.Argument(None, help="File to check (default: the resolved one)."),
) -> None:
    """Check a config file; exit 2 listing every problem as `key.path: message`."""
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
    """Print the JSON Schema of the config file (generated from the model)."""
    common.print_json(config_schema())


@app.command("show")
def show(
    fmt: common.Format = typer.Option(common.Format.table, "--format", help="table (YAML) or json"),
) -> None:
    """Print the effective configuration, secrets redacted."""
    # lazy: start-up
    import yaml

    loaded = common.loaded_config()
    data = redacted_dump(loaded.config)
    if fmt is common.Format.json:
        common.print_json(data)
        return
    source = str(loaded.path) if loaded.path else "defaults (no config file found)"
    print(f"# effective configuration from {source}")
    print(yaml.safe_dump(json.loads(json.dumps(data)), sort_keys=False).rstrip())


def starter_config() -> str:
    """The commented starter config that ``init`` writes."""
    return resources.files("the_loop.data").joinpath("starter-config.yaml").read_text("utf-8")


def init(
    path: Path = typer.Argument(Path("the-loop.yaml"), help="Where to write the starter config."),
) -> None:
    """Write a commented starter config; refuses to overwrite an existing file."""
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
