"""The context every service function takes: the loaded config, the open database and the
shared services of this process, each a typed field built once."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from the_loop.config import Config, LoadedConfig, load_config
from the_loop.store import Database, open_database

if TYPE_CHECKING:
    import asyncio

    from the_loop.runner import Runners


@dataclass
class Ctx:
    """What a service call needs: config, database, runners, and this process's knowledge of
    which agents have been seen ready for input and which wait behind a draft."""

    loaded: LoadedConfig
    db: Database
    ready: set[str] = field(default_factory=set)
    started_with: LoadedConfig | None = None
    """The config a daemon started on (restart-only settings keep its values until a restart)."""
    restart_needed: list[str] = field(default_factory=list)
    """Restart-only settings whose value in the loaded config differs from ``started_with``."""
    config_rejected: str | None = None
    """The digest of the last config file a reload refused (reported once per content)."""
    drafts: set[str] = field(default_factory=set)
    """The agents whose deliveries wait behind a draft in their input box (``agent.core.
    draft``): the daemon looks at them again every second."""
    stopping: threading.Event = field(default_factory=threading.Event)
    """Set when the daemon stops: a thread that waits on an agent (for it to take input)
    gives up then, so that the process can exit."""

    @property
    def config(self) -> Config:
        return self.loaded.config

    @property
    def state_dir(self) -> Path:
        """The state dir in use: a daemon keeps the one it started on until it restarts."""
        return (self.started_with or self.loaded).config.state_path

    @cached_property
    def inbox_wake(self) -> asyncio.Event:
        """Set when the inbox has new work (built on first use: most commands never wait)."""
        return _event()

    @cached_property
    def outbox_wake(self) -> asyncio.Event:
        """Set when the outbox has new work (built on first use)."""
        return _event()

    @cached_property
    def panes_died(self) -> asyncio.Event:
        """Set when tmux said a watched pane's program exited or its pipe closed (the
        reconciler looks then; built on first use)."""
        return _event()

    @cached_property
    def runners(self) -> Runners:
        """The tmux and process runners and the per-item locks (built on first use)."""
        # lazy: commands that never run an agent do not pay for the runners.
        from the_loop.runner import Runners

        return Runners.from_config(self.config)


def _event() -> asyncio.Event:
    import asyncio  # lazy: start-up (asyncio costs ~20 ms; most CLI commands never wait)

    return asyncio.Event()


def open_ctx(config_path: Path | None = None, loaded: LoadedConfig | None = None) -> Ctx:
    """Load the config (unless given) and open the state database."""
    loaded = loaded or load_config(config_path)
    database = loaded.config.database
    return Ctx(
        loaded=loaded,
        db=open_database(loaded.config.state_path, database.url, database.pool_size),
    )
