/**
 * The page's side of AI Tool execution: one Web Worker at a time runs tool code, calls queue
 * behind each other, and a call whose signal aborts is told to stop; if its worker does not
 * answer within GRACE_MS (code blocking in a loop), the worker is terminated and a fresh one
 * is started at once for the next call. The page itself never runs tool code. The first worker
 * starts when the page first offers AI Tools, not during boot, which it would slow down.
 */

import { workerUrl } from "./early-worker.js";
import { AI_TOOL_PAGE, errorDetail } from "./protocol.js";

const GRACE_MS = 300;
const WORKER_SCRIPT = new URL("./ai-tool-worker.js", import.meta.url);

/** Runs AI Tool jobs (JSON text) in a worker; `stats` counts workers started and terminated. */
export class AiToolWorkers {
  constructor(bootConfig) {
    this.bootConfig = bootConfig;
    this.stats = { started: 0, terminated: 0, calls: 0, booted: 0 };
    this.queue = Promise.resolve();
    this.nextId = 0;
    this.current = null;
  }

  /** Start a worker now, so the first call does not wait for its Python to boot. */
  warm() {
    if (!this.current) this.spawn();
  }

  spawn() {
    const worker = new Worker(workerUrl(WORKER_SCRIPT), { type: "module" });
    const pending = new Map();
    worker.onmessage = ({ data }) => {
      if (data.type === "done") {
        pending.get(data.id)?.(data.answer);
        pending.delete(data.id);
      } else if (data.type === "booted") {
        this.stats.booted += 1;
      } else if (data.type === "boot-failed") {
        console.error(`The AI Tool worker could not start Python: ${data.message}`);
      }
    };
    tell(worker, "boot", this.bootConfig);
    this.current = { worker, pending };
    this.stats.started += 1;
  }

  /** Run one job; resolves with the worker's JSON answer, or an AbortedError answer. */
  run(jobJson, signal) {
    const call = this.queue.then(() => this.runNow(jobJson, signal));
    this.queue = call.catch(() => {});
    return call;
  }

  runNow(jobJson, signal) {
    return new Promise((resolve) => {
      const stopped = (why) => JSON.stringify({ ok: false, error: errorDetail({ name: "AbortedError", message: why }) });
      if (signal.aborted) return resolve(stopped(`Stopped before it started: ${signal.reason}`));
      this.warm();
      const { worker, pending } = this.current;
      const id = ++this.nextId;
      this.stats.calls += 1;
      pending.set(id, resolve);
      tell(worker, "run", { id, job: jobJson });
      signal.addEventListener("abort", () => {
        if (!pending.has(id)) return;
        tell(worker, "abort", { id, reason: String(signal.reason) });
        setTimeout(() => {
          if (!pending.has(id) || this.current.worker !== worker) return;
          worker.terminate();  // the code ignored the signal and blocks its thread
          this.stats.terminated += 1;
          for (const settle of pending.values()) settle(stopped("The tool did not stop when told; its worker was terminated."));
          pending.clear();
          this.spawn();
        }, GRACE_MS);
      }, { once: true });
    });
  }
}

/**
 * Tell an AI Tool worker something; `type` is one it takes (AI_TOOL_PAGE).
 * @param {Worker} worker
 * @param {string} type
 * @param {object} fields
 */
function tell(worker, type, fields = {}) {
  if (!AI_TOOL_PAGE.has(type)) throw new TypeError(`${type} is not a message the page sends an AI Tool worker`);
  worker.postMessage({ type, ...fields });
}
