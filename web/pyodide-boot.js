/**
 * Pyodide for reactor's workers: restored from the server's memory snapshot when it names one
 * (reactor/server/snapshot.py: Python already initialised, about 4 s less of the boot here),
 * else booted from its files, as also when the snapshot does not restore.
 */

/** {pyodide, restored}: `restored` says the snapshot was used (Python must then reseed what it drew). */
export async function bootPyodide(loadPyodide, indexURL, snapshot) {
  if (snapshot) {
    try {
      const memory = fetch(snapshot, { credentials: "same-origin" }).then((answer) => {
        if (!answer.ok) throw new Error(`${snapshot} answered ${answer.status}`);
        return answer.arrayBuffer();
      });
      memory.catch(() => {});  // reported below, once loadPyodide has awaited it
      return { pyodide: await loadPyodide({ indexURL, _loadSnapshot: memory }), restored: true };
    } catch (error) {
      console.warn(`reactor: Pyodide's memory snapshot did not restore (${error.message}); booting Pyodide from its files.`);
    }
  }
  return { pyodide: await loadPyodide({ indexURL }), restored: false };
}
