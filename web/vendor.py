#!/usr/bin/env python3
"""Vendor the browser runtime into web/vendor/ so the page never touches a CDN.

Why: the page runs Python through PyScript + Pyodide, and both default to a
CDN. We self-host them so the page works offline, on a closed network, and in tests that must make
no request outside 127.0.0.1.

What it makes (web/vendor/ is git-ignored; npm works in web/build-npm/):
    vendor/pyodide/    the Pyodide core files the browser actually fetches
    vendor/pyscript/   the @pyscript/core dist (core.js, core.css, its chunks)
    vendor/markdown-it/markdown-it.min.js   CommonMark for the page (web/markdown.js)
    vendor/manifest.json   versions and the runtime stamp, read by the server

The page needs no third-party wheels: reactor's own JSON Schema validator replaced jsonschema,
whose imports cost about a second of start-up (bench/RESULTS.md).

A second run with the same versions is a no-op (stamp file). Use --force to
redo. Stdlib only; shells out to `npm`. Runs on Python 3.11+.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

PYODIDE_VERSION = "314.0.7"
PYSCRIPT_VERSION = "0.7.31"
PYTHON_VERSION = "3.14"  # the CPython inside Pyodide 314
# CommonMark for the page's Markdown (slides, the chat): its one-file browser build.
MARKDOWN_IT_VERSION = "14.1.0"

# What pyodide.mjs loads at boot (checked in Chromium: nothing else is fetched).
PYODIDE_FILES = [
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
]

WEB = Path(__file__).resolve().parent
VENDOR = WEB / "vendor"
BUILD_NPM = WEB / "build-npm"
STAMP = VENDOR / ".stamp.json"
COMPRESSIBLE = {".wasm", ".mjs", ".js", ".json", ".css"}


class VendorError(Exception):
    """A step failed; the message says which and why."""


def say(message: str) -> None:
    print(f"vendor: {message}", flush=True)


def wanted_versions() -> dict:
    return {
        "pyodide": PYODIDE_VERSION,
        "pyscript_core": PYSCRIPT_VERSION,
        "python": PYTHON_VERSION,
        "markdown_it": MARKDOWN_IT_VERSION,
    }


def is_up_to_date() -> bool:
    try:
        stamp = json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return False
    manifest = VENDOR / "manifest.json"
    return stamp == wanted_versions() and manifest.is_file()


def run_command(argv: list[str], what: str) -> None:
    if shutil.which(argv[0]) is None:
        raise VendorError(f"{what}: '{argv[0]}' is not on PATH")
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-15:]
        raise VendorError(
            f"{what} failed (exit {result.returncode}): {' '.join(argv)}\n" + "\n".join(tail)
        )


def install_npm_packages() -> Path:
    say(f"npm install pyodide@{PYODIDE_VERSION} @pyscript/core@{PYSCRIPT_VERSION}")
    BUILD_NPM.mkdir(exist_ok=True)
    run_command(
        [
            "npm",
            "install",
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(BUILD_NPM),
            f"pyodide@{PYODIDE_VERSION}",
            f"@pyscript/core@{PYSCRIPT_VERSION}",
            f"markdown-it@{MARKDOWN_IT_VERSION}",
        ],
        "npm install",
    )
    return BUILD_NPM / "node_modules"


def copy_pyodide(node_modules: Path) -> None:
    source, target = node_modules / "pyodide", VENDOR / "pyodide"
    target.mkdir(parents=True)
    for name in PYODIDE_FILES:
        if not (source / name).is_file():
            raise VendorError(f"pyodide@{PYODIDE_VERSION} has no {name}")
        shutil.copy2(source / name, target / name)
    say(f"copied {len(PYODIDE_FILES)} Pyodide files")


def copy_pyscript(node_modules: Path) -> None:
    source, target = node_modules / "@pyscript" / "core" / "dist", VENDOR / "pyscript"
    if not (source / "core.js").is_file():
        raise VendorError(f"@pyscript/core@{PYSCRIPT_VERSION} has no dist/core.js")
    # core.js imports its chunks (and plugins) by relative URL: copy the whole
    # dist but the source maps.
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.map"))
    say(f"copied {sum(1 for _ in target.iterdir())} PyScript files")


def copy_markdown_it(node_modules: Path) -> None:
    source = node_modules / "markdown-it" / "dist" / "markdown-it.min.js"
    if not source.is_file():
        raise VendorError(f"markdown-it@{MARKDOWN_IT_VERSION} has no dist/markdown-it.min.js")
    (VENDOR / "markdown-it").mkdir()
    shutil.copy2(source, VENDOR / "markdown-it" / source.name)
    shutil.copy2(source.parents[1] / "LICENSE", VENDOR / "markdown-it" / "LICENSE")
    say("copied markdown-it")


def compress_files(*, missing_only: bool = False) -> None:
    """Write a .gz and a .zst twin of each text or wasm file, so the server never compresses 10 MB
    per request and sends the smaller zstd to browsers that take it (Chromium, Firefox)."""
    count = 0
    for path in VENDOR.rglob("*"):
        if path.suffix not in COMPRESSIBLE or not path.is_file():
            continue
        for suffix, squeeze in TWINS.items():
            twin = path.with_name(path.name + suffix)
            if not (missing_only and twin.is_file()):
                twin.write_bytes(squeeze(path.read_bytes()))
                count += 1
    if count or not missing_only:
        say(f"compressed {count} twins")


def _zstd(data: bytes) -> bytes:
    # installed with reactor (pyproject.toml); level 19 keeps a window browsers accept (8 MB)
    import zstandard

    return zstandard.ZstdCompressor(level=19, threads=-1).compress(data)


TWINS = {".gz": lambda data: gzip.compress(data, 6, mtime=0), ".zst": _zstd}


def write_manifest() -> None:
    # The stamp is part of every runtime URL, so browsers may cache those files forever.
    stamp = hashlib.sha256(json.dumps(wanted_versions(), sort_keys=True).encode()).hexdigest()[:12]
    manifest = {**wanted_versions(), "stamp": stamp, "pyodide_files": PYODIDE_FILES}
    (VENDOR / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    STAMP.write_text(json.dumps(wanted_versions()))  # last: marks a complete run
    say("wrote vendor/manifest.json")


def vendor_all(force: bool) -> None:
    if not force and is_up_to_date():
        say(
            f"up to date (pyodide {PYODIDE_VERSION}, @pyscript/core {PYSCRIPT_VERSION}); "
            "--force to redo"
        )
        # twins a newer reactor serves (zstd) that an older set-up did not make
        compress_files(missing_only=True)
        return
    shutil.rmtree(VENDOR, ignore_errors=True)  # no stale files from old versions
    VENDOR.mkdir()
    node_modules = install_npm_packages()
    copy_pyodide(node_modules)
    copy_pyscript(node_modules)
    copy_markdown_it(node_modules)
    compress_files()
    write_manifest()
    say(f"done: {VENDOR}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="re-vendor even if up to date")
    args = parser.parse_args()
    try:
        vendor_all(args.force)
    except VendorError as error:
        print(f"vendor: ERROR: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
