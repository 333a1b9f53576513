"""The hook is light and self-contained: no JSON parser (it passes the harness's JSON on as it
came), no database driver, no store module, nothing of the-loop beyond itself."""

from __future__ import annotations

import subprocess
import sys

from the_loop.harness.claude_hooks import hook_argv

MAIN = "from the_loop.hook import main;sys.exit(main(sys.argv[1:]))"


def test_the_hook_loads_no_json_nor_database_driver_nor_store_nor_the_cli() -> None:
    argv = hook_argv()
    probe = argv[4].replace(
        MAIN,
        "import the_loop.hook;print(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('json','re','socket','sqlite3','_sqlite3','psycopg','pydantic')"
        " or (m.startswith('the_loop') and m not in ('the_loop','the_loop.hook'))))",
    )
    assert probe != argv[4]
    done = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
