"""``python -m the_loop`` runs the CLI."""

from __future__ import annotations

from the_loop.cli.main import run

if __name__ == "__main__":
    run()
