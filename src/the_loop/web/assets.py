"""The dashboard's static files: our own CSS and JS, and the front-end packages copied from
``node_modules`` into ``static/vendor/`` by ``make setup`` (``scripts/vendor-assets.sh``).

Every URL carries the first characters of the file's SHA-256 (``/static/<hash>/<name>``), so a
file is served with a year-long ``immutable`` cache and a new version is a new URL. A URL whose
hash is not the current one (a page from before an upgrade) is served the current file without
long caching.
"""

from __future__ import annotations

import hashlib
import mimetypes
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import Response

from the_loop.errors import NotFound

STATIC = Path(__file__).resolve().parent / "static"
VENDOR = ("vendor/xterm.js", "vendor/xterm.css", "vendor/addon-fit.js")
"""The files copied from the npm packages; the terminal needs them."""
LONG_CACHE = "public, max-age=31536000, immutable"
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


class Assets:
    """The files under ROOT, each read and hashed once, on first use."""

    def __init__(self, root: Path = STATIC) -> None:
        self.root = root
        self._files: dict[str, tuple[str, bytes]] = {}

    def _load(self, name: str) -> tuple[str, bytes]:
        found = self._files.get(name)
        if found is None:
            path = (self.root / name).resolve()
            if not path.is_relative_to(self.root) or not path.is_file():
                hint = (
                    " (run `make setup`: it copies it from node_modules)" if name in VENDOR else ""
                )
                raise NotFound(f"no static file {name!r}{hint}")
            body = path.read_bytes()
            found = (hashlib.sha256(body).hexdigest()[:12], body)
            self._files[name] = found
        return found

    def url(self, name: str) -> str:
        """The versioned URL of static file NAME (``NotFound`` when it does not exist)."""
        return f"/static/{self._load(name)[0]}/{name}"

    def router(self) -> APIRouter:
        router = APIRouter()

        @router.get("/static/{version}/{name:path}", include_in_schema=False)
        async def static_file(version: str, name: str) -> Response:
            digest, body = self._load(name)
            kind = _TYPES.get(Path(name).suffix) or mimetypes.guess_type(name)[0]
            cache = LONG_CACHE if version == digest else "no-cache"
            headers = {"Cache-Control": cache, "X-Content-Type-Options": "nosniff"}
            return Response(body, media_type=kind or "application/octet-stream", headers=headers)

        return router
