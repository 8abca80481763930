/**
 * <reactor-chat>: the chat widget. Messages, a card per tool call (name, arguments, status,
 * result or error), approval buttons that wait for the person, Stop, and provider settings.
 * Every text from a model, a tool or a crawled page is set as text, never as HTML.
 * The chat itself runs in Python (reactor.host.ChatSession); this only renders and asks.
 * An assistant's text is Markdown, drawn by the page's CommonMark with raw HTML off.
 */
import { el, whenIdle } from "./dom.js";
import { ChatThreads } from "./threads.js";

let markdown = null;  // web/markdown.js, imported with the first reply: not while the page boots (view.js)

/** `text` as Markdown in `element` (plain text until the Markdown module has come, once). */
function drawMarkdown(element, text) {
  element.textContent = text;
  (markdown ??= import("./markdown.js")).then(({ renderMarkdown }) => renderMarkdown(element, text));
}

/**
 * A conversation drawn again may hold hundreds of replies: each is drawn as Markdown when it
 * comes into view, not all at once while the page starts.
 */
const unseen = new WeakMap();  // element -> its text, until it is seen
const seen = typeof IntersectionObserver === "function" ? new IntersectionObserver((entries) => {
  for (const { target, isIntersecting } of entries) {
    if (!isIntersecting) continue;
    seen.unobserve(target);
    drawMarkdown(target, unseen.get(target));
  }
}) : null;

function drawMarkdownWhenSeen(element, text) {
  if (!seen) return drawMarkdown(element, text);
  element.textContent = text;
  unseen.set(element, text);
  seen.observe(element);
}

/** An approval's decision as its card says it. */
const DECISIONS = {
  allow: "Allowed.", always: "Always allowed in this chat.", deny: "Denied; it did not run.",
  withdrawn: "No longer asked; it did not run.",
  unclaimed: "The agent stopped waiting for this; nothing was changed.",
};
const KEYED = new Set(["openai", "anthropic"]);  // the providers whose base URL, model and key a person types
const SETTINGS_KEY = "reactor.chat.settings";  // sessionStorage: the key never leaves this tab but for its provider

function pretty(value) {
  return JSON.stringify(value, null, 2);
}

function parsed(args) {
  if (typeof args !== "string") return args ?? {};
  try { return JSON.parse(args); } catch { return args; }
}

/** The short, scalar arguments of a call, as "id: onboarding, slide: 3" (long text left out). */
function keyArguments(args) {
  const value = parsed(args);
  if (!value || typeof value !== "object") return "";
  return Object.entries(value)
    .filter(([, v]) => ["string", "number", "boolean"].includes(typeof v) && String(v).length <= 60)
    .slice(0, 3).map(([k, v]) => `${k}: ${v}`).join(", ");
}

class ReactorChat extends HTMLElement {
  connectedCallback() {
    this.cards = new Map();
    this.threads = new ChatThreads(this);  // reads this tab's conversation at once, while Python boots
    window.addEventListener("reactor:chat", (event) => this.onEvent(event.detail));
    window.addEventListener("reactor:session", (event) => this.threads.signed(event.detail));
    // What another tab added to the conversation shows when the person comes back to this one
    // (or into the chat: a browser without windows, as a headless one, tells no focus).
    window.addEventListener("focus", () => this.threads.refresh());
    this.addEventListener("focusin", () => this.threads.refresh());
    document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && this.threads.refresh());
    window.reactor.chat.setApprover((request, signal, claim) => this.askApproval(request, signal, claim));
    // Drawn once the page is idle, in a task of its own, not in the page's first busy tasks; the
    // chat then sets itself up once the tools are ready, so it never delays them.
    const drawn = whenIdle().then(() => this.draw());
    // The conversation is drawn as soon as it has come, Python or not: drawn, never run again.
    drawn.then(() => this.threads.loading).then(({ thread }) => {
      if (thread) this.redraw(thread.items ?? []);
    }).catch(() => {}).finally(() => {
      this.dataset.thread = "drawn";
      performance.mark("reactor:thread-drawn");
    });
    this.configured = Promise.all([window.reactor.ready, drawn]).then(whenIdle).then(() => this.applySettings(this.savedSettings(), { saved: true }));
    this.configured.catch(() => {});
    // Python takes the conversation over; a turn a reload cut is then asked again or offered to continue.
    // (A page that could not start says so in its progress line; the chat adds nothing.)
    this.restored = this.configured.then(
      () => this.threads.restore().catch((error) => this.note(error.message, "error")),
      () => {},
    );
  }

  draw() {
    this.log = el("ol", { class: "chat-log", "aria-live": "polite" });
    this.input = el("textarea", { rows: 2, placeholder: "Message", "aria-label": "Message" });
    this.sendButton = el("button", { type: "submit" }, "Send");
    this.stopButton = el("button", { type: "button", disabled: true }, "Stop");
    this.stopButton.addEventListener("click", () => window.reactor.chat.stop());
    const form = el("form", { class: "chat-input" }, this.input, this.sendButton, this.stopButton);
    form.addEventListener("submit", (event) => { event.preventDefault(); this.send(); });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); this.send(); }
    });
    this.modelLabel = el("span", { class: "chat-model", "data-testid": "chat-model" });
    this.replaceChildren(
      el("header", { class: "chat-head" }, el("h2", {}, "Assistant"), this.threads.title, this.modelLabel),
      this.threads.panel(), this.settingsForm(), this.log, form,
    );
  }

  /** What the person chose in this tab; {} for the page's default (the site's model, if it has one). */
  savedSettings() {
    try { return JSON.parse(sessionStorage.getItem(SETTINGS_KEY)) ?? {}; }
    catch { return {}; }
  }

  settingsForm() {
    const saved = this.savedSettings();
    this.provider = el("select", { name: "provider", "aria-label": "Provider" });
    const field = (name, label, type = "text") =>
      el("label", { class: "chat-keyed" }, label,
        el("input", { name, type, value: saved[name] ?? "", autocomplete: type === "password" ? "new-password" : "off" }));
    const error = el("p", { class: "chat-error", role: "alert" });
    const form = el("form", { class: "chat-settings" },
      el("details", {}, el("summary", {}, "Model settings"),
        el("label", {}, "Provider ", this.provider), field("baseUrl", "Base URL "), field("model", "Model "),
        field("apiKey", "API key ", "password"), el("button", { type: "submit" }, "Use this model"), error));
    this.provider.addEventListener("change", () => this.showKeyedFields());
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const settings = Object.fromEntries(new FormData(form));
      error.textContent = (await this.applySettings(settings)) ?? "";
    });
    this.settings = form;
    return form;
  }

  /** Base URL, model and key are asked only of a provider whose key the person types. */
  showKeyedFields() {
    for (const label of /** @type {NodeListOf<HTMLElement>} */ (this.settings.querySelectorAll(".chat-keyed"))) label.hidden = !KEYED.has(this.provider.value);
  }

  /**
   * Choose the model; the error, if any. The widget's first choice (`saved`, from this tab) gives
   * way to a model the page's code has chosen already with reactor.chat.configure.
   */
  async applySettings(settings, { saved = false } = {}) {
    const picked = this.provider.value;
    let answer;
    try {
      answer = await window.reactor.chat.configure(settings, { unlessChosen: saved });
    } catch (refused) {
      // A choice saved in this tab that the server no longer offers: the page's default instead.
      if (!saved || !Object.keys(settings).length) return refused.message;
      try {
        answer = await window.reactor.chat.configure({}, { unlessChosen: true });
      } catch (error) {
        return error.message;
      }
      settings = {};
    }
    if (answer.chosen) sessionStorage.setItem(SETTINGS_KEY, JSON.stringify(settings));
    this.chosenProvider = answer.provider;
    // A provider the person picked while this one was being set stays picked.
    const shown = this.provider.value !== picked ? this.provider.value : answer.provider;
    this.provider.replaceChildren(...answer.providers.map(([value, text]) =>
      el("option", { value, selected: value === shown }, text)));
    this.showKeyedFields();
    this.showModel(answer.label);
    // The scripted model says what it understands with this page's tools; an AI takes anything.
    this.input.placeholder = answer.examples?.length ? `Try “${answer.examples[0]}”` : "Ask anything about this page";
    return null;
  }

  showModel(label) {
    this.modelLabel.textContent = label;
  }

  async send() {
    const text = this.input.value.trim();
    if (!text || this.sendButton.disabled) return;
    this.input.value = "";
    this.querySelectorAll(".chat-interrupted").forEach((note) => note.remove());  // a new turn instead
    this.running(true);  // at once; the chat's own `running` events follow
    try {
      await this.configured;
      await this.restored;
      const outcome = await window.reactor.chat.send(text);
      if (outcome.status === "step_limit") this.note("Stopped at the step limit for one message.");
    } catch (error) {
      this.note(error.message, "error");
      this.input.value ||= text;  // not sent: the person's words are theirs to send again
      this.running(false);
    }
  }

  /** Go on with the turn a reload cut (reactor.chat.resume), as a message is answered. */
  async resume() {
    this.running(true);
    try {
      const outcome = await window.reactor.chat.resume();
      if (outcome.status === "step_limit") this.note("Stopped at the step limit for one message.");
    } catch (error) {
      this.note(error.message, "error");
      this.running(false);
    }
  }

  /** The whole conversation drawn anew from its items (a restored or switched thread). */
  redraw(items) {
    this.cards = new Map();
    this.streaming = null;
    const drawn = document.createDocumentFragment();
    this.target = drawn;
    try {
      for (const item of items) this.show(item);
    } finally {
      this.target = null;
    }
    this.log.replaceChildren(drawn);
    // At the next frame, which lays the log out anyway: not a second layout now.
    requestAnimationFrame(() => this.log.lastElementChild?.scrollIntoView({ block: "nearest" }));
  }

  running(on) {
    this.sendButton.disabled = on;
    this.stopButton.disabled = !on;
    this.dataset.running = on ? "true" : "false";
  }

  note(text, kind = "note") {
    (this.target ?? this.log).append(el("li", { class: `chat-${kind}` }, text));
  }

  onEvent(event) {
    if (!this.log) return;  // not drawn yet: nothing has been said
    if (event.type === "thread") {
      this.threads.changed(event);
      return;
    }
    if (event.type === "approval") return;  // drawn as it was asked (askApproval)
    this.show(event);
    this.log.lastElementChild?.scrollIntoView({ block: "nearest" });
  }

  /** An event, or a kept item of a conversation drawn again, in the log (or what `target` gathers). */
  show(event) {
    const log = this.target ?? this.log;
    if (event.type === "running") {
      this.running(event.running);  // any reply, however started (the widget, or reactor.chat.send)
      return;
    }
    if (event.type === "model") {
      this.showModel(event.label);  // also when reactor.chat.configure was called from code
      // Only a model chosen elsewhere moves the picker: the echo of the person's own choice
      // must not undo what they have picked since.
      if (event.provider !== this.chosenProvider && this.provider.querySelector(`option[value="${event.provider}"]`)) {
        this.chosenProvider = this.provider.value = event.provider;
        this.showKeyedFields();
      }
      return;
    }
    if (event.type === "message.delta") {
      // A streamed reply: its text as it arrives, drawn as Markdown once it is whole.
      if (!this.streaming) {
        this.streaming = el("li", { class: "chat-message chat-assistant", "data-role": "assistant", "data-streaming": "true" });
        log.append(this.streaming);
      }
      this.streaming.textContent += event.text;
    } else if (event.type === "message") {
      const item = event.role === "assistant" && this.streaming ? this.streaming : el("li", { class: `chat-message chat-${event.role}` });
      this.streaming = null;
      delete item.dataset.streaming;
      if (event.cut) item.dataset.streaming = "stopped";  // kept as far as it had come
      if (event.role === "assistant") (this.target ? drawMarkdownWhenSeen : drawMarkdown)(item, event.text);
      else item.textContent = event.text;
      item.dataset.role = event.role;
      if (event.role === "user") this.cards = new Map();  // a turn's calls are its own (ids may repeat)
      if (!item.isConnected) log.append(item);
    } else if (event.type.startsWith("tool_call.")) {
      this.endStream();
      this.toolCard(event);
    } else if (event.type === "approval") {
      const { card } = this.approvalCard(event, event.decision);
      log.append(card);
      // In time order, as drawn live: the question, its decision, then the call's card.
      const toolCard = this.cards.get(event.call_id);
      if (toolCard) card.after(toolCard);
    } else if (event.type === "stopped") {
      this.endStream();
      this.note(event.reason);
    } else if (event.type === "error") {
      this.endStream();
      this.note(event.message, "error");
    }
  }

  /** A tool call as a person reads it: what ran, one line of outcome; the JSON behind "Details". */
  /** A reply cut short (Stop, an error): what came stays, marked as cut; nothing more is added. */
  endStream() {
    if (!this.streaming) return;
    this.streaming.dataset.streaming = "stopped";
    this.streaming = null;
  }

  toolCard(event) {
    let card = this.cards.get(event.call_id);
    if (!card) {
      card = el("li", { class: "chat-tool", "data-testid": "tool-card", "data-tool": event.name },
        el("div", { class: "chat-tool-head" },
          el("strong", {}, event.title || "A tool this page does not have"),
          el("span", { class: "chat-tool-status", "data-testid": "tool-status" })),
        el("p", { class: "chat-tool-summary", "data-testid": "tool-summary" }, keyArguments(event.arguments)),
        el("details", {}, el("summary", {}, "Details"),
          el("p", { class: "chat-tool-name" }, `Tool ${event.name}`),
          el("pre", { class: "chat-tool-args" }, pretty(parsed(event.arguments))),
          el("pre", { class: "chat-tool-result" })));
      this.cards.set(event.call_id, card);
      (this.target ?? this.log).append(card);
    }
    const status = event.type.slice("tool_call.".length);
    card.dataset.status = status;
    card.querySelector(".chat-tool-status").textContent =
      { started: "running…", approved: "allowed, running…", denied: "not run", finished: "done", failed: "failed" }[status];
    if (event.summary) card.querySelector(".chat-tool-summary").textContent = event.summary;
    if (event.result) card.querySelector(".chat-tool-result").textContent = pretty(event.result.ok ? event.result.result : event.result.error);
  }

  /**
   * Ask the person; the card stays until they answer (or the chat is stopped). `claim`, for a
   * desktop agent's call, asks the server whether the agent still waits for it: an Allow of a
   * call it stopped waiting for runs nothing, and the card says so.
   */
  askApproval(request, signal, claim = null) {
    // The question must be on screen: a view in full screen (a presentation) would hide it.
    if (document.fullscreenElement && !this.contains(document.fullscreenElement)) document.exitFullscreen().catch(() => {});
    return new Promise((resolve) => {
      const { card, decide } = this.approvalCard(request);
      // In time order: the question, then the decision, then the call's card with its outcome.
      const toolCard = this.cards.get(request.callId);
      toolCard?.remove();
      const decided = () => { if (toolCard) card.after(toolCard); };
      let claiming = false;
      const answer = (decision) => async () => {
        if (claim && decision !== "deny") {
          // The withdrawal may be on its way: one round trip to the server says whether to run.
          claiming = true;
          card.querySelectorAll("button").forEach((button) => { button.disabled = true; });
          if (!(await claim().catch(() => false))) decision = "unclaimed";
        }
        decide(decision);
        decided();
        resolve(decision === "unclaimed" ? "deny" : decision);
      };
      for (const [decision, text] of [["allow", "Allow"], ["always", "Always allow"], ["deny", "Deny"]]) {
        const button = el("button", { type: "button" }, text);
        button.addEventListener("click", answer(decision));
        card.append(button);
      }
      // Nobody waits for the answer any more: the question is withdrawn, not left to be answered.
      signal?.addEventListener("abort", () => {
        if (card.dataset.decision || claiming) return;  // a claim's answer settles the card
        decide("withdrawn");
        decided();
        resolve("deny");
      });
      this.log.append(card);
      card.scrollIntoView({ block: "nearest" });
    });
  }

  /** An approval's card, asking; `decide(decision)` writes the choice in words (drawn so when kept). */
  approvalCard(request, decision = null) {
    // The person's words, from the tool's command ("Publish ‘Hello’ on Acme?"), never its name.
    const asked = request.question
      || `Allow the assistant to ${(request.sideEffect ?? request.side_effect) === "destructive" ? "delete something" : "change something"} on this page?`;
    const question = el("p", { "data-testid": "approval-question" }, asked);
    const card = el("li", { class: "chat-approval", "data-testid": "approval", "data-tool": request.tool },
      question, el("details", {}, el("summary", {}, "Details"), el("pre", {}, pretty(request.arguments))));
    const decide = (chosen) => {
      card.dataset.decision = chosen;
      // The card keeps what was chosen, in words; the buttons go.
      card.querySelectorAll("button").forEach((b) => b.remove());
      question.textContent = `${asked} `;
      question.append(el("strong", { "data-testid": "approval-choice" }, DECISIONS[chosen] ?? chosen));
    };
    if (decision) decide(decision);
    return { card, decide };
  }
}

customElements.define("reactor-chat", ReactorChat);

/** WebMCP: when the browser offers document.modelContext, the admitted tools are offered there too. */
async function offerToWebMcp() {
  const context = document.modelContext ?? navigator.modelContext;
  if (!context?.registerTool) return;
  // Only what changed is registered or withdrawn: a page that defines plugins one by one must not
  // register every tool again at each definition.
  const registered = new Map();  // tool name → {declared: its JSON, controller: withdraws it}
  let syncing = Promise.resolve();
  const sync = async () => {
    const tools = await window.reactor.chat.tools();
    const now = new Map(tools.map((tool) => [tool.name, tool]));
    for (const [name, { declared, controller }] of registered) {
      if (JSON.stringify(now.get(name)) !== declared) { controller.abort(); registered.delete(name); }
    }
    for (const tool of tools) {
      if (registered.has(tool.name)) continue;
      const controller = new AbortController();
      context.registerTool({
        ...tool,
        execute: (input, options = {}) => window.reactor.chat.callTool(tool.name, input, { signal: options.signal }),
      }, { signal: controller.signal });
      registered.set(tool.name, { declared: JSON.stringify(tool), controller });
    }
  };
  const resync = () => { syncing = syncing.then(sync, sync); return syncing; };  // one at a time, in order
  await window.reactor.ready;
  await whenIdle();
  await resync();
  window.reactor.onAgentToolBundles(resync);
}

offerToWebMcp().catch((error) => console.warn(`WebMCP: ${error.message}`));
