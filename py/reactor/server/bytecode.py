"""The page's Python as bytecode for Pyodide's interpreter, compiled once per source and cached.

Why: the page compiled every module of ours from source, in WebAssembly, at each first visit
(~0.15 s of start-up, bench/RESULTS.md). The server's CPython cannot write bytecode that
Pyodide's Python (another version) reads, so Pyodide compiles it: under Node (`web/compile.mjs`),
which the set-up already needs to vendor Pyodide. The pycs are checked-hash: the page re-hashes
each source and falls back to it if a pyc does not match. Without Node the page gets the sources
alone and compiles them itself, slower but the same.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger("reactor.server")
COMPILER = Path(__file__).resolve().parents[3] / "web" / "compile.mjs"


def compiled(sources: dict[str, bytes], *, pyodide: Path, cache: Path, node: str = "node") -> dict[str, bytes]:
    """The checked-hash .pyc of each source (by name): from `cache`, else compiled now by Pyodide.

    Sources that cannot be compiled (Node missing or failing, a SyntaxError) are left out."""
    keys = {name: hashlib.sha256(data).hexdigest()[:40] for name, data in sources.items()}
    found: dict[str, bytes] = {}
    missing: dict[str, bytes] = {}
    for name, key in keys.items():
        try:
            found[name] = (cache / f"{key}.pyc").read_bytes()
        except OSError:
            missing[name] = sources[name]
    if missing:
        for name, pyc in _compile(missing, pyodide, node).items():
            _store(cache / f"{keys[name]}.pyc", pyc)
            found[name] = pyc
    return found


def _compile(sources: dict[str, bytes], pyodide: Path, node: str) -> dict[str, bytes]:
    if shutil.which(node) is None:
        log.warning("Node is not on PATH: the page will compile its Python itself (slower start-up).")
        return {}
    try:
        text = json.dumps({name: data.decode() for name, data in sources.items()})
        result = subprocess.run(
            [node, str(COMPILER), str(pyodide)], input=text, capture_output=True, text=True, timeout=180, check=True
        )
        return {name: base64.b64decode(pyc) for name, pyc in json.loads(result.stdout).items()}
    except (subprocess.SubprocessError, OSError, ValueError) as error:
        detail = getattr(error, "stderr", "") or ""
        log.warning("Compiling the page's Python with Pyodide failed; it will compile it itself: %s %s", error, detail[-500:])
        return {}


def _store(path: Path, data: bytes) -> None:
    # Atomic: two servers starting at once must never read half a file.
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(handle, "wb") as file:
        file.write(data)
    os.replace(temporary, path)
