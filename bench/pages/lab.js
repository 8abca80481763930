/**
 * The lab page's timers: window.bench.{calls, list}. performance.now() is coarsened to 0.1 ms
 * in Chromium, so calls are timed in batches long enough (>= minBatchMs) for that not to matter;
 * p50/p99 are of the per-call mean within each batch.
 *
 * Pyodide's WebAssembly starts in V8's baseline tier and is optimised function by function as it
 * runs hot, so the first calls after the boot cost 2-3x the later ones: `calls` reports the
 * per-call mean of the first COLD_CALLS of each subject apart (`cold_ms`), then calls for
 * `warmupMs` untimed before the timed batches (the steady state a page in use is in).
 */
import { CommandRegistry } from "@lumino/commands";

const COLD_CALLS = 16;

const lumino = new CommandRegistry();
lumino.addCommand("noop", { execute: () => null });

// The floor of any call across a thread boundary: a JSON message to a blank worker and back.
const echoWorker = new Worker(URL.createObjectURL(new Blob(["onmessage = ({ data }) => postMessage(data)"], { type: "text/javascript" })));
const echoed = [];
echoWorker.onmessage = ({ data }) => echoed.shift()(JSON.parse(data));

const subjects = {
  lumino: () => lumino.execute("noop", { n: 1 }),
  echo: () => new Promise((resolve) => { echoed.push(resolve); echoWorker.postMessage(JSON.stringify({ v: 1, id: 1, type: "execute", args: "{}" })); }),
  noop: () => window.reactor.executeCommand("bench.noop", { n: 1 }),
  getDeck: () => window.reactor.executeCommand("decks.getDeck", { id: "onboarding" }),
  // The agent's path: by tool name, through admission, argument parsing, validation and the envelope.
  noopTool: () => window.reactor.callTool("bench_noop", { n: 1 }),
  getDeckTool: () => window.reactor.callTool("decks_get_deck", { id: "onboarding" }),
};

function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/**
 * The smallest power of two of calls that lasts `minBatchMs`, the largest of three tries: how
 * many calls a batch makes between two looks at the clock. A hiccup makes a try smaller (sizes
 * of one and two calls in runs 10e and 11b and in run 12's probe), so a batch does not trust the
 * size for its length: it goes on, `size` calls at a time, until it has lasted `minBatchMs`.
 */
async function batchSize(call, minBatchMs) {
  const sizes = [];
  for (let attempt = 0; attempt < 3; attempt++) {
    for (let size = 1; ; size *= 2) {
      const start = performance.now();
      for (let i = 0; i < size; i++) await call();
      if (performance.now() - start >= minBatchMs) { sizes.push(size); break; }
    }
  }
  return Math.max(...sizes);
}

/**
 * Time `batches` rounds; each round runs one batch of every subject, in turn, so they share the
 * noise, starting one subject further on each round: the first batch after another worker's
 * turn finds the reactor worker's thread asleep, and no subject should always be that one.
 */
async function calls(names, { batches = 100, minBatchMs = 2, warmupMs = 0, extra = {} } = {}) {
  // extra: {name: ["command id" | "tool:tool_name", args]}
  const subject = ([target, args]) => target.startsWith("tool:")
    ? () => window.reactor.callTool(target.slice(5), args)
    : () => window.reactor.executeCommand(target, args);
  const all = { ...subjects, ...Object.fromEntries(Object.entries(extra).map(([k, spec]) => [k, subject(spec)])) };
  const runs = names.map((name) => ({ name, call: all[name], means: [] }));
  for (const run of runs) {
    const start = performance.now();
    for (let i = 0; i < COLD_CALLS; i++) await run.call();
    run.cold = (performance.now() - start) / COLD_CALLS;
  }
  for (const warmed = performance.now() + warmupMs; performance.now() < warmed;) {
    for (const run of runs) for (let i = 0; i < COLD_CALLS; i++) await run.call();
  }
  for (const run of runs) run.size = await batchSize(run.call, minBatchMs);
  for (let b = 0; b < batches; b++) {
    for (const run of [...runs.slice(b % runs.length), ...runs.slice(0, b % runs.length)]) {
      const start = performance.now();
      let count = 0;
      let elapsed = 0;
      do {
        for (let i = 0; i < run.size; i++) await run.call();
        count += run.size;
        elapsed = performance.now() - start;
      } while (elapsed < minBatchMs);
      run.means.push(elapsed / count);
    }
  }
  return Object.fromEntries(runs.map(({ name, size, means, cold }) => {
    means.sort((a, b) => a - b);
    return [name, { p50_ms: quantile(means, 0.5), p99_ms: quantile(means, 0.99), cold_ms: cold, batch: size, batches, warmupMs }];
  }));
}

/**
 * Milliseconds of each of `times` calls of reactor.agentToolBundles(), the count listed, and
 * (`changedMs`) how long a change takes to reach the listeners: a plugin with one tool defined
 * in the page, until onAgentToolBundles hears the new list (Python's JSON of every bundle, the
 * parse and the freeze included). Each such plugin is unloaded again.
 */
async function list(times = 7) {
  const ms = [];
  let bundles = [];
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    bundles = await window.reactor.agentToolBundles();
    ms.push(performance.now() - start);
  }
  const changedMs = [];
  for (let i = 0; i < 3; i++) {
    const name = `bench_change_${i}`;
    const heard = new Promise((resolve) => {
      const stop = window.reactor.onAgentToolBundles(() => { stop(); resolve(performance.now()); });
    });
    const start = performance.now();
    await window.reactor.definePlugin({
      name,
      commands: [{ id: `${name}.noop`, execute: () => null }],
      agentTools: { id: name, name: "Bench change", commands: [{ name, command: `${name}.noop`, description: "Nothing." }] },
    });
    changedMs.push((await heard) - start);
    await window.reactor.unloadPlugin(name);
  }
  return { ms, changedMs, bundles: bundles.length, tools: bundles.reduce((n, b) => n + b.commands.length, 0) };
}

/**
 * Define `count` plugins of 10 tools with reactor.definePlugin, one after the other, as a page's
 * own code would: the total, the mean per plugin over the first and the last tenth, and how long
 * after the last definition the first listener heard a list holding every one of them.
 */
async function define(count, prefix = "page") {
  const names = Array.from({ length: count }, (_, i) => `${prefix}_${String(i).padStart(4, "0")}`);
  const last = names[names.length - 1];
  const heard = new Promise((resolve) => {
    const stop = window.reactor.onAgentToolBundles((bundles) => {
      if (bundles.some((b) => b.id === last)) { stop(); resolve(performance.now()); }
    });
  });
  const each = [];
  const start = performance.now();
  for (const name of names) {
    const began = performance.now();
    await window.reactor.definePlugin({
      name,
      commands: Array.from({ length: 10 }, (_, t) => ({ id: `${name}.t${t}`, execute: (args) => args })),
      agentTools: { id: name, name, commands: Array.from({ length: 10 }, (_, t) => ({
        name: `${name}_t${t}`, command: `${name}.t${t}`, description: `Tool ${t} of ${name}.`,
        parameters: { type: "object", properties: { id: { type: "string" } } } })) },
    });
    each.push(performance.now() - began);
  }
  const done = performance.now();
  const heardAt = await heard;
  const tenth = Math.max(1, Math.floor(count / 10));
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return { plugins: count, total_ms: done - start, first_tenth_ms_per_plugin: mean(each.slice(0, tenth)),
           last_tenth_ms_per_plugin: mean(each.slice(-tenth)), heard_after_last_ms: heardAt - done };
}

window.bench = { calls, list, define };
