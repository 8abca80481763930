/**
 * window.reactor: the page's door into the Python reactor.
 *
 * reactor's Python runs in a Web Worker (web/reactor-worker.js, booting the self-hosted Pyodide
 * the server lists in /app/boot.json), so the host page's main thread is never held. This file
 * starts it, shows progress and boot errors on the page, and turns every call into a message
 * (web/protocol.js) whose answer is plain JS data. What stays here is what must: the views'
 * renderers, the page services that need the person's gesture (tabs, full screen), and the
 * functions of plugins the page defines in JavaScript. Everything that decides lives in Python.
 *
 * Any page may include it from a reactor server that allows the page's origin (`reactor serve
 * --allow-origin`): every URL resolves against that server, the origin this file came from,
 * unless `window.reactorConfig = {server, plugins, agent}` set before the include says otherwise.
 */

import { ReactorError, VERSION, WorkerChannel } from "./protocol.js";

const embed = window.reactorConfig ?? {};
/** The reactor server's root, e.g. "http://127.0.0.1:8000/": where runtime, plugins and APIs are. */
const server = new URL(embed.server ?? "/", import.meta.url).href;
const at = (url) => new URL(url, server).href;
const progress = /** @type {HTMLElement | null} */ (document.querySelector("[data-reactor-progress]"));
const started = performance.now();
const bundleListeners = new Set();
const commandListeners = new Set();
const views = new Map();
const viewElements = new Map();  // view name -> its element, for full screen
const pagePlugins = new Map();  // key -> {name, commands: Map(id -> the page's command), dispose}
const pageCommands = new Map();  // id -> the page's command, of the plugin that registered it
let nextPluginKey = 0;
let channel = null;  // to the reactor worker, once boot.json has named it
let python = false;  // true once the worker's Python is ready
let aiToolWorkers = null;
let panels = null;  // web/panels.js's Panels, imported when the first UI plugin panel opens
let settleViews;
const viewsLoaded = new Promise((resolve, reject) => { settleViews = { resolve, reject }; });
viewsLoaded.catch(() => {});  // boot() reports it
let toolBundles = null;  // a frozen snapshot of the bundles, made once per burst of changes
const bundleMap = new Map();  // id -> frozen bundle: what Python's deltas apply to (10,000 tools are 4 MB of JSON)
let chatApprover = null;
let settleReady;
let agents = null;  // web/agents.js, imported when the page first links for desktop agents
const agentsModule = () => (agents ??= import("./agents.js"));
const notifyWorker = (type, fields) => channel.notify(type, fields);

export { ReactorError };

function report(text, state = "loading") {
  if (!progress) return;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  progress.dataset.state = state;
  progress.textContent = state === "loading" ? `${text} (${seconds} s)` : text;
}

let readyState = null;  // {seconds, loaded, failures} once ready: the progress line's words

/** The progress line once ready: every plugin the page has now, those it defined later too. */
function sayReady() {
  const { seconds, loaded, failures } = readyState;
  if (failures.length) report(`Ready in ${seconds} s, but: ${failures.join(" ")}`, "warning");
  else report(`Ready in ${seconds} s: ${loaded.join(", ") || "no plugins"}.`, "ready");
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

// Change notices heard from the worker, by number: a definition resolves once the page has the
// notice that carries it, so agentToolBundles() right after it lists its tools.
let noticesHeard = 0;
const noticeWaiters = [];  // [number, resolve]

function heard(notice) {
  noticesHeard = Math.max(noticesHeard, notice);
  for (const waiter of noticeWaiters.filter(([number]) => number <= noticesHeard)) {
    noticeWaiters.splice(noticeWaiters.indexOf(waiter), 1);
    waiter[1]();
  }
}

/** Call each listener; one that throws is reported and hurts neither the others nor the caller. */
function tell(listeners, ...args) {
  for (const listener of listeners) {
    try {
      listener(...args);
    } catch (error) {
      console.error("a reactor listener failed:", error);
    }
  }
}

/** The answer of a request whose changes come in a notice: {answer, notice} -> answer, once heard. */
async function noticed(request) {
  const { answer, notice } = await request;
  if (notice > noticesHeard) await new Promise((resolve) => noticeWaiters.push([notice, resolve]));
  return answer;
}

/** Commands as Python described them; a page command asks its own isEnabled (the page now). */
function withPageState(commands) {
  for (const command of commands) {
    const defined = pageCommands.get(command.id);
    if (defined?.isEnabled) command.available = Boolean(defined.isEnabled({}));
  }
  return commands;
}

function named(name, message) {
  return Object.assign(new Error(message), { name });
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
    return channel.request("execute", { command: id, args: args ?? {} });
  },

  /**
   * Call a tool by its model name, as an agent would: resolves with the envelope
   * {ok: true, result} or {ok: false, error: {code, message, ...}}; never rejects for a tool's failure.
   * Pass {signal} (an AbortSignal) to stop it.
   * @param {string} name
   * @param {object | string} [args]
   * @param {{signal?: AbortSignal}} [options]
   */
  async callTool(name, args = {}, { signal } = {}) {
    await ready;
    const text = typeof args === "string" ? args : JSON.stringify(args ?? {});
    return channel.request("callTool", { name, args: text, cancellable: Boolean(signal) }, { signal });
  },

  /**
   * The page's chat host, for the chat widget (web/chat.js) or any other UI: events arrive as
   * `reactor:chat` events on window; `approver(request, signal, claim)` must resolve "allow",
   * "always" or "deny". `claim`, for a desktop agent's call, resolves whether the agent still
   * waits for it (an allowed call it stopped waiting for does not run; the approver may say so).
   */
  chat: {
    /**
     * Choose the chat's model; `unlessChosen`: only if none was chosen yet (the widget's first
     * choice). Resolves with {chosen, label, examples, provider, providers}; settings that cannot
     * be used reject with a ReactorError (`SettingsError`) saying what to change.
     */
    async configure(settings, { unlessChosen = false } = {}) {
      await ready;
      return channel.request("chat.configure", { settings, unlessChosen });
    },
    async label() { await ready; return channel.request("chat.label"); },
    async send(text) { await ready; return channel.request("chat.send", { text }); },
    /**
     * The chat's conversations (web/threads.js draws them): `op` is restore, list, open, new,
     * rename, delete, export, refresh, signedIn or keep (reactor.host.conversations).
     * @param {string} op
     * @param {object} [fields]
     */
    async thread(op, fields = {}) { await ready; return channel.request("chat.thread", { ...fields, op }); },
    /** Go on with the turn a reload cut: an approval asked again, the reply re-attached, or Continue. */
    async resume() { await ready; return channel.request("chat.resume"); },
    stop() { if (python) channel.notify("chat.stop"); },
    async tools() { await ready; return channel.request("chat.tools"); },
    /**
     * @param {string} name
     * @param {object} args
     * @param {{signal?: AbortSignal}} [options]
     */
    async callTool(name, args, { signal } = {}) {
      await ready;
      return channel.request("chat.callTool", { name, args: JSON.stringify(args ?? {}) }, { signal });
    },
    setApprover(approver) { chatApprover = approver; },
  },

  /**
   * The person's desktop agents (MCP at the server's /mcp) reach this page's chat tools:
   * `connect()` resolves {pageId} (the person must be signed in), `disconnect()` ends it (web/agents.js).
   */
  agents: {
    async connect() { await ready; return (await agentsModule()).agentLink(server, notifyWorker).connect(); },
    async disconnect() { (await agentsModule()).agentLink(server, notifyWorker).disconnect(); },
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
    return withPageState(await channel.request("commands"));
  },

  /**
   * What a palette draws: {commands, matching}, the first `limit` commands whose id or label
   * holds `words` (any case), with those of `include` that match too (an open form's command),
   * and how many match in all. Only these are described, however many commands there are.
   * @param {string} [words]
   * @param {{limit?: number, include?: string[]}} [options]
   */
  async findCommands(words = "", { limit = 100, include = [] } = {}) {
    await ready;
    const found = await channel.request("commands.find", { words, limit, include });
    withPageState(found.commands);
    return found;
  },

  /**
   * Add a plugin written in JavaScript in this page. Its commands run as JS (Python's handler awaits
   * `execute(args)`; arguments and result cross as JSON), are listed beside Python's, and its
   * AgentTools bundle is listed with the others. A command with a tool is declared by that tool
   * (its description and parameters are the tool's; the command adds its label), the others by
   * the command itself. The same rules as for Python plugins apply: a refused declaration
   * rejects with a ReactorError (e.g. `DeclarationError`) and nothing of it is registered.
   * Resolves with {name, commands, tools}.
   *
   * @param {{name: string, description?: string, requires?: string[],
   *   commands?: Array<{id: string, label?: string, description?: string, parameters?: object,
   *                     execute: (args: object) => any, isEnabled?: (args: object) => boolean}>,
   *   agentTools?: {id: string, name: string, description?: string, toolset?: string[],
   *                 commands: Array<{name: string, command: string, label?: string, description: string,
   *                                  parameters?: object, sideEffect?: string}>},
   *   dispose?: () => void}} plugin `dispose` runs when the plugin is unloaded
   */
  async definePlugin(plugin) {
    await ready;
    // Nothing given reads as a declaration without a name, which Python refuses.
    const { commands, dispose, ...declaration } = plugin ?? /** @type {typeof plugin} */ ({});
    const key = `${declaration.name}#${++nextPluginKey}`;
    const list = Array.isArray(commands) ? commands : [];
    pagePlugins.set(key, { name: declaration.name, commands: new Map(list.map((c) => [c?.id, c])), dispose });
    try {
      // Functions stay here; Python learns only that they are functions (or what they are instead).
      const described = Array.isArray(commands) ? commands.map(describeCommand) : commands;
      const text = JSON.stringify({ ...declaration, ...(commands === undefined ? {} : { commands: described }) });
      const defined = await noticed(channel.request("definePlugin", { declaration: text, key }));
      for (const [id, command] of pagePlugins.get(key)?.commands ?? []) {
        if (!pageCommands.has(id)) pageCommands.set(id, command);
      }
      readyState.loaded.push(defined.name);
      sayReady();
      return defined;
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
    const gone = await noticed(channel.request("unloadPlugin", { name }));
    readyState.loaded = readyState.loaded.filter((loaded) => !gone.includes(loaded));
    sayReady();
    for (const [key, entry] of pagePlugins) {
      if (!gone.includes(entry.name)) continue;
      pagePlugins.delete(key);
      for (const [id, command] of entry.commands) {
        if (pageCommands.get(id) === command) pageCommands.delete(id);
      }
      entry.dispose?.();
    }
    return gone;
  },

  /**
   * Call `listener(bundles, change)` whenever plugins load or unload: `bundles` is the frozen
   * snapshot, `change` what changed, `{added, removed}` (the bundles that came or were replaced,
   * the ids of those that went), so a listener can do only that much. Returns an unsubscribe
   * function.
   */
  onAgentToolBundles(listener) {
    bundleListeners.add(listener);
    return () => bundleListeners.delete(listener);
  },

  /** Call `listener()` whenever commands are added or removed; returns an unsubscribe function. */
  onCommandsChanged(listener) {
    commandListeners.add(listener);
    return () => commandListeners.delete(listener);
  },

  /**
   * Let a plugin's renderer draw its view: `render(state)` runs on each `page.show(view, state)`.
   * `element`, when given, is what goes full screen when the plugin asks for it (else the page).
   * @param {string} name
   * @param {(state: any) => void} render
   * @param {{element?: Element}} [options]
   */
  defineView(name, render, { element } = {}) {
    views.set(name, render);
    if (element) viewElements.set(name, element);
  },

  /** Which modules the worker's Python imported after Pyodide's boot, and which it compiled itself. */
  async diagnostics() {
    await ready;
    return channel.request("diagnostics");
  },
};

/** What the worker asks of the page, and what it tells it (web/protocol.js declares the types). */
const fromWorker = {
  progress({ text, phase, at }) {
    // The worker's clock starts later than the page's: its time is sent as an absolute one.
    if (phase) performance.mark(`reactor:${phase}`, { startTime: at - performance.timeOrigin });
    report(text);
  },
  fail: ({ message, detail }) => fail(message, detail),
  async ready({ loaded, failures, bundles }) {
    for (const bundle of bundles) bundleMap.set(bundle.id, deepFreeze(bundle));
    toolBundles = Object.freeze([...bundleMap.values()]);
    try {
      await viewsLoaded;
    } catch {
      return;  // boot() reports it
    }
    python = true;
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    readyState = { seconds, loaded: [...loaded], failures };
    sayReady();
    settleReady.resolve({ loaded, failures });
  },
  "bundles.changed"({ delta, notice }) {
    // One notice per burst of plugin loads or unloads, with what changed: {added, removed}.
    for (const id of delta.removed) bundleMap.delete(id);
    for (const bundle of delta.added) bundleMap.set(bundle.id, deepFreeze(bundle));
    toolBundles = Object.freeze([...bundleMap.values()]);
    heard(notice);
    const { added, removed } = delta;
    const change = Object.freeze({ added: Object.freeze(added), removed: Object.freeze(removed) });
    tell(bundleListeners, toolBundles, change);
  },
  "commands.changed"({ notice }) {
    heard(notice);
    tell(commandListeners);
  },
  "page.show"({ view, state }) {
    // Views load beside Python's boot; a view shown before its renderer came is drawn when it comes.
    viewsLoaded.then(() => {
      views.get(view)?.(state);
      window.dispatchEvent(new CustomEvent("reactor:shown", { detail: { view } }));  // the palette redraws
    }, () => {});
  },
  "chat.event"({ event }) {
    window.dispatchEvent(new CustomEvent("reactor:chat", { detail: event }));
  },
  "page.openTab"({ url }) {
    // Not "noopener": with it window.open always returns null, and we could not tell a block.
    const opened = window.open(url, "_blank");
    if (!opened) return false;
    opened.opener = null;
    return true;
  },
  async "page.fullscreen"({ view }) {
    try {
      await (viewElements.get(view) ?? document.documentElement).requestFullscreen();
      return "";
    } catch (error) {
      return error?.message || "the browser refused full screen";
    }
  },
  async "chat.approve"({ request }, signal) {
    // The widget answers "allow", "always" or "deny"; with no widget on the page, nothing is approved.
    // `signal` aborts when the call stops waiting (its agent gave up, the person pressed Stop).
    if (!chatApprover) return "deny";
    // A desktop agent's call is claimed from the server once allowed (web/agents.js), whatever
    // the approver: `claim()` (asked once) is false when the agent stopped waiting, and then the
    // call does not run. The widget claims it itself, to tell the person.
    const call = request.agentCall;
    let claimed = null;
    const claim = call ? () => (claimed ??= agentsModule().then((module) => module.claim(call))) : null;
    const decision = await chatApprover(request, signal, claim);
    if (claim && (decision === "allow" || decision === "always") && !(await claim())) return "deny";
    return decision;
  },
  "page.storage"({ op, key, value }) {
    // The chat's conversations of a signed-out person: this origin's storage (reactor.host.threads).
    if (op === "get") return localStorage.getItem(key);
    if (op === "set") localStorage.setItem(key, value);
    else localStorage.removeItem(key);
    return null;
  },
  async "pageCommand.run"({ key, command, args }) {
    const defined = pagePlugins.get(key)?.commands.get(command);
    if (defined?.isEnabled && !defined.isEnabled(args)) {
      throw named("CommandUnavailableError",
        `The command '${command}' is unavailable right now: it is disabled in the current state of the page`);
    }
    return defined.execute(args);
  },
  "aiTool.run"({ job }, signal) {
    return aiToolWorkers.run(job, signal);
  },
  "aiTool.warm"() {
    // A plugin offers AI Tools: a worker boots once the page is ready (not slowing its start),
    // so the first call does not wait for it.
    ready.then(() => aiToolWorkers?.warm(), () => {});
  },
  async "panel.open"({ panel }) {
    if (!panels) {
      const { Panels } = await import("./panels.js");
      panels ??= new Panels(server, (type, fields) => channel.notify(type, fields));
    }
    return panels.add(panel);
  },
  "panel.close": (message) => panels?.remove(message) ?? { disposed: false },
  // The page's link for desktop agents, which the worker holds (web/agents.js, web/agent-socket.js).
  "agents.socket": (message) => agentsModule().then((module) => module.fromWorker(message)),
  "agents.call": (message) => agentsModule().then((module) => module.fromWorker(message)),
  "panel.draw": (message) => panels?.draw(message),
  "panel.listen": (message) => panels?.listen(message),
  "panel.unlisten": (message) => panels?.unlisten(message),
};

window.reactor = reactor;
addEventListener("pagehide", () => {
  // UI plugin panels go with the page: JavaScript disposes run here, Python ones in the worker.
  if (!panels) return;
  panels.removeAll();
  if (python) channel.notify("panels.unload");
});
addEventListener("error", (event) => { if (!python) fail(event.message); });
addEventListener("unhandledrejection", (event) => { if (!python) fail(String(event.reason?.message ?? event.reason)); });

async function boot() {
  report("Fetching the runtime list…");
  let response;
  try {
    response = await fetch(at("/app/boot.json"));
  } catch (error) {
    throw new Error(`the reactor server ${server} could not be reached from this page (${error.message}); `
      + `is it running, and does it allow this page's origin ${location.origin}?`, { cause: error });
  }
  if (!response.ok) throw new Error(`the server answered ${response.status} for /app/boot.json`);
  const config = embedded(await response.json());
  if (!config.runtime.ready) throw new Error(config.runtime.error);
  // Pyodide is the long pole: the worker started it from index.html's head, or starts it now.
  const { startWorker } = await import("./early-worker.js");
  const worker = startWorker(config.runtime.interpreter, config.runtime.snapshot);
  worker.addEventListener("error", (event) => fail(`the reactor worker could not start: ${event.message ?? "its script failed to load"}`));
  channel = new WorkerChannel(worker, fromWorker);
  worker.postMessage({ v: VERSION, type: "boot", config });  // the worker speaks this version until its Python says its own
  report("Starting Python (Pyodide)…");
  // What Python needs only once it runs loads while Pyodide boots, after the runtime's own files.
  for (const href of config.plugins.flatMap((p) => p.styles)) {
    document.head.append(Object.assign(document.createElement("link"), { rel: "stylesheet", href }));
  }
  const scripts = Promise.all(config.plugins.flatMap((p) => p.scripts).map((src) => import(src)));
  const tools = import("./tool-workers.js").then(({ AiToolWorkers }) => {
    aiToolWorkers = new AiToolWorkers({ ...config.python, interpreter: config.runtime.interpreter, snapshot: config.runtime.snapshot, server });
  });
  Promise.all([scripts, tools]).then(settleViews.resolve, settleViews.reject);
  await viewsLoaded;
}

/**
 * The server's boot list as this page needs it: every URL absolute on the reactor server, only
 * the plugins the page's config names (all the server enables by default), the page's own
 * `<script type="reactor/python">` plugins, and the page's agent if it brings one.
 */
function embedded(config) {
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
    ...config, server, plugins, pagePython,
    python: { ...config.python, bundles: config.python.bundles.map(at) },
    runtime: { ...config.runtime, interpreter: at(config.runtime.interpreter), snapshot: config.runtime.snapshot && at(config.runtime.snapshot) },
    agent: embed.agent ?? config.agent,
  };
}

boot().catch((error) => fail(error.message));
