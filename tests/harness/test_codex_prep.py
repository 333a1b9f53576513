"""Codex's folder-trust entry is added before an interactive spawn, once, without touching
what the operator wrote; headless launches touch nothing."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from the_loop.config import HarnessConfig
from the_loop.errors import SpawnFailed
from the_loop.harness import LaunchSpec, build_adapter
from the_loop.harness.codex_prep import prepare_codex_config
from the_loop.harness.homes import codex_home


def test_the_workspace_is_trusted_once_and_other_settings_stay(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    home.mkdir()
    (home / "config.toml").write_text('model = "o3"\n[projects."/elsewhere"]\ntrust_level = "x"')
    cwd = tmp_path / 'work "q"'
    cwd.mkdir()
    codex = build_adapter("codex", HarnessConfig(env={"CODEX_HOME": str(home)}))
    codex.prepare(codex.interactive(LaunchSpec(cwd)))
    codex.prepare(codex.resume_interactive(LaunchSpec(cwd, "th-1")))
    data = tomllib.loads((home / "config.toml").read_text())
    assert data["model"] == "o3" and data["projects"]["/elsewhere"] == {"trust_level": "x"}
    assert data["projects"][str(cwd)] == {"trust_level": "trusted"}
    assert (home / "config.toml").read_text().count("trust_level") == 2


def test_an_entry_the_operator_wrote_is_left_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(f'[projects."{tmp_path}"]\ntrust_level = "untrusted"\n')
    before = (tmp_path / "config.toml").read_text()
    prepare_codex_config(tmp_path, {"CODEX_HOME": str(tmp_path)})
    assert (tmp_path / "config.toml").read_text() == before


@pytest.mark.parametrize("text", ["model = ", 'projects = { "/a" = { trust_level = "x" } }\n'])
def test_a_file_that_cannot_take_the_entry_is_refused_and_kept(tmp_path: Path, text: str) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(SpawnFailed, match=r"config\.toml"):
        prepare_codex_config(tmp_path / "ws", {"CODEX_HOME": str(tmp_path)})
    assert (tmp_path / "config.toml").read_text() == text


def test_headless_launches_touch_nothing_and_home_defaults(tmp_path: Path) -> None:
    codex = build_adapter("codex", HarnessConfig(env={"CODEX_HOME": str(tmp_path / "c")}))
    codex.prepare(codex.headless(LaunchSpec(tmp_path, None, "hi")))
    assert not (tmp_path / "c").exists()
    assert codex_home({}, {"HOME": str(tmp_path)}) == tmp_path / ".codex"
