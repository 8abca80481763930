/**
 * The page's link to the reactor server for the person's desktop agents (MCP at /mcp; the server
 * side is reactor/server/mcp_relay.py). One connection per page: server-sent events down
 * (`hello` {page}, `call` {call, tool, arguments}, `cancel` {call}) on a fetch stream, JSON POSTs
 * up (answers, the tool list, "the person is using this page"). A call runs through
 * `window.reactor.chat.callTool` — admission, validation and the person's approval, as for the
 * chat. A dropped connection is made again with backoff (0.5 s doubling to 30 s).
 */

const BACKOFF_MS = [500, 30_000];
const ACTIVE_EVERY_MS = 10_000;

class AgentLink {
  constructor(server) {
    this.server = server;
    this.pageId = null;
    this.wanted = false;
    this.generation = 0;     // one run() loop at a time: a disconnect then connect starts a new one
    this.stream = null;      // the AbortController of the event stream
    this.calls = new Map();  // call id -> AbortController
    this.waiting = [];       // connect() promises waiting for `hello`
    this.lastActive = 0;
    this.stopListening = null;
    this.onActivity = () => this.active();
  }

  /** Connect (again) and resolve {pageId} once the server has named this page. */
  connect() {
    const named = new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
    if (!this.wanted) {
      this.wanted = true;
      this.generation += 1;
      for (const type of ["focus", "pointerdown", "keydown"]) addEventListener(type, this.onActivity, true);
      this.stopListening = window.reactor.onAgentToolBundles(() => this.sendTools());
      this.run();
    } else if (this.pageId) {
      this.settle({ pageId: this.pageId });
    }
    return named;
  }

  /** Close the connection: calls still running here are stopped, and the server fails them at once. */
  disconnect() {
    this.wanted = false;
    this.generation += 1;
    this.stream?.abort();
    for (const controller of this.calls.values()) controller.abort(new Error("The page's agents switch was turned off."));
    this.calls.clear();
    for (const type of ["focus", "pointerdown", "keydown"]) removeEventListener(type, this.onActivity, true);
    this.stopListening?.();
    this.settle(null, new Error("Disconnected."));
    this.pageId = null;
  }

  get connected() { return this.pageId !== null; }

  settle(value, error) {
    for (const { resolve, reject } of this.waiting.splice(0)) error ? reject(error) : resolve(value);
  }

  async run() {
    const generation = this.generation;
    const current = () => this.wanted && this.generation === generation;
    let delay = BACKOFF_MS[0];
    while (current()) {
      this.stream = new AbortController();
      try {
        // Origin and path only: a query or fragment may hold what the person would not hand to an agent.
        const query = new URLSearchParams({ title: document.title.slice(0, 200), url: (location.origin + location.pathname).slice(0, 500) });
        const response = await fetch(new URL(`/api/agent-pages/stream?${query}`, this.server), {
          credentials: "include", headers: { accept: "text/event-stream" }, signal: this.stream.signal,
        });
        if (response.status === 401 || response.status === 429) {
          const { error } = await response.json().catch(() => ({ error: `The server answered ${response.status}.` }));
          this.settle(null, new Error(error));  // signed out, or too many pages: trying again will not help
          this.disconnect();
          break;
        }
        if (!response.ok || !response.body) throw new Error(`the server answered ${response.status}`);
        await this.read(response.body, () => { delay = BACKOFF_MS[0]; });
      } catch (error) {
        if (!current()) break;
      }
      if (!current()) break;
      this.pageId = null;
      window.dispatchEvent(new CustomEvent("reactor:agents", { detail: { connected: false } }));
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, BACKOFF_MS[1]);
    }
  }

  async read(body, onHello) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event && data) this.heard(event, JSON.parse(data), onHello);
      }
    }
  }

  heard(event, data, onHello) {
    if (event === "hello") {
      this.pageId = data.page;
      onHello();
      this.sendTools();
      this.settle({ pageId: this.pageId });
      window.dispatchEvent(new CustomEvent("reactor:agents", { detail: { connected: true, pageId: this.pageId } }));
    } else if (event === "call") {
      this.runCall(data);
    } else if (event === "cancel") {
      this.calls.get(data.call)?.abort(new Error("The agent stopped this call."));
    }
  }

  async runCall({ call, tool, arguments: args }) {
    const controller = new AbortController();
    this.calls.set(call, controller);
    let envelope;
    try {
      envelope = await window.reactor.chat.callTool(tool, args ?? {}, { signal: controller.signal });
    } catch (error) {
      const code = controller.signal.aborted ? "aborted" : "failed";
      envelope = { ok: false, error: { code, message: String(error?.message ?? error) } };
    } finally {
      this.calls.delete(call);
    }
    await this.post({ type: "answer", call, envelope });
  }

  async sendTools() {
    if (!this.pageId) return;
    await this.post({ type: "tools", tools: await window.reactor.chat.tools() });
  }

  active() {
    const now = Date.now();
    if (!this.pageId || now - this.lastActive < ACTIVE_EVERY_MS) return;
    this.lastActive = now;
    this.post({ type: "active" });
  }

  async post(message) {
    if (!this.pageId) return;
    try {
      await fetch(new URL(`/api/agent-pages/${this.pageId}`, this.server), {
        method: "POST", credentials: "include", headers: { "content-type": "application/json" }, body: JSON.stringify(message),
      });
    } catch (error) {
      console.warn(`reactor agents: ${error.message}`);  // the stream's end says the rest
    }
  }
}

let link = null;

/** The page's one AgentLink to `server` (made on first use). */
export function agentLink(server) {
  link ??= new AgentLink(server);
  return link;
}
