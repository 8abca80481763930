/**
 * The page's link for desktop agents (its WebSocket to the reactor server), held in the reactor
 * worker; web/agents.js drives it from the main thread by the `agents.open`, `agents.send` and
 * `agents.close` notices. A `call` that comes down runs here, in Python
 * (reactor/browser/agent_calls.py AgentCalls: the chat's own callTool, admission, validation and
 * the person's approval), and its answer goes up at once: a call never waits for the main thread,
 * which may be drawing, unless the person must approve it (the chat asks them there). The main
 * thread hears the link's other messages, its opening and its closing (`agents.socket`), and the
 * Agents panel's line of the last call, at most once a second (`agents.call`): told after the
 * answer has gone for a quick call, while it waits for one that takes longer.
 */

import { LINK_CLOSE, LINK_MESSAGE_LIMIT as MESSAGE_LIMIT } from "./protocol.js";

const TELL_WAITING_MS = 100;  // a call not answered by then is shown while it runs
const TELL_EVERY_MS = 1000;  // the Agents panel's line names the second: a burst of calls is told once a second
const LINK_LOST = "The page's link to the server was lost.";

/**
 * @typedef {{type: "agents.open", socket: number, url: string}
 *   | {type: "agents.send", socket: number, text: string}
 *   | {type: "agents.close", socket: number, code?: number, reason?: string}} Notice  one of the main thread's
 * @typedef {{call: string, tool: unknown, arguments?: unknown, agent: string}} Call  a `call` down the link
 */

export class AgentSocket {
  /**
   * @param {{agentCall: Function, agentCancel: Function}} python the worker's Python (reactor.browser.start)
   * @param {(type: string, fields: object) => void} notice tells the main thread
   */
  constructor(python, notice) {
    this.python = python;
    this.notice = notice;
    /** @type {WebSocket | null} */
    this.socket = null;
    this.id = 0;  // the main thread's number for the socket held now
    /** @type {Set<string>} */
    this.running = new Set();  // the calls running, by id
    /** @type {Set<string>} */
    this.aborted = new Set();  // those of them stopped
    this.toldAt = -Infinity;  // when the main thread last heard of a call
    /** @type {object | null} */
    this.untold = null;  // the latest call since, told when a second has passed
    this.telling = 0;  // the timer that tells it
  }

  /**
   * A notice of the main thread: agents.open {socket, url}, agents.send {socket, text}, agents.close {socket, code, reason}.
   * @param {Notice} message
   */
  take(message) {
    if (message.type === "agents.open") this.open(message.socket, message.url);
    else if (message.socket !== this.id || !this.socket) return;
    else if (message.type === "agents.send") this.send(message.text);
    else if (message.type === "agents.close") {
      this.withdraw(message.reason || LINK_LOST);
      this.socket.close(message.code);
    }
  }

  /**
   * @param {number} id the main thread's number for the socket
   * @param {string} url
   */
  open(id, url) {
    this.socket?.close(LINK_CLOSE.normal);
    this.withdraw(LINK_LOST);
    const socket = new WebSocket(url);
    [this.socket, this.id] = [socket, id];
    socket.onopen = () => this.notice("agents.socket", { socket: id, event: "open" });
    socket.onmessage = ({ data }) => this.heard(id, socket, data);
    socket.onclose = ({ code, reason }) => {
      if (this.socket === socket) {
        // The calls that came down this link can no longer be answered: their questions are
        // withdrawn, and none runs after (the server has failed them).
        this.withdraw(LINK_LOST);
        this.socket = null;
      }
      this.notice("agents.socket", { socket: id, event: "close", code, reason });
    };
  }

  /** @param {string} text sent on the socket held (take() calls this only while one is) */
  send(text) {
    if (/** @type {WebSocket} */ (this.socket).readyState === WebSocket.OPEN) /** @type {WebSocket} */ (this.socket).send(text);
  }

  /**
   * @param {number} id
   * @param {WebSocket} socket
   * @param {string} text
   */
  heard(id, socket, text) {
    let message = null;
    try {
      message = JSON.parse(text);
    } catch {
      // the main thread reads it, and says what was wrong
    }
    if (message?.type === "call") this.run(socket, message);
    else if (message?.type === "cancel") this.cancel(message.call, "The agent stopped this call.");
    else this.notice("agents.socket", { socket: id, event: "message", text });
  }

  /**
   * @param {string} call
   * @param {string} reason
   */
  cancel(call, reason) {
    if (!this.running.has(call)) return;
    this.aborted.add(call);
    this.python.agentCancel(call, reason);
  }

  /**
   * The link's calls end: those running are stopped, and the last one is not told (its person
   * may have gone).
   * @param {string} reason
   */
  withdraw(reason) {
    for (const call of [...this.running]) this.cancel(call, reason);
    clearTimeout(this.telling);
    [this.telling, this.untold] = [0, null];
  }

  /**
   * The Agents panel's line of the last call, at most once a second (a busy agent's hundreds of
   * calls a second cost the main thread one message a second, not one each).
   * @param {object} detail
   */
  tellCall(detail) {
    this.untold = detail;
    if (this.telling) return;
    const wait = this.toldAt + TELL_EVERY_MS - performance.now();
    if (wait <= 0) this.tellLatest();
    else this.telling = setTimeout(() => this.tellLatest(), wait);
  }

  tellLatest() {
    this.telling = 0;
    this.toldAt = performance.now();
    this.notice("agents.call", /** @type {object} */ (this.untold));
    this.untold = null;
  }

  /**
   * @param {WebSocket} socket
   * @param {Call} message
   */
  async run(socket, { call, tool, arguments: args, agent }) {
    const detail = { agent, tool, at: Date.now() };
    let told = false;
    const tell = () => {
      if (told || socket !== this.socket) return;  // a call of a link that went is not told
      told = true;
      this.tellCall(detail);
    };
    const waiting = setTimeout(tell, TELL_WAITING_MS);
    let envelope;  // its JSON text
    this.running.add(call);
    try {
      const outcome = this.python.agentCall(call, String(tool), JSON.stringify(args ?? {}));
      if (typeof outcome === "string") {
        envelope = outcome;
      } else {  // it waits (the person deciding): an awaitable of Python's
        try {
          envelope = await outcome;
        } finally {
          outcome.destroy();
        }
      }
    } catch (error) {
      const code = this.aborted.has(call) ? "aborted" : "failed";
      envelope = JSON.stringify({ ok: false, error: { code, message: String(/** @type {Error | null | undefined} */ (error)?.message ?? error) } });
    } finally {
      clearTimeout(waiting);
      this.running.delete(call);
      this.aborted.delete(call);
    }
    const answer = `{"type":"answer","call":${JSON.stringify(call)},"envelope":${envelope}}`;
    const sent = answer.length <= MESSAGE_LIMIT ? answer : JSON.stringify({ type: "answer", call, envelope: {
      ok: false, error: { code: "too_large", message: `The result is over ${MESSAGE_LIMIT.toLocaleString("en")} characters; ask for less of it.` } } });
    if (socket.readyState === WebSocket.OPEN) socket.send(sent);
    tell();
  }
}
