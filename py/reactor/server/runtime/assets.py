"""Serving files to the page: right MIME types, precompressed bodies, and cache headers.

Two cache policies, because a repeat visit should transfer almost nothing:
- `immutable`: the URL changes whenever the bytes do (versioned runtime, hashed archive), so the
  browser keeps it for a year without asking;
- `revalidate`: the URL is stable (index.html, glue scripts), so the browser asks each time and
  gets a 304 from the ETag when nothing changed.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import mimetypes
from collections.abc import Callable
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response

from ...errors import ApiError
from .node import least_recently_used, store

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"

mimetypes.add_type("application/wasm", ".wasm")
mimetypes.add_type("text/javascript", ".mjs")
mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("application/zip", ".whl")


def serve_file(request: Request, root: Path, relative: str, *, cache: str) -> Response:
    """Serve `root/relative`, never anything outside `root`; prefer a `.gz` twin when accepted;
    ApiError(404) for anything else."""
    root = root.resolve()
    missing = ApiError(404, f"There is no file {relative[:100]!r} here.", field="path")
    # NUL makes the OS calls raise; none is in a file name here
    if any(ord(c) < 32 or c == "\x7f" for c in relative):
        raise missing
    accepted = accepted_codings(request.headers.get("accept-encoding", ""))
    try:
        path = (root / relative).resolve()
        found = path.is_relative_to(root) and path.is_file()
        twin = next((t for t in _twins(path, accepted) if t[0].is_file()), None) if found else None
    except OSError:  # a name no file can have (longer than the file system allows): not here either
        found, twin = False, None
    if not found:
        raise missing
    media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    headers = {"cache-control": cache, "vary": "Accept-Encoding"}
    if twin is not None:
        path, headers["content-encoding"] = twin
    try:
        stat = path.stat()
    except OSError:  # removed since it was found
        raise missing from None
    headers["etag"] = f'"{stat.st_mtime_ns:x}-{stat.st_size:x}"'
    if cache == REVALIDATE and request.headers.get("if-none-match") == headers["etag"]:
        return Response(status_code=304, headers={"etag": headers["etag"], "cache-control": cache})
    if twin is not None and SMALL_FILE < stat.st_size <= LARGE_TWIN:
        body = _whole(path, stat.st_mtime_ns, stat.st_size)
        if body is not None:
            return Response(body, media_type=media_type, headers=headers)
    small = None if stat.st_size > SMALL_FILE else _small_file(path, stat.st_mtime_ns, stat.st_size)
    if small is not None:
        body, twins = small  # a twin on disk, chosen above, is sent as it is
        chosen = [(s, c) for s, c in ENCODINGS if c in accepted and s in twins and twin is None]
        if chosen:
            body, headers["content-encoding"] = twins[chosen[0][0]], chosen[0][1]
        return Response(body, media_type=media_type, headers=headers)
    return FileResponse(path, media_type=media_type, headers=headers, stat_result=stat)


# A page's scripts and styles, answered from memory and compressed once (zstd, else gzip):
# FileResponse reads each file in a thread and the app's GZipMiddleware compresses it again, ~1-1.5
# ms of each of a start-up's requests. Keyed by modification time and size, as the ETag is.
SMALL_FILE = 256 * 1024


# The runtime's large files (the snapshot, Pyodide's WebAssembly) as their precompressed twins,
# answered from memory in one piece: FileResponse reads 64 KiB at a time, each read in a thread,
# ~65 of them for the snapshot, beside the page's other requests and the browser on the same cores.
LARGE_TWIN = 32 * 1024 * 1024


def _read(path: Path, size: int) -> bytes | None:
    """The bytes of a file of `size` bytes, or None if it changed while read (then it is served
    from the file)."""
    try:
        body = path.read_bytes()
    except OSError:
        return None
    return body if len(body) == size else None


@functools.lru_cache(maxsize=8)
def _whole(path: Path, mtime_ns: int, size: int) -> bytes | None:
    """The bytes of a large file, kept (keyed as the ETag is)."""
    return _read(path, size)


@functools.lru_cache(maxsize=256)
def _small_file(path: Path, mtime_ns: int, size: int) -> tuple[bytes, dict[str, bytes]] | None:
    """The file's bytes and its compressed twins by suffix (none under 1 KiB: not worth it), or
    None if it changed while read."""
    body = _read(path, size)
    if body is None:
        return None
    return body, compressed_twins(body) if size >= 1024 else {}


# Precompressed twins beside a file (web/vendor.py, snapshot.py), the smallest first.
ENCODINGS = ((".zst", "zstd"), (".gz", "gzip"))


def accepted_codings(header: str) -> frozenset[str]:
    """The codings of ENCODINGS an Accept-Encoding header accepts (RFC 9110 12.5.3): each one it
    names with a weight above 0 (`x-gzip` is `gzip`), and through `*` each one it does not name.
    A weight that is no number refuses its coding: the body then goes out as it is."""
    weights: dict[str, float] = {}
    for member in header.lower().split(","):
        coding, _, parameters = member.partition(";")
        coding = coding.strip()
        coding = "gzip" if coding == "x-gzip" else coding
        weight = 1.0
        for parameter in parameters.split(";"):
            name, _, value = parameter.partition("=")
            if name.strip() == "q":
                try:
                    weight = float(value.strip())
                except ValueError:
                    weight = 0.0
        weights.setdefault(coding, weight if 0 <= weight <= 1 else 0.0)
    anything = weights.get("*", 0.0) > 0
    return frozenset(
        coding for _, coding in ENCODINGS if weights.get(coding, 1.0 if anything else 0.0) > 0
    )


def _twins(path: Path, accepted: frozenset[str]) -> list[tuple[Path, str]]:
    """The twins of `path` in encodings the request accepts, in the order to prefer them."""
    return [
        (path.with_name(path.name + suffix), coding)
        for suffix, coding in ENCODINGS
        if coding in accepted
    ]


def compressed_twins(data: bytes) -> dict[str, bytes]:
    """The bytes of each twin of a file of `data`, by suffix (level 19 zstd keeps a window of 8 MB,
    the most a browser must accept)."""
    return {".zst": _zstd(data, 19), ".gz": gzip.compress(data, 6, mtime=0)}


def _zstd(data: bytes, level: int) -> bytes:
    import zstandard

    return zstandard.ZstdCompressor(level=level, threads=-1).compress(data)


class RenderedPage:
    """An HTML page the server fills in once per start (index.html with its runtime's URLs),
    revalidated by a hash of its bytes as a file would be by its ETag."""

    def __init__(self, html: str, *, headers: dict[str, str] | None = None) -> None:
        self.body = html.encode()
        self.etag = f'"{hashlib.sha256(self.body).hexdigest()[:16]}"'
        self.headers = headers or {}

    def response(self, request: Request) -> Response:
        headers = {"cache-control": REVALIDATE, "etag": self.etag}
        if request.headers.get("if-none-match") == self.etag:
            return Response(status_code=304, headers=headers)
        return Response(
            self.body, media_type="text/html; charset=utf-8", headers={**headers, **self.headers}
        )


class SourceArchive:
    """The Python the page imports, as one bundle made once per server start, named by its hash.

    The format is what the page can unpack without Python (web/python-bundle.js): a JSON line
    `{"files": [[path, size], ...]}`, then the files' bytes back to back; gzip on the wire.
    `bytecode(sources)`, when given, answers a pyc for each `.py` it can (bytecode.py);
    each goes beside its source as `__pycache__/<module>.<cache_tag>.pyc`, where Python looks.

    Paths are relative to site-packages, except the absolute ones of `extra` (files shipped as
    they are).
    `path` lists folders the page puts first on `sys.path` (`"path"` in the JSON line).
    With a `cache` folder its zstd twin is made once per bundle at level 19 and kept there."""

    def __init__(
        self,
        packages: dict[str, Path],
        exclude: set[str],
        *,
        bytecode: Callable[[dict[str, bytes]], dict[str, bytes]] | None = None,
        cache_tag: str = "",
        extra: dict[str, bytes] | None = None,
        path: list[str] | None = None,
        cache: Path | None = None,
    ) -> None:
        files: dict[str, bytes] = dict(extra or {})
        for name, folder in sorted(packages.items()):
            for file in sorted(folder.rglob("*")):
                relative = file.relative_to(folder).as_posix()
                if (
                    file.suffix in {".py", ".json"}
                    and "__pycache__" not in relative
                    and not _excluded(relative, exclude)
                ):
                    files[f"{name}/{relative}"] = file.read_bytes()
        if bytecode is not None:
            sources = {name: data for name, data in files.items() if name.endswith(".py")}
            for name, pyc in bytecode(sources).items():
                where, _, module = name.rpartition("/")
                files[f"{where}/__pycache__/{module[:-3]}.{cache_tag}.pyc"] = pyc
        names = sorted(files)
        index = json.dumps(
            {"files": [[name, len(files[name])] for name in names], "path": path or []},
            separators=(",", ":"),
        )
        self.data = b"".join([index.encode(), b"\n", *(files[name] for name in names)])
        self.digest = hashlib.sha256(self.data).hexdigest()[:16]
        self.squeezed = {
            "zstd": _kept_zstd(self.data, cache / f"python-{self.digest}.zst")
            if cache
            else _zstd(self.data, 9),
            "gzip": gzip.compress(self.data, 6, mtime=0),
        }
        self.url = f"/app/python-{self.digest}.bundle"

    def response(self, request: Request) -> Response:
        headers = {"cache-control": IMMUTABLE, "vary": "Accept-Encoding"}
        accepted = accepted_codings(request.headers.get("accept-encoding", ""))
        for coding, body in self.squeezed.items():
            if coding in accepted:
                return Response(
                    body,
                    media_type="application/octet-stream",
                    headers={**headers, "content-encoding": coding},
                )
        return Response(self.data, media_type="application/octet-stream", headers=headers)


# Bundles' zstd twins kept in a cache folder: the most recently used (servers of other plugin sets).
KEPT_BUNDLES = 8


def _kept_zstd(data: bytes, kept: Path) -> bytes:
    """`data` at zstd level 19, made once and kept at `kept` (0.8 s here, 8 % smaller than level
    9: 40 kB of a first visit)."""
    try:
        squeezed = kept.read_bytes()
        kept.touch()
        return squeezed
    except OSError:
        squeezed = _zstd(data, 19)
    try:
        store(kept, squeezed)
        for old in least_recently_used(list(kept.parent.glob("python-*.zst")), KEPT_BUNDLES):
            old.unlink(missing_ok=True)
    except OSError:
        pass  # served as made, kept next time
    return squeezed


def read_bundle(data: bytes) -> dict[str, bytes]:
    """The files of a SourceArchive bundle (for tests and tools; the page reads it in JS)."""
    head, _, body = data.partition(b"\n")
    files, offset = {}, 0
    for name, size in json.loads(head)["files"]:
        files[name] = body[offset : offset + size]
        offset += size
    return files


def _excluded(relative: str, exclude: set[str]) -> bool:
    return any(part in exclude for part in relative.split("/"))
