"""The validated-config cache (issue 14.3): it serves only what validated, for exactly the bytes
it validated; one changed byte is validated again, an invalid file is never stored."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from tests.conftest import Env
from the_loop import config_cache
from the_loop.config import Config, load_config
from the_loop.errors import ConfigInvalid


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache dir for this test (``$XDG_CACHE_HOME``)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "the-loop" / "config"


def _entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.pickle")) if cache.exists() else []


def test_a_validated_file_is_stored_and_served_for_the_same_bytes(
    tmp_path: Path, cache: Path
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("server:\n  port: 1234\n")
    assert load_config(path).config.server.port == 1234
    [entry] = _entries(cache)
    assert entry.stat().st_mode & 0o777 == 0o600
    assert cache.stat().st_mode & 0o777 == 0o700
    # prove that the entry is what is served: plant another valid config under the same key
    entry.write_bytes(pickle.dumps(Config.model_validate({"server": {"port": 4321}})))
    assert load_config(path).config.server.port == 4321


def test_one_changed_byte_is_validated_again(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("server:\n  port: 1234\n")
    load_config(path)
    [first] = _entries(cache)
    first.write_bytes(pickle.dumps(Config.model_validate({"server": {"port": 4321}})))
    path.write_text("server:\n  port: 1235\n")
    assert load_config(path).config.server.port == 1235
    assert len(_entries(cache)) == 2


def test_an_invalid_file_is_never_stored(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("server:\n  port: 1234\n")
    load_config(path)
    before = _entries(cache)
    path.write_text("server:\n  port: 1234x\n")
    for _ in range(2):
        with pytest.raises(ConfigInvalid):
            load_config(path)
    assert _entries(cache) == before


def test_an_entry_others_could_write_or_that_does_not_load_is_ignored(
    tmp_path: Path, cache: Path
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("server:\n  port: 1234\n")
    load_config(path)
    [entry] = _entries(cache)
    entry.write_bytes(pickle.dumps(Config.model_validate({"server": {"port": 4321}})))
    entry.chmod(0o666)
    assert load_config(path).config.server.port == 1234
    entry.write_bytes(b"not a pickle")
    entry.chmod(0o600)
    assert load_config(path).config.server.port == 1234
    entry.write_bytes(pickle.dumps({"server": {"port": 4321}}))  # loads, but not a Config
    assert load_config(path).config.server.port == 1234


def test_the_key_covers_the_model_sources() -> None:
    sources = config_cache.model_sources(Config)
    assert any(b"class Config(Model):" in source for source in sources)


def test_the_cli_never_serves_a_stale_config(loop_env: Env) -> None:
    def port() -> int:
        result = loop_env.run("config", "show", "--format", "json")
        assert result.exit_code == 0, result.stderr
        return int(json.loads(result.stdout)["server"]["port"])

    loop_env.write_config(server={"port": 1234})
    assert port() == 1234
    assert port() == 1234
    loop_env.config_path.write_text(loop_env.config_path.read_text().replace("1234", "1235"))
    assert port() == 1235
    loop_env.config_path.write_text(loop_env.config_path.read_text().replace("1235", "12x5"))
    for _ in range(2):
        bad = loop_env.run("config", "show", "--format", "json")
        assert bad.exit_code == 2
        assert "server.port" in bad.stderr
    cache = loop_env.root / "home" / ".cache" / "the-loop" / "config"
    assert len(list(cache.glob("*.pickle"))) == 2
