/**
 * The page's Python package as one download (`/app/python-<hash>.bundle`, made by the server's
 * SourceArchive): a JSON line {"files": [[path, size], ...], "path": [folder, ...]}, then the files'
 * bytes back to back. Paths are relative to site-packages unless absolute; `path` folders go first
 * on sys.path (the runtime's stdlib modules compiled by the server, server/runtime/stdlib.py).
 * The browser undoes the gzip natively and this writes the files into Pyodide's file system, so
 * Python spends no start-up time unzipping, and the download runs while Pyodide boots.
 */

/** Fetch a bundle's bytes (an ArrayBuffer). */
export async function fetchPythonBundle(url) {
  const response = await fetch(url, { credentials: "same-origin" });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return response.arrayBuffer();
}

/** Write the files of fetched bundles in Pyodide's file system (relative ones under `site`). */
export function installPythonBundles(pyodide, buffers, site) {
  const made = new Set();
  const first = [];
  for (const buffer of buffers) {
    const data = new Uint8Array(buffer);
    const newline = data.indexOf(10);
    if (newline < 0) throw new Error("that download is not a Python bundle");
    let offset = newline + 1;
    const index = JSON.parse(new TextDecoder().decode(data.subarray(0, newline)));
    first.push(...(index.path ?? []));
    for (const [path, size] of index.files) {
      const target = path.startsWith("/") ? path : `${site}/${path}`;
      const folder = target.slice(0, target.lastIndexOf("/"));
      if (!made.has(folder)) {
        pyodide.FS.mkdirTree(folder);
        made.add(folder);
      }
      pyodide.FS.writeFile(target, data.subarray(offset, (offset += size)));
    }
  }
  // Folders already listed must be listed again. Not importlib.invalidate_caches(): in Python 3.14
  // that imports importlib.metadata, ~70 ms of start-up. Nor the stdlib zip's: no bundle writes
  // there, and reading its index again cost the next top-level import ~40 ms.
  pyodide.runPython([
    "import sys, zipimport",
    `sys.path[:0] = [p for p in ${JSON.stringify(first)} if p not in sys.path]`,  // JSON strings are Python's
    "for finder in sys.path_importer_cache.values():",
    "    finder and not isinstance(finder, zipimport.zipimporter) and finder.invalidate_caches()",
  ].join("\n"));
}

/**
 * A Python restored from the memory snapshot has the modules its start imports in memory: the
 * bundles' files are needed only by an import of anything else. They are written before the first
 * import Python has to look for (reactor/on_demand.py), or when the returned function is called
 * (once the page is ready), whichever comes first: 15-25 ms less before the page is ready.
 */
export function installPythonBundlesLater(pyodide, buffers, site) {
  return pyodide.pyimport("reactor.on_demand").files_on_demand(() => installPythonBundles(pyodide, buffers, site));
}
