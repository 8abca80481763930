"""Serving files to the page: right MIME types, precompressed bodies, and cache headers.

Two cache policies, because a repeat visit should transfer almost nothing:
- `immutable`: the URL changes whenever the bytes do (versioned runtime, hashed archive), so the
  browser keeps it for a year without asking;
- `revalidate`: the URL is stable (index.html, glue scripts), so the browser asks each time and
  gets a 304 from the ETag when nothing changed.
"""

from __future__ import annotations

import hashlib
import io
import mimetypes
import zipfile
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"

mimetypes.add_type("application/wasm", ".wasm")
mimetypes.add_type("text/javascript", ".mjs")
mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("application/zip", ".whl")


def serve_file(request: Request, root: Path, relative: str, *, cache: str) -> Response:
    """Serve `root/relative`, never anything outside `root`; prefer a `.gz` twin when accepted."""
    root = root.resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return JSONResponse({"error": f"There is no file {relative!r} here."}, status_code=404)
    media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    headers = {"cache-control": cache, "vary": "Accept-Encoding"}
    twin = path.with_name(path.name + ".gz")
    if "gzip" in request.headers.get("accept-encoding", "") and twin.is_file():
        path, headers["content-encoding"] = twin, "gzip"
    stat = path.stat()
    headers["etag"] = f'"{stat.st_mtime_ns:x}-{stat.st_size:x}"'
    if cache == REVALIDATE and request.headers.get("if-none-match") == headers["etag"]:
        return Response(status_code=304, headers={"etag": headers["etag"], "cache-control": cache})
    return FileResponse(path, media_type=media_type, headers=headers, stat_result=stat)


class SourceArchive:
    """The Python the page imports, zipped once per server start and named by its content hash."""

    def __init__(self, packages: dict[str, Path], exclude: set[str]) -> None:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, folder in sorted(packages.items()):
                for path in sorted(folder.rglob("*")):
                    relative = path.relative_to(folder).as_posix()
                    if path.suffix in {".py", ".json"} and "__pycache__" not in relative and not _excluded(relative, exclude):
                        archive.write(path, f"{name}/{relative}")
        self.data = buffer.getvalue()
        self.digest = hashlib.sha256(self.data).hexdigest()[:16]
        self.url = f"/app/python-{self.digest}.zip"

    def response(self) -> Response:
        return Response(self.data, media_type="application/zip", headers={"cache-control": IMMUTABLE})


def _excluded(relative: str, exclude: set[str]) -> bool:
    return any(part in exclude for part in relative.split("/"))
