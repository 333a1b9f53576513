"""The generic ``command`` adapter: argv templates from the config.

``interactive``, ``resume`` and ``headless`` are argv lists whose elements may contain the
placeholders ``{prompt}``, ``{session_id}`` and ``{prompt_file}``. Substitution is one pass per
element (a prompt that itself contains ``{session_id}`` is left alone); an element that is
exactly ``{prompt}`` is dropped when there is no prompt. ``args`` are inserted right after the
program. Headless resumes reuse the ``headless`` template. The-loop mints the session id, so
``{session_id}`` is the same on spawn and resume. Templates name the program themselves, so
put ``--`` before ``{prompt}`` when the program supports it: a prompt can start with ``-``.
"""

from __future__ import annotations

import re

from the_loop.config import HarnessConfig
from the_loop.errors import BadInput
from the_loop.harness.base import HarnessAdapter, LaunchKind, LaunchSpec, register_adapter

_PLACEHOLDER = re.compile(r"\{(prompt|session_id|prompt_file)\}")


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
        return any("{prompt}" in item for item in self._template(kind))

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
            if element == "{prompt}" and prompt is None:
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


def _config_key(kind: LaunchKind) -> str:
    return {"resume": "resume", "interactive": "interactive"}.get(kind.value, "headless")


register_adapter("command", CommandAdapter)
