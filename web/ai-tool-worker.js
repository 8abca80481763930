/**
 * The Web Worker that runs AI Tool code, so code that blocks stalls this worker, never the page;
 * the page terminates a worker that does not stop when told (web/tool-workers.js).
 *
 * Python tools run in the worker's own Pyodide (booted from the same self-hosted files) through
 * `reactor.browser.run_ai_tool`; JavaScript tools run as `Invoke(args, context)` directly.
 * Every answer is JSON text: {ok: true, value} or {ok: false, error: {type, message}}.
 */

import { AI_TOOL_WORKER, errorDetail } from "./protocol.js";
import { bootPyodide } from "./pyodide-boot.js";
import { fetchPythonBundle, installPythonBundles } from "./python-bundle.js";

const controllers = new Map();

/**
 * Tell the page something; `type` is one it takes (AI_TOOL_WORKER).
 * @param {string} type
 * @param {object} [fields]
 */
function tell(type, fields = {}) {
  if (!AI_TOOL_WORKER.has(type)) throw new TypeError(`${type} is not a message an AI Tool worker sends`);
  postMessage({ type, ...fields });
}
let python = null;

async function boot({ interpreter, snapshot, bundles, site, server }) {
  const fetched = Promise.all(bundles.map(fetchPythonBundle));
  const { loadPyodide } = await import(interpreter);
  const { pyodide, restored } = await bootPyodide(loadPyodide, new URL(".", interpreter).href, snapshot);
  installPythonBundles(pyodide, await fetched, site);
  const bridge = pyodide.pyimport("reactor.browser");
  if (restored) bridge.restored();
  // Tool code's root-relative URLs mean the reactor server.
  return (job, signal) => bridge.run_ai_tool(job, signal, server);
}

async function runJavaScript(job, signal) {
  // The record's code defines Invoke; it sees only its arguments, its context and the worker's APIs.
  const invoke = new Function("args", "context", `"use strict";\n${job.code}\n;return Invoke(args, context);`);
  const value = await invoke(job.args, { config: job.config, viewId: job.viewId, signal });
  const text = JSON.stringify({ ok: true, value: value === undefined ? null : value });
  if (text === undefined) throw new TypeError("The tool returned a value that is not JSON data.");
  return text;
}

async function run({ id, job }) {
  const controller = new AbortController();
  controllers.set(id, controller);
  let answer;
  try {
    const parsed = JSON.parse(job);
    if (parsed.language === "javascript") {
      answer = await runJavaScript(parsed, controller.signal);
    } else {
      const runPython = await python;
      const pending = runPython(job, controller.signal);
      try { answer = await pending; } finally { pending.destroy?.(); }
    }
  } catch (error) {
    answer = JSON.stringify({ ok: false, error: errorDetail(error) });
  } finally {
    controllers.delete(id);
  }
  tell("done", { id, answer });
}

onmessage = ({ data }) => {
  if (data.type === "boot") {
    python = boot(data);
    python.then(() => tell("booted"), (error) => tell("boot-failed", { message: String(error) }));
  } else if (data.type === "run") {
    run(data);
  } else if (data.type === "abort") {
    controllers.get(data.id)?.abort(new DOMException(data.reason, "AbortError"));
  }
};
