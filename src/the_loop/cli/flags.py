"""The global flags before a command (``--config FILE``/``-c FILE``/``--config=FILE``,
``--debug``), read without the CLI's parser by the two paths that skip it: ``the-loop serve``
(``cli.main``) and the fast read-only commands (``cli.fast``). Anything else before the
command (``--help``, an unknown flag, ``--config`` without a value) is left to the full CLI."""

from __future__ import annotations


class Leading:
    """The global flags given, and the words from the command on."""

    __slots__ = ("config", "debug", "words")

    def __init__(self, config: str | None, debug: bool, words: list[str]) -> None:
        self.config, self.debug, self.words = config, debug, words


def leading(args: list[str]) -> Leading | None:
    """ARGS read as ``[--config FILE] [--debug] COMMAND …``; None when something else comes
    before the command."""
    config: str | None = None
    debug = False
    rest = list(args)
    while rest and rest[0].startswith("-"):
        flag = rest.pop(0)
        if flag in ("--config", "-c") and rest and not rest[0].startswith("-"):
            config = rest.pop(0)
        elif flag.startswith("--config=") and len(flag) > len("--config="):
            config = flag.removeprefix("--config=")
        elif flag == "--debug":
            debug = True
        else:
            return None
    return Leading(config, debug, rest)
