/**
 * Boot Pyodide once, import the stdlib modules the page would import after its boot, and write
 * Pyodide's memory snapshot: a page restores it instead of initialising Python (about 4 s less
 * of its boot here, bench/RESULTS.md). Made by the server (reactor/server/snapshot.py).
 *
 *   node web/snapshot.mjs <pyodide folder> <output file> [module ...]
 *
 * `_makeSnapshot` / `_loadSnapshot` are Pyodide's own, still marked private: the server makes a
 * snapshot per vendored Pyodide, and the page boots without one when restoring fails.
 */
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const [folder, output, ...modules] = process.argv.slice(2);
const { loadPyodide } = await import(pathToFileURL(`${folder}/pyodide.mjs`).href);
// The environment a page's Pyodide has, not this process's (which would name this script's path).
const env = { HOME: "/home/pyodide", _: "./this.program" };
const pyodide = await loadPyodide({ indexURL: `${folder}/`, env, _makeSnapshot: true });
for (const name of modules) pyodide.pyimport(name).destroy();
writeFileSync(output, pyodide.makeMemorySnapshot());
