/**
 * The page's link to the reactor server for the person's desktop agents (MCP at /mcp; the server
 * side is reactor/server/agents/mcp.py). One WebSocket per page: `hello` {page}, `call` {call,
 * tool, arguments, agent} and `cancel` {call} come down; answers, the tool list (acknowledged by
 * `listed`), "the person is using this page" and what it shows (title, route) go up. The socket
 * is held by the reactor worker (web/agent-socket.js), where a call runs as the chat's callTool
 * runs it — admission, validation and the person's approval — and is answered without waiting
 * for this thread; this thread drives the socket (a WorkerSocket) and hears the rest. When the
 * person allows an agent's write, this thread first claims its call (`claim` up, `claimed` {ok}
 * down): the server says yes only while the agent still waits for it, and the page runs nothing
 * otherwise (the agent was told it did not run; the withdrawal may not have come yet). A dropped
 * connection is made again with backoff (0.5 s doubling to 30 s), the calls it
 * brought withdrawn; a refusal (signed out, too many pages: LINK_REFUSED) is not retried. A server
 * that stops is linked again the same way: behind a balancer, another process takes it. A
 * socket that never opens, several times in a row, is asked about with a plain fetch of the same
 * address: the server's sentence (a proxy in front that does not pass WebSockets on is a 426
 * naming its settings) is the person's, and the link stops trying until they ask again.
 */

import { LINK_CLOSE, LINK_MESSAGE_LIMIT, LINK_REFUSED, LINK_UP } from "./protocol.js";

const BACKOFF_MS = [500, 30_000];
const ACTIVE_EVERY_MS = 10_000;
const ASK_WHY_AFTER = 3;  // sockets in a row that never opened before the page asks the server why

/**
 * @typedef {(type: string, fields: object) => void} Notify  tells the reactor worker (the socket's holder)
 * @typedef {{socket: number} & ({event: "open"} | {event: "message", text: string} | {event: "close"} & Closed)} SocketNotice
 *   what the worker says of the socket it holds (`agents.socket`)
 * @typedef {{type: string, [field: string]: any}} LinkMessage  one message down the link
 * @typedef {{code: number, reason: string}} Closed  how the link closed
 * @typedef {{name: string, title?: string}} Tool  a tool of the page, as the chat lists it
 * @typedef {{chat: {tools(): Promise<Tool[]>}, onAgentToolBundles(listener: () => void): () => void}} PageReactor
 *   what of window.reactor the link uses
 * @typedef {{resolve: (value: {pageId: string}) => void, reject: (error: Error) => void}} Waiting
 */

/** The page's window.reactor (web/reactor.js). */
const pageReactor = () => /** @type {{reactor: PageReactor}} */ (/** @type {unknown} */ (window)).reactor;

/** The worker's sockets, by number: what it says of each goes to it. @type {Map<number, WorkerSocket>} */
const sockets = new Map();
let nextSocket = 0;

/**
 * The socket the reactor worker holds for this page (web/agent-socket.js), as a WebSocket for
 * AgentLink: `open`, `message` (the messages the worker does not answer itself) and `close`;
 * `send`, `close`, `readyState`.
 */
class WorkerSocket extends EventTarget {
  /**
   * @param {URL} url
   * @param {Notify} notify
   */
  constructor(url, notify) {
    super();
    this.id = ++nextSocket;
    this.notify = notify;
    /** @type {number} */
    this.readyState = WebSocket.CONNECTING;
    /** @type {((message: {data: string}) => void) | null} */
    this.onmessage = null;
    /** @type {((closed: Closed) => void) | null} */
    this.onclose = null;
    sockets.set(this.id, this);
    notify("agents.open", { socket: this.id, url: String(url) });
  }

  /** @param {string} text */
  send(text) {
    this.notify("agents.send", { socket: this.id, text });
  }

  /**
   * Close it; the calls it brought are stopped with `reason`.
   * @param {number} code
   * @param {string} [reason]
   */
  close(code, reason = "") {
    if (this.readyState >= WebSocket.CLOSING) return;
    this.readyState = WebSocket.CLOSING;
    this.notify("agents.close", { socket: this.id, code, reason });
  }

  /** @param {SocketNotice} notice */
  heard(notice) {
    if (notice.event === "open") {
      this.readyState = WebSocket.OPEN;
      this.dispatchEvent(new Event("open"));
    } else if (notice.event === "message") {
      this.onmessage?.({ data: notice.text });
    } else if (notice.event === "close") {
      this.readyState = WebSocket.CLOSED;
      sockets.delete(this.id);
      this.onclose?.({ code: notice.code, reason: notice.reason });
    }
  }
}

class AgentLink {
  /**
   * @param {string} server the reactor server's URL
   * @param {Notify} notify
   */
  constructor(server, notify) {
    this.server = server;
    this.notify = notify;    // tells the reactor worker (the socket's holder)
    /** @type {string | null} */
    this.pageId = null;
    this.named = false;      // whether the server has acknowledged this page's tools
    this.wanted = false;
    this.generation = 0;     // one run() loop at a time: a disconnect then connect starts a new one
    /** @type {WorkerSocket | null} */
    this.socket = null;
    /** @type {Map<string, string>} */
    this.titles = new Map(); // tool name -> its title, as the palette shows it
    /** @type {Waiting[]} */
    this.waiting = [];       // connect() promises waiting for the server to have the page and its tools
    this.lastActive = 0;
    /** @type {(() => void) | null} */
    this.stopListening = null;
    this.onActivity = () => this.active();
    this.onMoved = () => this.moved();
    this.lastWhere = "";
    /** @type {MutationObserver | null} */
    this.titleWatch = null;
    /** @type {Map<string, (ok: boolean) => void>} call id -> resolves whether the server let this page run it */
    this.claims = new Map();
  }

  /**
   * Connect (again) and resolve {pageId} once the server has this page and its tools.
   * @returns {Promise<{pageId: string}>}
   */
  connect() {
    /** @type {Promise<{pageId: string}>} */
    const named = new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
    if (!this.wanted) {
      this.wanted = true;
      this.generation += 1;
      for (const type of ["focus", "pointerdown", "keydown"]) addEventListener(type, this.onActivity, true);
      addEventListener("hashchange", this.onMoved);
      this.titleWatch = new MutationObserver(this.onMoved);
      this.titleWatch.observe(document.head, { subtree: true, childList: true, characterData: true });
      this.stopListening = pageReactor().onAgentToolBundles(() => this.sendTools());
      this.run();
    } else if (this.pageId) {
      this.settle({ pageId: this.pageId });
    }
    return named;
  }

  /** Close the connection: calls still running are stopped, and the server fails them at once. */
  disconnect() {
    this.wanted = false;
    this.generation += 1;
    this.socket?.close(LINK_CLOSE.normal, "The page's agents switch was turned off.");
    for (const type of ["focus", "pointerdown", "keydown"]) removeEventListener(type, this.onActivity, true);
    removeEventListener("hashchange", this.onMoved);
    this.titleWatch?.disconnect();
    this.stopListening?.();
    this.settle(null, new Error("Disconnected."));
    this.pageId = null;
    this.unclaimed();
  }

  /**
   * Ask the server whether the page may run the agent's call `call` the person allowed: true
   * only while the agent waits for it (the server then no longer withdraws it). One round trip;
   * false at once with no open link, and when the link closes meanwhile.
   * @param {string} call
   * @returns {Promise<boolean>}
   */
  claim(call) {
    if (!this.pageId || this.socket?.readyState !== WebSocket.OPEN) return Promise.resolve(false);
    return new Promise((resolve) => {
      const asked = this.claims.get(call);
      this.claims.set(call, (ok) => { asked?.(ok); resolve(ok); });
      if (!asked) this.post(upText("claim", { call }));
    });
  }

  /** The link closed: no claim made on it will be answered, and none lets its call run. */
  unclaimed() {
    for (const resolve of this.claims.values()) resolve(false);
    this.claims.clear();
  }

  get connected() { return this.pageId !== null; }

  /**
   * @param {{pageId: string} | null} value
   * @param {Error} [error]
   */
  settle(value, error) {
    for (const { resolve, reject } of this.waiting.splice(0)) error ? reject(error) : resolve(/** @type {{pageId: string}} */ (value));
  }

  async run() {
    const generation = this.generation;
    const current = () => this.wanted && this.generation === generation;
    let delay = BACKOFF_MS[0];
    let unopened = 0;  // sockets in a row that never opened
    while (current()) {
      // The address without its query (what the person would not hand to an agent); where() says the route.
      const query = new URLSearchParams({ ...this.where(), url: (location.origin + location.pathname).slice(0, 500) });
      const address = new URL(`/api/agent-pages/link?${query}`, this.server);
      address.protocol = address.protocol === "https:" ? "wss:" : "ws:";
      const socket = new WorkerSocket(address, this.notify);
      let opened = false;
      socket.addEventListener("open", () => { opened = true; });
      // The worker withdraws the calls that came down a link that closed (the server has failed them).
      const closed = await this.hold(socket, () => { delay = BACKOFF_MS[0]; });
      if (!current()) break;
      if (LINK_REFUSED.has(closed.code)) {  // signed out, or too many pages: trying again will not help
        this.refuse(closed.reason || "The server refused this page's connection.");
        break;
      }
      unopened = opened ? 0 : unopened + 1;
      if (unopened >= ASK_WHY_AFTER) {
        const why = await whyNoSocket(address);
        if (!current()) break;
        if (why) {  // the server answers, but not as a WebSocket: trying again will not help
          this.refuse(`This page cannot open its link for your agents (a WebSocket). The server says: ${why}`);
          break;
        }
      }
      this.pageId = null;
      window.dispatchEvent(new CustomEvent("reactor:agents", { detail: { connected: false } }));
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, BACKOFF_MS[1]);
    }
  }

  /**
   * Hold one socket until it closes; resolves its CloseEvent.
   * @param {WorkerSocket} socket
   * @param {() => void} onHello
   * @returns {Promise<Closed>}
   */
  hold(socket, onHello) {
    this.socket = socket;
    socket.onmessage = ({ data }) => this.heard(JSON.parse(data), onHello);
    return new Promise((resolve) => {
      socket.onclose = (event) => {
        this.unclaimed();
        resolve(event);
      };
    });
  }

  /**
   * @param {LinkMessage} message
   * @param {() => void} onHello
   */
  heard(message, onHello) {
    if (message.type === "hello") {
      this.pageId = message.page;
      this.lastWhere = JSON.stringify(this.where());  // as the link's address said
      this.named = false;
      onHello();
      this.sendTools();
    } else if (message.type === "listed" && !this.named) {
      this.named = true;  // the server has the page and its tools: agents may call it now
      this.settle({ pageId: /** @type {string} */ (this.pageId) });  // `hello` came first
      window.dispatchEvent(new CustomEvent("reactor:agents", { detail: { connected: true, pageId: this.pageId } }));
    } else if (message.type === "claimed") {
      const resolve = this.claims.get(message.call);
      this.claims.delete(message.call);
      resolve?.(message.ok === true);
    } else if (message.type === "problem") {
      console.warn(`reactor agents: ${message.error}`);
    }
  }

  /**
   * The worker ran an agent's call: the Agents panel's line says which agent asked for what.
   * @param {{agent: string, tool: string, at: number}} call
   */
  called({ agent, tool, at }) {
    const detail = { agent, tool, title: this.titles.get(tool) ?? tool, at: new Date(at) };
    window.dispatchEvent(new CustomEvent("reactor:agent-call", { detail }));
  }

  async sendTools() {
    if (!this.pageId) return;
    const tools = await pageReactor().chat.tools();
    this.titles = new Map(tools.map((t) => [t.name, t.title ?? t.name]));
    const list = upText("tools", { tools });
    if (list.length <= LINK_MESSAGE_LIMIT) return this.post(list);
    // The server would keep the list it had, or none: the person is told, and the link closed.
    const count = tools.length.toLocaleString("en");
    const size = (list.length / 1e6).toFixed(1);
    this.refuse(`This page offers ${count} tools, more than your agents can be handed at once (their list `
      + `is ${size} million characters; the server takes ${LINK_MESSAGE_LIMIT / 1e6} million). Turn the switch `
      + "off and on again once it offers fewer.");
  }

  /**
   * Stop linking this page, saying why to whoever waits for the link and to the Agents panel.
   * @param {string} problem
   */
  refuse(problem) {
    this.settle(null, new Error(problem));
    this.disconnect();
    window.dispatchEvent(new CustomEvent("reactor:agents", { detail: { connected: false, problem } }));
  }

  /** What the page shows, for the agent choosing among the person's pages: its title and its
   * address's fragment, the app's route (#/decks/onboarding/4). */
  where() {
    // Only a fragment shaped like an app's route (#/decks/onboarding/4): another fragment may
    // hold what the person would not hand to an agent (a sign-in's token, a search).
    const route = /^#\/[\w\-./%~]*$/.test(location.hash) ? location.hash.slice(0, 500) : "";
    return { title: document.title.slice(0, 200), route };
  }

  /** Tell the server what the page shows now, when that changed. */
  moved() {
    const where = JSON.stringify(this.where());
    if (where === this.lastWhere) return;
    this.lastWhere = where;
    this.post(upText("where", this.where()));
  }

  active() {
    const now = Date.now();
    if (!this.pageId || now - this.lastActive < ACTIVE_EVERY_MS) return;
    this.lastActive = now;
    this.post(upText("active"));
  }

  /**
   * Send a message's JSON text (upText) up the socket, if it is open.
   * @param {string} text
   */
  post(text) {
    if (!this.pageId || this.socket?.readyState !== WebSocket.OPEN) return;
    this.socket.send(text);
  }
}

/**
 * A message up the link, as its JSON text; `type` is one the server takes (LINK_UP).
 * @param {string} type
 * @param {object} [fields]
 */
function upText(type, fields = {}) {
  if (!LINK_UP.has(type)) throw new TypeError(`${type} is not a message the page sends up its link`);
  return JSON.stringify({ type, ...fields });
}

/**
 * The server's sentence for a plain request of the link's address (`address` without its
 * query); null when there is none to read (the server unreachable, or an answer not its own).
 * @param {URL} address
 * @returns {Promise<string | null>}
 */
async function whyNoSocket(address) {
  const plain = new URL(address.pathname, address);
  plain.protocol = address.protocol === "wss:" ? "https:" : "http:";
  try {
    const answer = await fetch(plain, { cache: "no-store" });
    if (answer.ok) return null;
    const { error } = await answer.json();
    return typeof error === "string" && error ? error : null;
  } catch {
    return null;
  }
}

/** @type {AgentLink | null} */
let link = null;

/**
 * The page's one AgentLink to `server` (made on first use); `notify(type, fields)` tells the worker.
 * @param {string} server
 * @param {Notify} notify
 */
export function agentLink(server, notify) {
  link ??= new AgentLink(server, notify);
  return link;
}

/**
 * Whether the page may run the agent's call `call` the person allowed (AgentLink.claim); false
 * with no link.
 * @param {string} call
 * @returns {Promise<boolean>}
 */
export function claim(call) {
  return link ? link.claim(call) : Promise.resolve(false);
}

/**
 * What the worker says of a socket it holds (`agents.socket`) or of a call it ran (`agents.call`).
 * @param {any} message
 */
export function fromWorker(message) {
  if (message.type === "agents.call") link?.called(message);
  else sockets.get(message.socket)?.heard(message);
}
