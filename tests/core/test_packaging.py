"""The built wheel carries the dashboard: templates, our static files and the front-end files
copied from the npm packages (git-ignored, so included as hatch artifacts)."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

from tests.conftest import REPO

UV = REPO / ".tools" / "bin" / "uv"


def test_the_wheel_contains_the_dashboard_assets(tmp_path: Path) -> None:
    built = subprocess.run(
        [str(UV), "build", "--wheel", "--quiet", "-o", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("the_loop-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    web = "the_loop/web/"
    for name in (
        "static/vendor/xterm.js",
        "static/vendor/xterm.css",
        "static/vendor/addon-fit.js",
        "static/vendor/xterm.LICENSE",
        "static/dashboard.js",
        "static/dashboard.css",
        "static/terminal.js",
        "templates/base.html",
        "templates/session.html",
        "templates/login.html",
    ):
        assert web + name in names, name
    copied = (REPO / "src/the_loop/web/static/vendor/xterm.js").read_bytes()
    installed = (REPO / "node_modules/@xterm/xterm/lib/xterm.js").read_bytes()
    assert copied == installed  # the copy is the locked package's file
    assert not any(n.startswith("node_modules/") or "/node_modules/" in n for n in names)
