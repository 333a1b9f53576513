"""The ``the-loop`` command line: one module per command group, each a thin edge."""

__all__ = [
    "main",
]
