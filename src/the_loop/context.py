"""The context every service function takes: the loaded config and the open database."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from the_loop.config import Config, LoadedConfig, load_config
from the_loop.store import Database, open_database


@dataclass
class Ctx:
    """What a service call needs: config, database, and per-process caches of the services."""

    loaded: LoadedConfig
    db: Database
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> Config:
        return self.loaded.config

    @property
    def state_dir(self) -> Path:
        return self.config.state_path


def open_ctx(config_path: Path | None = None, loaded: LoadedConfig | None = None) -> Ctx:
    """Load the config (unless given) and open the state database."""
    loaded = loaded or load_config(config_path)
    return Ctx(loaded=loaded, db=open_database(loaded.config.state_path))
