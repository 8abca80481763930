/**
 * window.reactor: the page's door into the Python reactor.
 *
 * It boots PyScript with the self-hosted Pyodide the server lists in /app/boot.json, shows
 * progress and boot errors on the page, and turns the Python half's JSON answers into plain
 * JS data. Everything that decides anything lives in Python; this file only boots and bridges.
 */

import { AiToolWorkers } from "./ai-tools.js";

const progress = document.querySelector("[data-reactor-progress]");
const started = performance.now();
const bundleListeners = new Set();
const commandListeners = new Set();
const views = new Map();
let python = null;
let bootJson = "{}";
let aiToolWorkers = null;
let chatApprover = null;
let settleReady;

/** A command's failure, carrying the Python error's type, command id and argument problems. */
export class ReactorError extends Error {
  constructor({ type, message, command, problems }) {
    super(message);
    this.name = type || "ReactorError";
    this.command = command;
    if (problems) this.problems = problems;
  }
}

function report(text, state = "loading") {
  if (!progress) return;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  progress.dataset.state = state;
  progress.textContent = state === "loading" ? `${text} (${seconds} s)` : text;
}

function fail(message, detail = "") {
  report(`Reactor could not start: ${message}`, "error");
  if (progress && detail) {
    const more = document.createElement("pre");
    more.textContent = detail;
    progress.append(more);
  }
  settleReady.reject(new Error(message));
}

function warmWorkersFor(bundles) {
  if (bundles.some((bundle) => bundle.id === "ai-tools")) aiToolWorkers?.warm();
}

function decode(answer) {
  const envelope = JSON.parse(answer);
  if (envelope.ok) return envelope.value;
  throw new ReactorError(envelope.error);
}

const ready = new Promise((resolve, reject) => { settleReady = { resolve, reject }; });
ready.catch(() => {});  // reported on the page by fail(); callers still see the rejection

/** The facade. Methods other than `ready` wait for Python, so they may be called at once. */
export const reactor = {
  /** Resolves with {loaded, failures} once every plugin is loaded and its bundles are listed. */
  ready,

  /**
   * Run a command; resolves with the plain JS value it returned (null when it returns nothing),
   * rejects with a ReactorError whose message is the error's sentence.
   */
  async executeCommand(id, args = {}) {
    await ready;
    const answer = python.execute(id, JSON.stringify(args ?? {}));
    if (typeof answer === "string") return decode(answer);
    try { return decode(await answer); } finally { answer.destroy?.(); }
  },

  /**
   * Call a tool by its model name, as an agent would: resolves with the envelope
   * {ok: true, result} or {ok: false, error: {code, message, ...}}; never rejects for a tool's failure.
   * Pass {signal} (an AbortSignal) to stop it.
   */
  async callTool(name, args = {}, { signal } = {}) {
    await ready;
    const pending = python.callTool(name, typeof args === "string" ? args : JSON.stringify(args ?? {}), signal ?? null);
    try { return JSON.parse(await pending); } finally { pending.destroy?.(); }
  },

  /**
   * The page's chat host, for the chat widget (web/chat.js) or any other UI: events arrive as
   * `reactor:chat` events on window; `approver(request)` must resolve "allow", "always" or "deny".
   */
  chat: {
    async configure(settings) { await ready; return JSON.parse(python.chat.configure(JSON.stringify(settings))); },
    async label() { await ready; return python.chat.label(); },
    async send(text) {
      await ready;
      const pending = python.chat.send(text);
      try { return JSON.parse(await pending); } finally { pending.destroy?.(); }
    },
    stop() { python?.chat.stop(); },
    async tools() { await ready; return JSON.parse(python.chat.tools()); },
    async callTool(name, args, { signal } = {}) {
      await ready;
      const pending = python.chat.callTool(name, JSON.stringify(args ?? {}), signal ?? null);
      try { return JSON.parse(await pending); } finally { pending.destroy?.(); }
    },
    setApprover(approver) { chatApprover = approver; },
  },

  /** Counters of the AI Tool worker: {started, terminated, calls, booted}. */
  aiToolWorkerStats() {
    return { ...(aiToolWorkers?.stats ?? {}) };
  },

  /** The AgentTools bundles of the loaded plugins, as plain data. */
  async agentToolBundles() {
    await ready;
    return JSON.parse(python.bundles());
  },

  /** Every command, unavailable ones included: {id, label, description, plugin, available}. */
  async listCommands() {
    await ready;
    return JSON.parse(python.commands());
  },

  /** Call `listener(bundles)` whenever plugins load or unload; returns an unsubscribe function. */
  onAgentToolBundles(listener) {
    bundleListeners.add(listener);
    return () => bundleListeners.delete(listener);
  },

  /** Call `listener()` whenever commands are added or removed; returns an unsubscribe function. */
  onCommandsChanged(listener) {
    commandListeners.add(listener);
    return () => commandListeners.delete(listener);
  },

  /** Let a plugin's renderer draw its view: `render(state)` runs on each `page.show(view, state)`. */
  defineView(name, render) {
    views.set(name, render);
  },

  // The Python half calls these; they are not for page authors.
  _bootJson: () => bootJson,
  _progress: (text) => report(text),
  _fail: fail,
  _show(view, stateJson) {
    const render = views.get(view);
    if (render) render(JSON.parse(stateJson));
  },
  _bundlesChanged(json) {
    const bundles = JSON.parse(json);
    warmWorkersFor(bundles);
    for (const listener of bundleListeners) listener(JSON.parse(JSON.stringify(bundles)));
  },
  _commandsChanged() {
    for (const listener of commandListeners) listener();
  },
  _chatEvent(json) {
    window.dispatchEvent(new CustomEvent("reactor:chat", { detail: JSON.parse(json) }));
  },
  _chatApprove(requestJson) {
    // The widget answers "allow", "always" or "deny"; with no widget on the page, nothing is approved.
    const request = JSON.parse(requestJson);
    return chatApprover ? chatApprover(request) : Promise.resolve("deny");
  },
  _runAiTool(jobJson, signal) {
    return aiToolWorkers.run(jobJson, signal);
  },
  _attach(api, loadJson) {
    python = api;
    const load = JSON.parse(loadJson);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    if (load.failures.length) {
      report(`Ready in ${seconds} s, but: ${load.failures.join(" ")}`, "warning");
    } else {
      report(`Ready in ${seconds} s: ${load.loaded.join(", ") || "no plugins"}.`, "ready");
    }
    settleReady.resolve(load);
    warmWorkersFor(JSON.parse(python.bundles()));
  },
};

window.reactor = reactor;
addEventListener("error", (event) => { if (!python) fail(event.message); });
addEventListener("unhandledrejection", (event) => { if (!python) fail(String(event.reason?.message ?? event.reason)); });

async function boot() {
  report("Fetching the runtime list…");
  const response = await fetch("/app/boot.json");
  if (!response.ok) throw new Error(`the server answered ${response.status} for /app/boot.json`);
  const config = await response.json();
  bootJson = JSON.stringify(config);
  if (!config.runtime.ready) throw new Error(config.runtime.error);
  for (const href of config.plugins.flatMap((p) => p.styles)) {
    document.head.append(Object.assign(document.createElement("link"), { rel: "stylesheet", href }));
  }
  await Promise.all(config.plugins.flatMap((p) => p.scripts).map((src) => import(src)));
  // PyScript loads every plugin of the MicroPython type too unless its config says no.
  const mpyConfig = document.createElement("mpy-config");
  mpyConfig.setAttribute("type", "json");
  mpyConfig.textContent = JSON.stringify({ plugins: config.pyscript.plugins });
  document.head.append(mpyConfig);
  const files = Object.entries(config.pyscript.files);
  aiToolWorkers = new AiToolWorkers({
    interpreter: config.pyscript.interpreter,
    files: files.map(([url]) => url),
    site: files[0][1].replace(/\/\*$/, ""),
  });
  const script = document.createElement("script");
  script.type = "py";
  script.setAttribute("config", JSON.stringify(config.pyscript));
  script.textContent = "from reactor.browser import start\nawait start()\n";
  document.body.append(script);
  report("Starting Python (Pyodide)…");
  await import(config.runtime.pyscript);
}

boot().catch((error) => fail(error.message));
