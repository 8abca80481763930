/**
 * Pyodide for reactor's workers: restored from the server's memory snapshot when it names one
 * (reactor/server/runtime/snapshot.py: Python already initialised, about 4 s less of the boot here),
 * else booted from its files, as also when the snapshot does not restore.
 */

/**
 * {pyodide, restored}: `restored` says the snapshot was used (Python must then reseed what it drew).
 * `downloaded(share)` hears how much of the snapshot has come (0 to 1) as it downloads.
 */
export async function bootPyodide(loadPyodide, indexURL, snapshot, downloaded = () => {}) {
  if (snapshot) {
    const hidden = withoutStackSwitching();
    const stdlib = `${indexURL}python_stdlib.zip`;
    const later = stdlibLater(stdlib);
    try {
      const factory = import(`${indexURL}pyodide.asm.mjs`);
      const file = snapshotMemory(snapshot, downloaded);
      file.catch(() => {});  // reported below, once loadPyodide has awaited it
      const pyodide = await loadPyodide({
        indexURL,
        _loadSnapshot: file.then(({ memory }) => memory),
        createPyodideModule: async (settings) => (await factory).default(baseUndone(settings, await file)),
        stdLibURL: later.url,
      });
      pyodide.pyimport("reactor.on_demand").stdlib_on_demand(() => pyodide.FS.writeFile(STDLIB_ZIP, fetchNow(stdlib)), STDLIB_ZIP);
      return { pyodide, restored: true };
    } catch (error) {
      console.warn(`reactor: Pyodide's memory snapshot did not restore (${error.message}); booting Pyodide from its files.`);
      hidden.restore();
    } finally {
      later.restore();
    }
  }
  return { pyodide: await loadPyodide({ indexURL }), restored: false };
}

/**
 * The stdlib zip, fetched when Python first looks for a module in it (reactor/on_demand.py). A
 * Python restored from the snapshot has what the page imports at its start in memory, and its zip
 * importer has the zip's index: the zip (2.5 MB, a quarter of a first visit) is needed only by an
 * import of anything else. Until then the zip's file is empty (Pyodide writes what `stdLibURL`
 * answers).
 */
const STDLIB_ZIP = "/lib/python314.zip";  // where Pyodide 314 writes it; sys.path names it

/** Pyodide's fetch of the stdlib zip answered with nothing while it restores (`url` is asked for instead). */
function stdlibLater(stdlib) {
  const url = `${stdlib}#later`;
  const original = globalThis.fetch;
  globalThis.fetch = (resource, options) =>
    String(resource) === url ? Promise.resolve(new Response(new Uint8Array(0))) : original(resource, options);
  return { url, restore: () => { globalThis.fetch = original; } };
}

/**
 * {memory, base, runs} of a snapshot's file at `url`: a JSON line {size, base: [at, length],
 * runs: [[offset, length], ...]}, then the bytes of each run back to back; the rest is zeros,
 * which are not sent (reactor/server/runtime/snapshot.py). Each part is written where it goes as it
 * arrives, and `downloaded` hears the share of the runs written. The `length` bytes from `at` are
 * still to be undone (`baseUndone`).
 */
async function snapshotMemory(url, downloaded) {
  const answer = await fetch(url, { credentials: "same-origin" });
  if (!answer.ok) throw new Error(`${url} answered ${answer.status}`);
  const reader = answer.body.getReader();
  let memory = null;
  let runs = [];
  /** @type {[number, number]} */
  let base = [0, 0];
  let head = new Uint8Array(0);
  let [run, written] = [0, 0];  // the run being written, and how much of it is
  let [total, done] = [0, 0];  // the runs' bytes, and those written
  for (let part = await reader.read(); !part.done; part = await reader.read()) {
    let bytes = part.value;
    if (!memory) {
      bytes = joined(head, bytes);
      const end = bytes.indexOf(10);
      if (end < 0) {
        head = bytes;
        continue;
      }
      const index = JSON.parse(new TextDecoder().decode(bytes.subarray(0, end)));
      [memory, runs, base] = [new Uint8Array(index.size), index.runs, index.base ?? [0, 0]];
      total = runs.reduce((sum, [, length]) => sum + length, 0);
      bytes = bytes.subarray(end + 1);
    }
    done += bytes.length;
    while (bytes.length) {
      if (run >= runs.length) throw new Error(`${url} has bytes beyond its runs`);
      const [offset, length] = runs[run];
      const piece = bytes.subarray(0, length - written);
      memory.set(piece, offset + written);
      written += piece.length;
      bytes = bytes.subarray(piece.length);
      if (written === length) [run, written] = [run + 1, 0];
    }
    if (total) downloaded(Math.min(done / total, 1));
  }
  if (!memory || run < runs.length) throw new Error(`${url} ended before its memory did`);
  return { memory, base, runs };
}

/**
 * Emscripten's `settings`, with the snapshot's base undone as the module is instantiated: the
 * memory's `length` bytes from `at` were sent as their exclusive or with the module's memory as
 * instantiated (its data segments, which pyodide.asm.wasm brings), and Pyodide copies the
 * snapshot over that memory next. Where no run was sent, that exclusive or was zero: the
 * instantiated bytes are copied there, and only the runs are combined (a fifth of the 3.8 MB).
 */
function baseUndone(settings, { memory, base: [at, length], runs }) {
  if (!length) return settings;
  const instantiate = settings.instantiateWasm;
  const words = [at, length, ...runs.flat()].every((bytes) => bytes % 4 === 0);
  if (!instantiate || !words || at + length > memory.length) {
    throw new Error(`the snapshot's base (${length} bytes at ${at}) cannot be undone`);
  }
  settings.instantiateWasm = (imports, receive) =>
    instantiate(imports, (instance, module) => {
      const sent = new Uint32Array(memory.buffer, memory.byteOffset + at, length / 4);
      const instantiated = new Uint32Array(instance.exports.memory.buffer, 0, length / 4);
      let done = 0;  // in words, as `start` and `end`: every run and `at` are multiples of 4 bytes
      for (const [offset, size] of runs) {
        const [start, end] = [Math.max(offset - at, 0) / 4, Math.min(offset + size - at, length) / 4];
        if (end <= start) continue;
        sent.set(instantiated.subarray(done, start), done);
        for (let i = start; i < end; i++) sent[i] ^= instantiated[i];
        done = end;
      }
      sent.set(instantiated.subarray(done), done);
      receive(instance, module);
    });
  return settings;
}

function joined(first, second) {
  if (!first.length) return second;
  const both = new Uint8Array(first.length + second.length);
  both.set(first);
  both.set(second, first.length);
  return both;
}

/** The bytes at `url`, at once: a worker may wait for a download (the page never does). */
function fetchNow(url) {
  const request = new XMLHttpRequest();
  request.open("GET", url, false);
  request.responseType = "arraybuffer";
  request.send();
  if (request.status !== 200) throw new Error(`${url} answered ${request.status}`);
  return new Uint8Array(request.response);
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
