"""the-loop: a self-hosted control plane for AI coding agents.

The public Python API is ``TheLoop`` (see ``the_loop.sdk``) and ``__version__``. ``TheLoop`` is
imported on first use, so ``import the_loop`` (and ``the-loop --version``) stays fast.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not from typing: `the-loop hook` imports this package on every hook

__version__ = "0.1.0"

__all__ = ["TheLoop", "__version__"]

if TYPE_CHECKING:
    from typing import Any

    from the_loop.sdk import TheLoop


def __getattr__(name: str) -> Any:
    if name == "TheLoop":
        # lazy: start-up (`import the_loop` does not load the SDK)
        from the_loop.sdk import TheLoop

        return TheLoop
    raise AttributeError(f"module 'the_loop' has no attribute {name!r}")
