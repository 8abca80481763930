/**
 * Starts the reactor worker (web/reactor-worker.js) and its Pyodide boot as early as the page
 * allows: the script the server puts in index.html's head starts it while the page parses (and
 * leaves it at `window[Symbol.for("reactor.worker")]`); on a page that embeds reactor.js, this
 * does the moment boot.json named the runtime. Marks `reactor:pyodide-start`.
 */

const WORKER_SCRIPTS = ["./pyodide-boot.js", "./reactor-worker.js"].map((script) => new URL(script, import.meta.url).href);
let worker = null;

/**
 * Where to start a module Worker running `script`. A Worker cannot start from another origin's
 * URL: a page that embeds reactor from its server starts it from a same-origin blob module that
 * imports the worker script (served with CORS).
 */
export function workerUrl(script) {
  if (script.origin === location.origin) return script.href;
  const module = `import ${JSON.stringify(script.href)};`;
  return URL.createObjectURL(new Blob([module], { type: "text/javascript" }));
}

/**
 * The page's reactor worker, started once, with Pyodide's boot from `interpreter` (its pyodide.mjs)
 * under way, restored from `snapshot` when the server made one (web/pyodide-boot.js). The worker
 * starts from a module that imports Pyodide's loader beside the worker's scripts, so they all
 * download at once instead of one after the other, and starts the boot as it runs (a message
 * would wait for the page's main thread).
 */
export function startWorker(interpreter, snapshot = "") {
  worker ??= window[Symbol.for("reactor.worker")] ?? null;  // started from index.html's head
  if (worker) return worker;
  performance.mark("reactor:pyodide-start");
  const [loader, image] = [interpreter, snapshot].map((url) => url && new URL(url, import.meta.url).href);
  const module = [loader, ...WORKER_SCRIPTS].map((url) => `import ${JSON.stringify(url)};`).join("")
    + `import { startPyodide } from ${JSON.stringify(WORKER_SCRIPTS.at(-1))};`
    + `startPyodide(${JSON.stringify(loader)}, ${JSON.stringify(image)}).catch(() => {});`;  // boot() reports it
  worker = new Worker(URL.createObjectURL(new Blob([module], { type: "text/javascript" })), { type: "module", name: "reactor" });
  return worker;
}
