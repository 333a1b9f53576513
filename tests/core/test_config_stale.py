"""The CLI validates the config file it reads on every run: one changed byte is seen at once,
and an invalid file is refused every time (there is no cache of validated configs)."""

from __future__ import annotations

import json

from tests.conftest import Env


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
