"""Generate the reference docs from the code: config schema, config reference, CLI reference.

``python -m the_loop.cli.docgen`` rewrites them; tests fail when a committed copy drifts.
"""

from __future__ import annotations

import json
import sys
import tempfile
import types
import typing
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from the_loop.cli.app import app
from the_loop.config import Config, LoadedConfig, config_schema
from the_loop.context import open_ctx
from the_loop.web.app import create_app

DOCS = Path(__file__).resolve().parents[3] / "docs"


def schema_json() -> str:
    return json.dumps(config_schema(), indent=2, sort_keys=True) + "\n"


def _type_name(annotation: Any) -> str:
    """A short readable name for a field type (``list[str]``, ``str | null``)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (types.UnionType, typing.Union):
        return " | ".join("null" if a is type(None) else _type_name(a) for a in args)
    if origin is typing.Literal:
        return " | ".join(json.dumps(a) for a in args)
    if origin is not None:
        return (
            f"{getattr(origin, '__name__', str(origin))}[{', '.join(_type_name(a) for a in args)}]"
        )
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "object"
    return getattr(annotation, "__name__", str(annotation)).replace("Path", "path")


def _default(field: FieldInfo) -> str:
    factory = field.default_factory
    value = factory() if factory is not None else field.default  # type: ignore[call-arg]
    if isinstance(value, BaseModel):
        return ""
    if field.is_required():
        return "(required)"
    if value is None:
        return "null"
    return json.dumps(value if not isinstance(value, Path) else str(value))


def _rows(model: type[BaseModel], prefix: str) -> list[tuple[str, str, str, str]]:
    rows: list[tuple[str, str, str, str]] = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        annotation = field.annotation
        nested = _nested_model(annotation)
        if nested is not None and not str(annotation).startswith(("list", "dict")):
            rows.append((key, "section", "", field.description or nested.__doc__ or ""))
            rows.extend(_rows(nested, f"{key}."))
            continue
        rows.append((key, _type_name(annotation), _default(field), field.description or ""))
        if nested is not None:
            item = "[]" if str(annotation).startswith("list") else ".<name>"
            rows.extend(_rows(nested, f"{key}{item}."))
    return rows


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        found = _nested_model(arg)
        if found is not None:
            return found
    return None


CONFIG_NOTES = [
    "**Problems.** Each problem is one line, `key.path: message (line N)`, at the line of its "
    "own key; an unknown key names the closest known one (`server.prot: unknown key; did you "
    "mean 'port'?`); a YAML syntax error names the line where the broken construct starts "
    "(the opening quote, the `[`).",
    "",
    "**`config show`** prints the effective config with its real values and camelCase keys; "
    "a harness `env` value whose name looks like a secret is shown as `{redacted: true}`. "
    "`*Env` keys show the variable's name, and the YAML view notes `# set` or `# unset`.",
    "",
    "**Reloads.** Editing the file while the daemon runs reloads it once per new content "
    "(`config.reloaded`, or `config.reload_failed` keeping the old config); `restartNeeded` "
    "lists the restart-only settings (`stateDir`, `server.host/port`, `tmux.socket`, `database`) "
    "that differ from what the daemon started on (`the-loop status` shows them as `restart: "
    "needed for …`, `/api/v1/health` as `config.restartNeeded`, until a restart), so reverting "
    "one clears it.",
    "",
    "**A broken file does not lock you out.** The daemon records the config it runs on. While "
    "the file is invalid, commands that read state or reach the daemon (`status`, `stop`, "
    "`events`, `sessions`, `standing`, `doctor`, …) use that record and warn on stderr; `start`, "
    "`serve`, `config validate` and `config show` refuse the file with exit 2 "
    "([decision 0017](decisions/0017-bad-config-fallback.md)).",
    "",
    "**Start-up.** Every command that reads the config validates the file again (nothing is "
    "cached). `sessions list`, `events`, `status` and `standing list` skip it while a daemon "
    "runs on exactly this file's bytes: they ask that daemon, which holds the validated config "
    "([decision 0065](decisions/0065-one-cli-on-click.md)).",
]


def configuration_md() -> str:
    lines = [
        "# Configuration reference",
        "",
        "<!-- generated by `make docs` (python -m the_loop.cli.docgen); do not edit by hand -->",
        "",
        "One YAML file with camelCase keys. Resolution order: `--config PATH`, then "
        "`$THE_LOOP_CONFIG`, then `./the-loop.yaml`, then `~/.config/the-loop/config.yaml`; "
        "none found means all defaults. Keys ending in `Env` name environment variables that "
        "hold secrets. `the-loop config validate` lists every problem as `key.path: message`; "
        "`the-loop config schema` prints the JSON Schema (a copy is in "
        "[config.schema.json](config.schema.json)).",
        "",
        *CONFIG_NOTES,
        "",
        "| key | type | default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for key, kind, default, text in _rows(Config, ""):
        cell = text.replace("|", "\\|").replace("\n", " ").strip()
        kind_cell = kind.replace("|", "\\|")
        default_cell = f"`{default}`" if default else ""
        lines.append(f"| `{key}` | {kind_cell} | {default_cell} | {cell} |")
    return "\n".join(lines) + "\n"


def cli_md() -> str:
    root = app
    lines = [
        "# CLI reference",
        "",
        "<!-- generated by `make docs` (python -m the_loop.cli.docgen); do not edit by hand -->",
        "",
        "Tables are for people (times as ages: `3m ago`); `--format json` is for scripts and",
        "prints exactly what the REST API answers for the same object: camelCase keys, ISO 8601",
        "UTC times (`2026-12-01T12:34:56.789Z`); see",
        "[the output contract](api.md#the-output-contract).",
        "",
        "`sessions list`, `events`, `status` and `standing list` ask the running daemon (which",
        "holds the validated config) when it runs on exactly the config file the command reads,",
        "and read the state database themselves otherwise; they print the same either way",
        "([decision 0065](decisions/0065-one-cli-on-click.md)). Shell completion: see",
        "`the-loop completion`.",
        "",
    ]

    def walk(cmd: click.Command, path: list[str], parent: click.Context | None = None) -> None:
        settings = cmd.context_settings if parent is None else {}  # children inherit (-h)
        ctx = click.Context(
            cmd,
            info_name=path[-1],
            parent=parent,
            terminal_width=100,
            max_content_width=100,
            **settings,
        )
        lines.extend(
            [
                f"{'#' * min(len(path) + 1, 4)} `{' '.join(path)}`",
                "",
                "```text",
                cmd.get_help(ctx).rstrip(),
                "```",
                "",
            ]
        )
        if isinstance(cmd, click.Group):
            for name in sorted(cmd.list_commands(ctx)):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, [*path, name], ctx)

    walk(root, ["the-loop"])
    return "\n".join(lines).rstrip() + "\n"


def openapi_json() -> str:
    """The OpenAPI document the daemon serves, generated by the framework."""
    with tempfile.TemporaryDirectory() as tmp:
        config = Config.model_validate({"stateDir": tmp, "github": {"enabled": True}})
        ctx = open_ctx(loaded=LoadedConfig(config, None))
        document = create_app(ctx).openapi()
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


GENERATED = {
    "config.schema.json": schema_json,
    "configuration.md": configuration_md,
    "cli.md": cli_md,
    "openapi.json": openapi_json,
}


def main() -> int:
    for name, render in GENERATED.items():
        (DOCS / name).write_text(render(), encoding="utf-8")
        print(f"wrote docs/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
