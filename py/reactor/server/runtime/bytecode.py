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
from pathlib import Path

from .files import WEB
from .node import run_node, store

log = logging.getLogger("reactor.server")
COMPILER = WEB / "compile.mjs"


def compiled(
    sources: dict[str, bytes], *, pyodide: Path, cache: Path, node: str = "node"
) -> dict[str, bytes]:
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
            store(cache / f"{keys[name]}.pyc", pyc)
            found[name] = pyc
    return found


def _compile(sources: dict[str, bytes], pyodide: Path, node: str) -> dict[str, bytes]:
    printed = run_node(
        COMPILER,
        str(pyodide),
        input=json.dumps({name: data.decode() for name, data in sources.items()}),
        timeout=180,
        node=node,
        task="compiling the page's Python with Pyodide",
        fallback="the page compiles its Python itself (slower start-up)",
    )
    if printed is None:
        return {}
    try:
        return {name: base64.b64decode(pyc) for name, pyc in json.loads(printed).items()}
    except ValueError as error:
        log.warning(
            "Compiling the page's Python with Pyodide gave no answer it could read: %s", error
        )
        return {}
