/**
 * The page's half of the messages between the main thread and the reactor worker; the worker's
 * half is reactor/protocol.py, which explains the four shapes (request, answer, cancel, notice).
 * Every message is one JSON text {v: VERSION, ...}.
 *
 * The constants below are reactor/messages.py's, the one declaration of every message the page's
 * parts send each other (this channel, the page's link for desktop agents, the AI Tool worker's),
 * written here so that the page's scripts import them without a request of their own;
 * tests/test_protocol.py fails when the two differ.
 */

export const VERSION = 1;

/** What the page asks the worker (each is answered), and what it tells it without an answer. */
export const PAGE_REQUESTS = new Set([
  "execute", "callTool", "definePlugin", "unloadPlugin", "commands", "commands.find", "bundles",
  "diagnostics",
  "chat.configure", "chat.label", "chat.send", "chat.tools", "chat.callTool", "chat.thread", "chat.resume",
]);
/** The `agents.*` notices drive the page's link for desktop agents, held by the worker's JavaScript. */
export const PAGE_NOTICES = new Set(["chat.stop", "panel.event", "panels.unload", "agents.open", "agents.send", "agents.close"]);
/** The envelope's own keys: a message's fields may not take them (reactor/protocol.py). */
export const ENVELOPE_KEYS = new Set(["v", "id", "re", "type"]);
/** What the worker asks the page (each is answered), and what it tells it. */
export const WORKER_REQUESTS = new Set([
  "page.openTab", "page.fullscreen", "pageCommand.run", "chat.approve", "page.storage", "aiTool.run", "panel.open",
  "panel.close",
]);
export const WORKER_NOTICES = new Set([
  "progress", "fail", "ready", "bundles.changed", "commands.changed", "page.show", "chat.event", "aiTool.warm",
  "panel.draw", "panel.listen", "panel.unlisten", "agents.socket", "agents.call",
]);

/**
 * The page's link for desktop agents (web/agents.js, web/agent-socket.js <-> the server's
 * reactor/server/agents/mcp.py): one JSON object {type, ...} per WebSocket message. Down: `hello`
 * {page}, `call` {call, tool, arguments, agent}, `cancel` {call}, `claimed` {call, ok}, `listed`
 * {tools}, `problem` {error}.
 */
export const LINK_DOWN = new Set(["hello", "call", "cancel", "claimed", "listed", "problem"]);
/** Up: `answer` {call, envelope}, `claim` {call}, `tools` {tools}, `active`, `where` {title, route}. */
export const LINK_UP = new Set(["answer", "claim", "tools", "active", "where"]);
/** How the link closes (reactor/messages.py says when each comes). */
export const LINK_CLOSE = Object.freeze({ normal: 1000, notOwnPage: 1008, serverStopping: 1012, signedOut: 4401, tooManyPages: 4429 });
/** The closes a page does not link again after: trying again would not help. @type {Set<number>} */
export const LINK_REFUSED = new Set([LINK_CLOSE.signedOut, LINK_CLOSE.tooManyPages]);
/** Characters of one message either way. */
export const LINK_MESSAGE_LIMIT = 2_000_000;

/** What the page tells an AI Tool worker (web/tool-workers.js -> web/ai-tool-worker.js), and what it tells the page. */
export const AI_TOOL_PAGE = new Set(["boot", "run", "abort"]);
export const AI_TOOL_WORKER = new Set(["booted", "boot-failed", "done"]);

/**
 * @typedef {{type?: string, message: string, command?: string, problems?: {path: string, message: string}[], display?: string}} ErrorDetail
 * @typedef {{v: number, id?: number, re?: number, type?: string, ok?: boolean, value?: any, error?: ErrorDetail, reason?: string, [field: string]: any}} Message
 * @typedef {(message: any, signal?: AbortSignal) => any} Handler  a notice comes without a signal
 */

/**
 * A failure the worker answered with: its Python error's class name, sentence, command and
 * problems, and `display`, the same failure in a person's words when the command gave them.
 */
export class ReactorError extends Error {
  /** @param {ErrorDetail} detail */
  constructor({ type, message, command, problems, display }) {
    super(message);
    this.name = type || "ReactorError";
    this.command = command;
    /** @type {{path: string, message: string}[] | undefined} */
    this.problems = problems;
    /** @type {string | undefined} */
    this.display = display;
  }
}

/**
 * A failure's detail as it crosses to the other side: its name and sentence (Python's side
 * makes its own in reactor/answer.py, which adds the command, problems and `display`).
 * @param {any} error
 */
export function errorDetail(error) {
  return { type: error?.name || "Error", message: String(error?.message ?? error) };
}

/**
 * The page's end of the channel to `worker`. `handlers[type](message, signal)` answers the
 * worker's requests (a value or a promise; a throw becomes the error Python raises) and takes
 * its notices.
 */
export class WorkerChannel {
  /**
   * @param {Worker} worker
   * @param {Record<string, Handler>} handlers
   */
  constructor(worker, handlers) {
    this.worker = worker;
    this.handlers = handlers;
    /** @type {Map<number, {resolve: (value: any) => void, reject: (error: Error) => void}>} */
    this.asked = new Map();
    /** @type {Map<number, AbortController>} the worker's request id -> its controller */
    this.running = new Map();
    this.nextId = 0;
    worker.addEventListener("message", ({ data }) => this.receive(data));
  }

  /**
   * Ask the worker; resolves with its answer's value. An abort of `signal` tells the worker to stop.
   * @param {string} type
   * @param {object} [fields]
   * @param {{signal?: AbortSignal}} [options]
   */
  request(type, fields = {}, { signal } = {}) {
    if (!PAGE_REQUESTS.has(type)) throw new TypeError(`${type} is not a request the page sends`);
    const taken = Object.keys(fields).find((key) => ENVELOPE_KEYS.has(key));
    if (taken) throw new TypeError(`${type}: a field may not be named ${taken}, the envelope's own`);
    const id = ++this.nextId;
    /** @type {{v: number, id: number, type: string, cancelled?: string}} */
    const message = { v: VERSION, id, type, ...fields };
    if (signal?.aborted) message.cancelled = reasonOf(signal);
    return new Promise((resolve, reject) => {
      this.asked.set(id, { resolve, reject });
      this.worker.postMessage(JSON.stringify(message));
      signal?.addEventListener("abort", () => {
        if (this.asked.has(id)) this.worker.postMessage(JSON.stringify({ v: VERSION, type: "cancel", re: id, reason: reasonOf(signal) }));
      }, { once: true });
    });
  }

  /**
   * Tell the worker something; no answer comes.
   * @param {string} type
   * @param {object} [fields]
   */
  notify(type, fields = {}) {
    if (!PAGE_NOTICES.has(type)) throw new TypeError(`${type} is not a notice the page sends`);
    this.worker.postMessage(JSON.stringify({ v: VERSION, type, ...fields }));
  }

  /** @param {string | Message} text */
  receive(text) {
    /** @type {Message} */
    const message = typeof text === "string" ? JSON.parse(text) : text;
    if (message.v !== VERSION) {
      this.handlers.fail?.({ v: VERSION, type: "fail", message: `the worker speaks protocol version ${message.v}, this page ${VERSION}; reload the page.` });
    } else if (message.re !== undefined && message.type === "cancel") {
      this.running.get(message.re)?.abort(new DOMException(message.reason, "AbortError"));
    } else if (message.re !== undefined) {
      const asked = this.asked.get(message.re);
      this.asked.delete(message.re);
      if (!asked) return;
      if (message.ok) asked.resolve(message.value);
      else asked.reject(new ReactorError(message.error ?? { message: "The worker failed and said nothing." }));
    } else if (message.id !== undefined) {
      this.answer(message, message.id, String(message.type));
    } else if (message.type !== undefined && WORKER_NOTICES.has(message.type)) {
      this.handlers[message.type]?.(message);
    }
  }

  /**
   * @param {Message} message
   * @param {number} id
   * @param {string} type
   */
  async answer(message, id, type) {
    const controller = new AbortController();
    this.running.set(id, controller);
    let reply;
    try {
      const handler = WORKER_REQUESTS.has(type) && this.handlers[type];
      if (!handler) throw Object.assign(new Error(`the page has no request type ${type}`), { name: "ProtocolError" });
      const value = await handler(message, controller.signal);
      reply = JSON.stringify({ v: VERSION, re: id, ok: true, value: value === undefined ? null : value });
    } catch (error) {
      reply = JSON.stringify({ v: VERSION, re: id, ok: false, error: errorDetail(error) });
    } finally {
      this.running.delete(id);
    }
    this.worker.postMessage(reply);
  }
}

/** @param {AbortSignal} signal */
function reasonOf(signal) {
  return String(signal.reason?.message ?? signal.reason ?? "aborted");
}
