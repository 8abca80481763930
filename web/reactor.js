/**
 * window.reactor: the page's door into the Python reactor.
 *
 * It boots PyScript with the self-hosted Pyodide the server lists in /app/boot.json, shows
 * progress and boot errors on the page, and turns the Python half's JSON answers into plain
 * JS data. Everything that decides anything lives in Python; this file only boots and bridges.
 *
 * Any page may include it from a reactor server that allows the page's origin (`reactor serve
 * --allow-origin`): every URL resolves against that server, the origin this file came from,
 * unless `window.reactorConfig = {server, plugins, agent}` set before the include says otherwise.
 */

const embed = window.reactorConfig ?? {};
/** The reactor server's root, e.g. "http://127.0.0.1:8000/": where runtime, plugins and APIs are. */
const server = new URL(embed.server ?? "/", import.meta.url).href;
const at = (url) => new URL(url, server).href;
const progress = document.querySelector("[data-reactor-progress]");
const started = performance.now();
const bundleListeners = new Set();
const commandListeners = new Set();
const views = new Map();
const pagePlugins = new Map();  // key -> {name, commands: Map(id -> the page's command), dispose}
let nextPluginKey = 0;
let python = null;
let bootJson = "{}";
let aiToolWorkers = null;
let settleViews;
const viewsLoaded = new Promise((resolve, reject) => { settleViews = { resolve, reject }; });
viewsLoaded.catch(() => {});  // boot() reports it
let pythonBundles = null;
let toolBundles = null;  // a frozen snapshot of the bundles, made once per burst of changes
const bundleMap = new Map();  // id -> frozen bundle: what Python's deltas apply to (10,000 tools are 4 MB of JSON)
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

let failed = false;

function fail(message, detail = "") {
  if (failed) return;  // the first failure is the cause; what fails after it follows from it
  failed = true;
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

function deepFreeze(value) {
  if (value && typeof value === "object") {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

function describeCommand(command) {
  if (!command || typeof command !== "object") return command;
  const { execute, isEnabled, ...data } = command;
  return { ...data, execute: typeof execute, ...(isEnabled === undefined ? {} : { isEnabled: typeof isEnabled }) };
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
    const answer = python.callTool(name, typeof args === "string" ? args : JSON.stringify(args ?? {}), signal ?? null);
    if (typeof answer === "string") return JSON.parse(answer);  // a synchronous command answered at once
    try { return JSON.parse(await answer); } finally { answer.destroy?.(); }
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

  /**
   * The AgentTools bundles of the loaded plugins, as plain data: a frozen snapshot, the same one
   * until plugins load or unload (then `onAgentToolBundles` listeners get the new one).
   */
  async agentToolBundles() {
    await ready;
    return toolBundles;
  },

  /** Every command, unavailable ones included: {id, label, description, plugin, available}. */
  async listCommands() {
    await ready;
    return JSON.parse(python.commands());
  },

  /**
   * Add a plugin written in JavaScript in this page. Its commands run as JS (Python's handler awaits
   * `execute(args)`; arguments and result cross as JSON), are listed beside Python's, and its
   * AgentTools bundle is listed with the others. The same rules as for Python plugins apply:
   * a refused declaration rejects with a ReactorError (e.g. `DeclarationError`) and nothing of it
   * is registered. Resolves with {name, commands, tools}.
   *
   * @param {{name: string, description?: string, requires?: string[],
   *   commands?: Array<{id: string, label?: string, description?: string, parameters?: object,
   *                     execute: (args: object) => any, isEnabled?: () => boolean}>,
   *   agentTools?: {id: string, name: string, description?: string, toolset?: string[],
   *                 commands: Array<{name: string, command: string, description: string,
   *                                  parameters?: object, sideEffect?: string}>},
   *   dispose?: () => void}} plugin `dispose` runs when the plugin is unloaded
   */
  async definePlugin(plugin) {
    await ready;
    const { commands, dispose, ...declaration } = plugin ?? {};
    const key = `${declaration.name}#${++nextPluginKey}`;
    const list = Array.isArray(commands) ? commands : [];
    pagePlugins.set(key, { name: declaration.name, commands: new Map(list.map((c) => [c?.id, c])), dispose });
    try {
      // Functions stay here; Python learns only that they are functions (or what they are instead).
      const described = Array.isArray(commands) ? commands.map(describeCommand) : commands;
      return decode(python.definePlugin(JSON.stringify({ ...declaration, ...(commands === undefined ? {} : { commands: described }) }), key));
    } catch (error) {
      pagePlugins.delete(key);
      throw error;
    }
  },

  /**
   * Unload a plugin (and, first, the plugins that require it): its commands, tools and
   * subscriptions go, and `onAgentToolBundles` listeners hear of it. Resolves with the names unloaded.
   */
  async unloadPlugin(name) {
    await ready;
    const gone = decode(python.unloadPlugin(name));
    for (const [key, entry] of pagePlugins) {
      if (!gone.includes(entry.name)) continue;
      pagePlugins.delete(key);
      entry.dispose?.();
    }
    return gone;
  },

  /** Call `listener(bundles)` (a frozen snapshot) whenever plugins load or unload; returns an unsubscribe function. */
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
  _viewsLoaded: () => viewsLoaded,
  _progress: (text) => report(text),
  _fail: fail,
  _show(view, stateJson) {
    const render = views.get(view);
    if (render) render(JSON.parse(stateJson));
  },
  _bundlesChanged(deltaJson) {
    // One call per burst of plugin loads or unloads, with what changed: {added, removed}.
    const { added, removed } = JSON.parse(deltaJson);
    for (const id of removed) bundleMap.delete(id);
    for (const bundle of added) bundleMap.set(bundle.id, deepFreeze(bundle));
    toolBundles = Object.freeze([...bundleMap.values()]);
    warmWorkersFor(added);
    for (const listener of bundleListeners) listener(toolBundles);
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
  async _runPageCommand(key, id, argsJson) {
    try {
      const value = await pagePlugins.get(key).commands.get(id).execute(JSON.parse(argsJson));
      return JSON.stringify({ ok: true, value: value === undefined ? null : value });
    } catch (error) {
      return JSON.stringify({ ok: false, error: { type: error?.name || "Error", message: String(error?.message ?? error) } });
    }
  },
  _pageCommandEnabled(key, id) {
    const command = pagePlugins.get(key)?.commands.get(id);
    return command?.isEnabled ? Boolean(command.isEnabled()) : true;
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
    for (const bundle of JSON.parse(python.bundles())) bundleMap.set(bundle.id, deepFreeze(bundle));
    toolBundles = Object.freeze([...bundleMap.values()]);
    warmWorkersFor(toolBundles);
    settleReady.resolve(load);
  },
};

window.reactor = reactor;
addEventListener("error", (event) => { if (!python) fail(event.message); });
addEventListener("unhandledrejection", (event) => { if (!python) fail(String(event.reason?.message ?? event.reason)); });

async function boot() {
  report("Fetching the runtime list…");
  let response;
  try {
    response = await fetch(at("/app/boot.json"));
  } catch (error) {
    throw new Error(`the reactor server ${server} could not be reached from this page (${error.message}); `
      + `is it running, and does it allow this page's origin ${location.origin}?`);
  }
  if (!response.ok) throw new Error(`the server answered ${response.status} for /app/boot.json`);
  const config = embedded(await response.json());
  bootJson = JSON.stringify(config);
  if (!config.runtime.ready) throw new Error(config.runtime.error);
  // Pyodide is the long pole: its modules and our Python bundle are fetched now, and Python starts
  // before the plugins' views have loaded (start() waits for them). The bundle request is
  // python-bundle.js's fetchPythonBundle, written out so it need not wait for that module (which
  // can be held up behind Pyodide's start: the bundle then arrived after it, bench/RESULTS.md).
  pythonBundles = Promise.all(config.python.bundles.map(async (url) => {
    const answer = await fetch(url, { credentials: "same-origin" });
    if (!answer.ok) throw new Error(`${url} answered ${answer.status}`);
    return answer.arrayBuffer();
  }));
  pythonBundles.catch(() => {});  // reported when Python asks for them
  const interpreter = config.pyscript.interpreter;
  const early = new URL("./early-pyodide.js", import.meta.url).href;
  for (const href of config.runtime.preload) {
    document.head.append(Object.assign(document.createElement("link"), { rel: "modulepreload", href }));
  }
  const { startPyodide, prepare } = await import(early);
  // A failed boot is reported by PyScript, which awaits the same promise.
  startPyodide(interpreter, config.runtime.pyodide).catch(() => {});
  const installer = import("./python-bundle.js");
  prepare(async (pyodide) => {
    try {
      const [{ installPythonBundles }, bundles] = await Promise.all([installer, pythonBundles]);
      installPythonBundles(pyodide, bundles, config.python.site);
    } catch (error) {
      fail(`the page's Python could not be installed: ${error.message}`);
      throw error;
    }
  });
  // PyScript loads every plugin of the MicroPython type too unless its config says no.
  const mpyConfig = document.createElement("mpy-config");
  mpyConfig.setAttribute("type", "json");
  mpyConfig.textContent = JSON.stringify({ plugins: config.pyscript.plugins });
  document.head.append(mpyConfig);
  const script = document.createElement("script");
  script.type = "py";
  script.setAttribute("config", JSON.stringify({ ...config.pyscript, interpreter: early }));
  script.textContent = "from reactor.browser import start\nawait start()\n";
  document.body.append(script);
  report("Starting Python (Pyodide)…");
  await import(config.runtime.pyscript);
  // What Python needs only once it runs loads while Pyodide boots, after the runtime's own files.
  for (const href of config.plugins.flatMap((p) => p.styles)) {
    document.head.append(Object.assign(document.createElement("link"), { rel: "stylesheet", href }));
  }
  Promise.all(config.plugins.flatMap((p) => p.scripts).map((src) => import(src))).then(settleViews.resolve, settleViews.reject);
  const { AiToolWorkers } = await import("./ai-tools.js");
  aiToolWorkers = new AiToolWorkers({ interpreter, ...config.python, server });
  await viewsLoaded;
}

/**
 * The server's boot list as this page needs it: every URL absolute on the reactor server, only
 * the plugins the page's config names (all the server enables by default), the page's own
 * `<script type="reactor/python">` plugins, and the page's agent if it brings one.
 */
function embedded(config) {
  const pyscript = {
    ...config.pyscript,
    interpreter: at(config.pyscript.interpreter),
  };
  let plugins = config.plugins;
  if (Array.isArray(embed.plugins)) {
    const unknown = embed.plugins.filter((name) => !plugins.some((p) => p.name === name));
    if (unknown.length) {
      throw new Error(`this server has no plugin ${JSON.stringify(unknown[0])} enabled; it offers: `
        + `${plugins.map((p) => p.name).join(", ") || "none"}.`);
    }
    plugins = plugins.filter((p) => embed.plugins.includes(p.name));
  }
  plugins = plugins.map((p) => ({ ...p, scripts: p.scripts.map(at), styles: p.styles.map(at) }));
  const pagePython = [...document.querySelectorAll('script[type="reactor/python"]')].map((script, index) => ({
    source: script.id ? `#${script.id}` : `script ${index + 1}`,
    code: script.textContent,
  }));
  return {
    ...config, server, pyscript, plugins, pagePython,
    python: { ...config.python, bundles: config.python.bundles.map(at) },
    runtime: { ...config.runtime, pyscript: at(config.runtime.pyscript), preload: config.runtime.preload.map(at) },
    agent: embed.agent ?? config.agent,
  };
}

boot().catch((error) => fail(error.message));
