"""The generic ``command`` adapter: argv templates from the config.

``interactive``, ``resume`` and ``headless`` are argv lists whose elements may contain the
placeholders of ``PLACEHOLDERS``. Substitution is one pass per element (a prompt that itself
contains ``{session_id}`` is left alone); an element holding ``{prompt}`` or ``{prompt_file}``
is left out when the launch has no prompt. Interactive launches never have one: the tmux runner
pastes every prompt, the first included, once the agent takes input. A headless template without
either prompt placeholder gets the prompt on its standard input (``Launch.prompt_in_argv`` is
false). ``args`` are inserted right after the program. Headless resumes reuse the ``headless``
template. The-loop mints the session id, so ``{session_id}`` is the same on spawn and resume.
Templates name the program themselves, so put ``--`` before ``{prompt}`` when the program
supports it: a prompt can start with ``-``. ``explain`` says all this about one configured
harness (``config validate`` prints it).
"""

from __future__ import annotations

import re
from itertools import pairwise
from typing import TYPE_CHECKING

from the_loop.config import HarnessConfig
from the_loop.errors import BadInput
from the_loop.harness.base import HarnessAdapter, LaunchKind, LaunchSpec, register_adapter

if TYPE_CHECKING:
    from the_loop.config import Config

_PLACEHOLDER = re.compile(r"\{(prompt|session_id|prompt_file)\}")
_PROMPT_PLACEHOLDERS = ("{prompt}", "{prompt_file}")

PLACEHOLDERS: dict[str, str] = {
    "{session_id}": "the conversation id the-loop mints; the same on spawn and on resume",
    "{prompt}": (
        "headless: the prompt of the delivery, as one argument; interactive and resume: left "
        "out (the prompt is pasted once the agent takes input)"
    ),
    "{prompt_file}": (
        "headless: a private file (mode 0600) holding the prompt; interactive and resume: "
        "left out (the prompt is pasted)"
    ),
}
"""Every placeholder a ``command`` template may use, and what the-loop puts there."""


class CommandAdapter(HarnessAdapter):
    """A custom command-line agent described by argv templates."""

    chooses_session_id = True

    def __init__(self, harness: str, config: HarnessConfig | None = None) -> None:
        super().__init__(harness, config)
        self.supports_interactive = bool(self.config.interactive)
        self.supports_headless = bool(self.config.headless)

    @property
    def wants_prompt_file(self) -> bool:
        templates = (self.config.interactive, self.config.resume, self.config.headless)
        return any("{prompt_file}" in item for t in templates if t for item in t)

    def _template(self, kind: LaunchKind) -> list[str]:
        if kind is LaunchKind.INTERACTIVE:
            template = self.config.interactive
        elif kind is LaunchKind.RESUME:
            template = self.config.resume
        else:
            template = self.config.headless
        if not template:
            raise BadInput(
                f"harness {self.harness!r} has no {kind.value} argv template "
                f"(harnesses.{self.harness}.{_config_key(kind)})"
            )
        return list(template)

    def _places_prompt(self, kind: LaunchKind) -> bool:
        return any(_holds_prompt(item) for item in self._template(kind))

    def _argv(
        self, kind: LaunchKind, session_id: str | None, prompt: str | None, spec: LaunchSpec
    ) -> list[str]:
        template = self._template(kind)
        values = {
            "prompt": prompt,
            "session_id": session_id,
            "prompt_file": str(spec.prompt_file) if spec.prompt_file is not None else None,
        }
        argv = [template[0], *self.args]
        for element in template[1:]:
            if prompt is None and _holds_prompt(element):
                continue
            argv.append(_PLACEHOLDER.sub(lambda m: self._value(values, m.group(1)), element))
        return argv

    def _value(self, values: dict[str, str | None], name: str) -> str:
        value = values[name]
        if value is None:
            raise BadInput(
                f"harness {self.harness!r}: the template uses {{{name}}} but none was given"
            )
        return value


def _holds_prompt(element: str) -> bool:
    return any(p in element for p in _PROMPT_PLACEHOLDERS)


def explain_config(config: Config) -> list[str]:
    """``explain`` for every ``command`` harness of CONFIG, after one line per placeholder
    (nothing when CONFIG has no ``command`` harness)."""
    lines: list[str] = []
    for name, harness in config.harnesses.items():
        if (harness.adapter or name) == "command":
            lines += explain(name, harness)
    if not lines:
        return []
    legend = [f"placeholder {key}: {what}" for key, what in PLACEHOLDERS.items()]
    return [*legend, *lines]


def explain(harness: str, config: HarnessConfig) -> list[str]:
    """What the-loop puts in each template of ``command`` harness HARNESS, one line each, and
    a ``warning:`` line for an option left without the value an interactive launch leaves out.
    """
    lines: list[str] = []
    templates = {
        "interactive": config.interactive,
        "resume": config.resume,
        "headless": config.headless,
    }
    for key, template in templates.items():
        if not template:
            continue
        where = f"harnesses.{harness}.{key}"
        used = [p for p in PLACEHOLDERS if any(p in item for item in template[1:])]
        ids = "{session_id} is the id the-loop minted" if "{session_id}" in used else ""
        if key == "headless":
            if any(_holds_prompt(item) for item in template[1:]):
                how = "the prompt goes into " + " and ".join(
                    p for p in _PROMPT_PLACEHOLDERS if p in used
                )
            else:
                how = "no {prompt} or {prompt_file}: the prompt is written to its standard input"
        else:
            how = "every prompt, the first one included, is pasted once the agent takes input"
            if any(p in used for p in _PROMPT_PLACEHOLDERS):
                how += "; the elements holding {prompt} or {prompt_file} are left out"
        lines.append(f"{where}: " + "; ".join(part for part in (ids, how) if part))
        if key != "headless":
            lines += _dangling_options(where, template)
    return lines


def _dangling_options(where: str, template: list[str]) -> list[str]:
    out: list[str] = []
    for before, element in pairwise(template[1:]):
        if element in _PROMPT_PLACEHOLDERS and before.startswith("-") and before != "--":
            out.append(
                f"warning: {where}: {before!r} comes before {element}, which an interactive "
                f"launch leaves out, so {before!r} is passed without its value; remove both"
            )
    return out


def _config_key(kind: LaunchKind) -> str:
    return {"resume": "resume", "interactive": "interactive"}.get(kind.value, "headless")


register_adapter("command", CommandAdapter)
