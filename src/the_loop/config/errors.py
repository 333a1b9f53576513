"""How an invalid config file is explained: one ``key.path: message (line N)`` per problem.

Pydantic reports where in the data a problem is (its ``loc``); the YAML node tree knows on
which line each key and item of the file starts, so every problem points at its own line. A
validator that checks several fields at once raises ``AtPath`` to name the field it blames.
An unknown key gets the closest known key of the same section as a suggestion. The YAML
parser's own errors name the line where the broken construct starts (an unterminated quote,
a flow collection, a key without ``:``), and where the parser gave up when that differs.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    import yaml
    from pydantic import ValidationError


class AtPath(ValueError):
    """A validator's error about the field at LOC (relative to the model that raised it)."""

    def __init__(self, loc: Sequence[str | int], message: str) -> None:
        super().__init__(message)
        self.loc = tuple(loc)


def problems_word(count: int) -> str:
    """``1 problem`` / ``3 problems``."""
    return f"{count} problem" if count == 1 else f"{count} problems"


def validation_problems(
    exc: ValidationError,
    root: yaml.Node | None,
    model: type[BaseModel] | None = None,
    data: Any = None,
) -> list[str]:
    """Every problem of EXC once, in the file's order where lines are known.

    With DATA (what was validated), location parts that are not keys or indexes of the data
    (the member names pydantic adds for each branch of a union) are dropped, and the errors
    left at one location are one problem: a value that fits no branch of a union is one
    problem, not one per branch."""
    by_path: dict[str, list[str]] = {}
    lines: dict[str, int] = {}
    for err in exc.errors():
        loc = _data_loc(err["loc"], data) if data is not None else None
        path, message, line = _parts(err, root, model, loc)
        messages = by_path.setdefault(path, [])
        if message not in messages:
            messages.append(message)
        lines.setdefault(path, line or 0)
    out = []
    for path in sorted(by_path, key=lambda p: lines[p]):
        where = f" (line {lines[path]})" if lines[path] else ""
        out.append(f"{path}: {'; or '.join(by_path[path])}{where}")
    return out


def _data_loc(loc: Sequence[Any], data: Any) -> list[Any]:
    kept: list[Any] = []
    node = data
    for part in loc:
        in_dict = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if in_dict or in_list:
            kept.append(part)
            node = node[part]
    return kept


def _parts(
    err: Any, root: yaml.Node | None, model: type[BaseModel] | None, loc: list[Any] | None
) -> tuple[str, str, int | None]:
    if loc is None:
        loc = [part for part in err["loc"] if not (isinstance(part, str) and "[" in part)]
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, AtPath):
        loc = [*loc, *cause.loc]
    message = (
        str(err["msg"]).removeprefix("Value error, ").replace(" for <class 'pathlib.Path'>", "")
    )
    if err["type"] == "extra_forbidden":
        message = "unknown key"
        suggestion = _did_you_mean(model, loc)
        if suggestion:
            message += f"; did you mean {suggestion!r}?"
    return loc_to_path(loc) or "(root)", message, line_of(root, loc)


def loc_to_path(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def line_of(node: yaml.Node | None, loc: Sequence[Any]) -> int | None:
    """The 1-based line of the YAML node at LOC, as far down as the file goes."""
    if node is None:
        return None
    line: int = node.start_mark.line + 1
    for part in loc:
        children = getattr(node, "value", None)
        if isinstance(part, str) and isinstance(children, list) and _is_mapping(node):
            pair = next((kv for kv in children if getattr(kv[0], "value", None) == part), None)
            if pair is None:
                return line
            line = pair[0].start_mark.line + 1
            node = pair[1]
        elif isinstance(part, int) and isinstance(children, list) and not _is_mapping(node):
            if part >= len(children):
                return line
            node = children[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _is_mapping(node: Any) -> bool:
    return type(node).__name__ == "MappingNode"


def yaml_problem(exc: Exception) -> str:
    """A YAML parser error as one line naming where the broken construct starts."""
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    problem_mark = getattr(exc, "problem_mark", None)
    context_mark = getattr(exc, "context_mark", None)
    stop = problem_mark.line + 1 if problem_mark is not None else None
    begin = context_mark.line + 1 if context_mark is not None else None
    # A construct with a start (a quoted scalar, a key still waiting for ':', a flow
    # collection) is broken where it starts; a block mapping or sequence is broken where the
    # parser met the line that does not fit (the enclosing block may start on line 1).
    starts_there = begin is not None and (
        type(exc).__name__ == "ScannerError" or "flow" in (context or "")
    )
    if starts_there and begin is not None:
        text = f"{context}: {problem}" if context else problem
        later = f"; the parser stopped at line {stop}" if stop and stop != begin else ""
        return f"(yaml): {text} (line {begin}{later})"
    where = f" (line {stop})" if stop else ""
    inside = f", {context} that starts on line {begin}" if context and begin else ""
    return f"(yaml): {problem}{where}{inside}"


def _did_you_mean(model: type[BaseModel] | None, loc: Sequence[Any]) -> str | None:
    """The known key closest to the unknown last part of LOC, in the section it sits in."""
    if model is None or not loc or not isinstance(loc[-1], str):
        return None
    section = _model_at(model, loc[:-1])
    if section is None:
        return None
    names = [field.alias or name for name, field in section.model_fields.items()]
    wanted = loc[-1].lower().replace("_", "")
    same = [n for n in names if n.lower() == wanted]
    if same:
        return same[0]
    import difflib  # lazy: start-up (only an unknown key needs it)

    close = difflib.get_close_matches(loc[-1], names, n=1, cutoff=0.6)
    return close[0] if close else None


def _model_at(model: type[BaseModel], loc: Sequence[Any]) -> type[BaseModel] | None:
    """The config model class that the data at LOC is validated by (None if not a model)."""
    current: Any = model
    for part in loc:
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = next((f for n, f in current.model_fields.items() if part in (n, f.alias)), None)
            if field is None:
                return None
            current = _unwrap(field.annotation)
        else:
            origin = typing.get_origin(current)
            args = typing.get_args(current)
            if origin is dict and len(args) == 2:
                current = _unwrap(args[1])
            elif origin is list and args:
                current = _unwrap(args[0])
            else:
                return None
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    """``X | None`` and ``Annotated[X, ...]`` as X."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            options = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(options) != 1:
                return annotation
            annotation = options[0]
        else:
            return annotation
