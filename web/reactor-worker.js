/**
 * The dedicated module Worker where reactor's Python runs, so that booting Pyodide and running
 * plugins never holds the host page's main thread (web/early-worker.js starts it).
 *
 * This file only boots: the module the worker starts from calls `startPyodide` as it runs, and
 * the page's first message {type: "boot", config} brings the rest of /app/boot.json; then the
 * Python bundle is written in, `reactor.browser.start` takes over, and every later message goes
 * to Python (reactor/protocol.py): a call (its CALLS) with its envelope read here, anything else
 * as it came. Until then, progress and the first failure go to the page as the protocol's
 * `progress` and `fail` notices. The page's link for desktop agents is held here too
 * (web/agent-socket.js): its `agents.*` notices never reach Python's channel.
 *
 * The protocol's version is not written here (this file imports nothing it need not at boot):
 * the worker speaks the version of the page's boot message, then the one Python says it speaks
 * (reactor/messages.py), which the page checks.
 */

import { bootPyodide } from "./pyodide-boot.js";

let version = null;  // the protocol's: the boot message's, then Python's (speak)
const waiting = [];  // messages that came before Python could take them
let take = null;  // Python's WorkerEndpoint.take
let takeCall = null;  // and its take_call, for the CALLS: {type: the field that names what to run}
let calls = {};
let agentCall = null;  // and its AgentCalls, for the page's link for desktop agents
let agentCancel = null;
let agentSocket = null;  // web/agent-socket.js's AgentSocket, made at the link's first notice
let agents = null;  // how the page's notices to the link begin
let pyodide = null;
let config = null;

/** Speak the protocol's version `v` from now on. */
function speak(v) {
  version = v;
  agents = `{"v":${v},"type":"agents.`;
}

const notice = (type, fields) => postMessage(JSON.stringify({ v: version, type, ...fields }));
/** A boot step done: the page marks it as `reactor:<phase>` on its own clock. */
const reached = (phase, text) => notice("progress", { text, phase, at: performance.timeOrigin + performance.now() });

/** Start Pyodide's boot from `interpreter` (its pyodide.mjs), restored from `snapshot` if named. */
export function startPyodide(interpreter, snapshot) {
  pyodide ??= import(interpreter).then(({ loadPyodide }) => bootPyodide(loadPyodide, new URL(".", interpreter).href, snapshot, downloadShown()));
  return pyodide;
}

const DOWNLOAD_SHOWN_EVERY_MS = 500;  // and not at all when the download takes less

/**
 * What the snapshot's download tells the page, as it goes: its share every DOWNLOAD_SHOWN_EVERY_MS
 * once the page listens (it has sent the boot message), then that Python starts.
 */
function downloadShown() {
  let [last, shown, finished] = [performance.now(), false, false];
  return (share) => {
    const now = performance.now();
    if (finished) return;
    if (share >= 1) {
      finished = true;
      if (shown) notice("progress", { text: "Starting Python (Pyodide)…" });
    } else if (config && now - last >= DOWNLOAD_SHOWN_EVERY_MS) {
      [last, shown] = [now, true];
      notice("progress", { text: `Downloading Python… ${Math.floor(share * 100)} %` });
    }
  };
}

async function boot(bootConfig) {
  const bundles = Promise.all(bootConfig.python.bundles.map(async (url) => {
    const answer = await fetch(url, { credentials: "same-origin" });
    if (!answer.ok) throw new Error(`${url} answered ${answer.status}`);
    return answer.arrayBuffer();
  }));
  bundles.catch(() => {});  // reported below, once awaited
  const preloaded = preloads(bootConfig);
  const installer = import("./python-bundle.js");  // not on the way to Pyodide's first download
  installer.catch(() => {});
  const { pyodide: python, restored } = await startPyodide(bootConfig.runtime.interpreter, bootConfig.runtime.snapshot);
  reached("pyodide-ready", "Installing reactor's Python…");
  // What Pyodide imported by itself: the page's start-up check asks which modules came after.
  // Restored, Python runs only compiled code here: the compiler's first run costs ~15 ms.
  const atBoot = restored ? python.pyimport("reactor.on_demand").modules() : python.runPython("import sys\n','.join(sys.modules)");
  let installLater;  // restored: the files are written once the page is ready (undefined is None)
  try {
    const { installPythonBundles, installPythonBundlesLater } = await installer;
    const buffers = await bundles;
    if (restored) {
      const install = installPythonBundlesLater(python, buffers, bootConfig.python.site);
      installLater = () => setTimeout(install);  // after what the page already asked
    } else {
      installPythonBundles(python, buffers, bootConfig.python.site);
    }
  } catch (error) {
    throw new Error(`the page's Python could not be installed: ${error.message}`, { cause: error });
  }
  reached("python-installed", "Importing reactor…");
  const start = python.pyimport("reactor.browser").start;
  const config = JSON.stringify({ ...bootConfig, preloaded: await preloaded });
  const started = start(config, atBoot, restored, installLater);
  ({ take, takeCall, calls, agentCall, agentCancel } = started);
  speak(started.version);
  for (const text of waiting.splice(0)) deliver(text);
}

/**
 * [path, status, text] of each GET the plugins' starts make (their declarations' `preload`),
 * fetched while Pyodide restores, as Python would (reactor/http.py Preloaded takes them); one
 * that could not be fetched is left for Python to ask for.
 */
function preloads(bootConfig) {
  const paths = [...new Set(bootConfig.plugins.flatMap((plugin) => plugin.preload ?? []))];
  return Promise.all(paths.map(async (path) => {
    try {
      const answer = await fetch(new URL(path, bootConfig.server), { credentials: "include", headers: { "content-type": "application/json" } });
      return [path, answer.status, await answer.text()];
    } catch {
      return null;
    }
  })).then((answers) => answers.filter(Boolean));
}

/** A message to Python; an answer it has at once comes back as text, posted from here. */
function deliver(text) {
  const call = asCall(text);
  const reply = call ? takeCall(...call) : take(text);
  if (reply !== undefined) postMessage(reply);
}

/**
 * [type, id, name, arguments' text] of a call without a signal, whose envelope is in order; for
 * anything else null, and Python reads the message whole (and answers what is wrong with it).
 */
function asCall(text) {
  let message;
  try {
    message = JSON.parse(text);
  } catch {
    return null;
  }
  const field = message && Object.hasOwn(calls, message.type) ? calls[message.type] : null;
  if (!field || message.v !== version || !Number.isSafeInteger(message.id) || "cancelled" in message || message.cancellable) return null;
  const name = message[field];
  const args = message.args;
  if (typeof name !== "string" || args === undefined) return null;
  return [message.type, message.id, name, typeof args === "string" ? args : JSON.stringify(args)];
}

/** A notice of the page to its link for desktop agents (sent once the page is ready). */
function toAgentSocket(text) {
  agentSocket ??= import("./agent-socket.js").then(({ AgentSocket }) => new AgentSocket({
    agentCall: (...args) => agentCall(...args),
    agentCancel: (...args) => agentCancel(...args),
  }, notice));
  const message = JSON.parse(text);
  agentSocket.then((socket) => socket.take(message));
}

onmessage = ({ data }) => {
  if (agents && typeof data === "string" && data.startsWith(agents)) return toAgentSocket(data);
  if (take) return deliver(data);
  const message = typeof data === "string" ? JSON.parse(data) : data;
  if (message.type === "boot" && !config) {
    speak(message.v);
    config = message.config;
    boot(config).catch((error) => notice("fail", { message: error.message, detail: error.stack ?? "" }));
  } else {
    waiting.push(data);
  }
};
