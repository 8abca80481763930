/**
 * Pyodide for reactor's workers: restored from the server's memory snapshot when it names one
 * (reactor/server/snapshot.py: Python already initialised, about 4 s less of the boot here),
 * else booted from its files, as also when the snapshot does not restore.
 */

/** {pyodide, restored}: `restored` says the snapshot was used (Python must then reseed what it drew). */
export async function bootPyodide(loadPyodide, indexURL, snapshot) {
  if (snapshot) {
    const hidden = withoutStackSwitching();
    try {
      const memory = fetch(snapshot, { credentials: "same-origin" }).then((answer) => {
        if (!answer.ok) throw new Error(`${snapshot} answered ${answer.status}`);
        return answer.arrayBuffer();
      });
      memory.catch(() => {});  // reported below, once loadPyodide has awaited it
      return { pyodide: await loadPyodide({ indexURL, _loadSnapshot: memory }), restored: true };
    } catch (error) {
      console.warn(`reactor: Pyodide's memory snapshot did not restore (${error.message}); booting Pyodide from its files.`);
      hidden.restore();
    }
  }
  return { pyodide: await loadPyodide({ indexURL }), restored: false };
}

/**
 * The snapshot is made under Node, whose WebAssembly has no stack switching (JSPI), and Python
 * keeps what it found at its start: a restored Pyodide must find the same, or a call that would
 * switch stacks fails ("stack switching not supported"). Hidden from this worker's Pyodide only.
 */
function withoutStackSwitching() {
  const names = ["Suspending", "Suspender", "promising"].filter((name) => name in WebAssembly);
  const saved = names.map((name) => [name, WebAssembly[name]]);
  for (const name of names) delete WebAssembly[name];
  return { restore: () => saved.forEach(([name, value]) => { WebAssembly[name] = value; }) };
}
