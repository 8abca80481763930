/**
 * Boot Pyodide once, install the page's Python bundle and import what the page would import after
 * its boot, and write Pyodide's memory snapshot: a page restores it instead of initialising Python
 * and importing reactor (bench/RESULTS.md). Made by the server (reactor/server/runtime/snapshot.py).
 *
 *   node web/snapshot.mjs <pyodide folder> <output file> [--bundle <file> <site>] [module ...]
 *
 * The bundle is installed as the page installs it (web/python-bundle.js), so the modules imported
 * here are the page's own. They may import `js` and keep what they read from it by name (Pyodide
 * looks `js.postMessage` up again in the page); any other JavaScript object they keep fails the
 * snapshot. `_makeSnapshot` / `_loadSnapshot` are Pyodide's own, still marked private:
 * the server makes a snapshot per vendored Pyodide and bundle, and the page boots without one when
 * restoring fails.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { installPythonBundles } from "./python-bundle.js";

const [folder, output, ...rest] = process.argv.slice(2);
const bundle = rest[0] === "--bundle" ? rest.splice(0, 3).slice(1) : null;
const { loadPyodide } = await import(pathToFileURL(`${folder}/pyodide.mjs`).href);
// The environment a page's Pyodide has, not this process's (which would name this script's path).
const env = { HOME: "/home/pyodide", _: "./this.program" };
const pyodide = await loadPyodide({ indexURL: `${folder}/`, env, _makeSnapshot: true });
try {
  if (bundle) {
    const data = readFileSync(bundle[0]);
    installPythonBundles(pyodide, [data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength)], bundle[1]);
  }
  for (const name of rest) pyodide.pyimport(name).destroy();
  pyodide.runPython("import gc\ngc.collect()");
  zeroFreeMemory(pyodide._module);
  writeFileSync(output, pyodide.makeMemorySnapshot());
} catch (error) {
  console.error(error.message);  // the server logs the end of what this printed
  process.exit(1);
}

/**
 * Zero the heap's free blocks: what imports read and let go (sources, buffers) stays in the
 * snapshot otherwise, and zeros cost nothing once compressed (4.5 -> 3.9 MB zstd here). Every
 * block malloc can give without growing the memory is taken, zeroed, then freed again.
 */
function zeroFreeMemory(module) {
  if (!module._malloc_set_footprint_limit || !module._malloc_footprint) return;
  module._malloc_set_footprint_limit(module._malloc_footprint());
  const taken = [];
  for (let size = 1 << 24; size >= 32; size >>= 1) {
    for (let block = module._malloc(size); block; block = module._malloc(size)) {
      module.HEAPU8.fill(0, block, block + size);
      taken.push(block);
    }
  }
  for (const block of taken) module._free(block);
  module._malloc_set_footprint_limit(-1);
}
