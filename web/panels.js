/**
 * The page's UI Plugin panels, in the element marked `data-reactor-panels` (none: no panels).
 * The plugin that owns the records decides which get a panel (in Python); this file draws them.
 * A JavaScript record's `Run(params)` runs here, on the main thread, since it needs the DOM; its
 * returned function runs when the panel goes away. A Python record runs in the worker and draws
 * through messages: `draw` (HTML without scripts or `on…` attributes, or text) and `listen`.
 */

const DROPPED = "script, iframe, object, embed, link, meta, base, style, frame, frameset";
const URL_ATTRIBUTES = new Set(["href", "src", "action", "formaction", "xlink:href", "srcdoc"]);

let detachedParser = null;

/**
 * A DOMParser whose documents belong to no live window. Chromium checks each `on…` attribute
 * against the page's CSP as it parses it (nothing runs, but a violation is logged) in every
 * document of the page's window: DOMParser's, a template's, the Sanitizer API's setHTML too. A
 * window that is gone runs no scripts, so its parser tries no handler. Where a browser refuses a
 * detached window's parser, the page's own.
 * @returns {DOMParser}
 */
function parser() {
  if (!detachedParser) {
    const frame = Object.assign(document.createElement("iframe"), { hidden: true });
    document.body.append(frame);
    const { DOMParser: Detached } = /** @type {any} */ (frame.contentWindow);
    frame.remove();
    try {
      detachedParser = new Detached();
      detachedParser.parseFromString("<p></p>", "text/html");
    } catch {
      detachedParser = new DOMParser();
    }
  }
  return detachedParser;
}

/** `markup` as nodes with nothing that runs: no scripts, frames, event attributes or javascript: URLs. */
function inert(markup) {
  const parsed = parser().parseFromString(`<body>${markup}</body>`, "text/html");
  for (const element of parsed.querySelectorAll(DROPPED)) element.remove();
  for (const element of parsed.body.querySelectorAll("*")) {
    for (const { name, value } of [...element.attributes]) {
      const lower = name.toLowerCase();
      if (lower.startsWith("on") || (URL_ATTRIBUTES.has(lower) && /^\s*(javascript|data|vbscript):/i.test(value))) {
        element.removeAttribute(name);
      }
    }
  }
  return [...parsed.body.childNodes];
}

/** What a panel listener hears of an event: plain data about its target. */
function described(event, target) {
  return {
    type: event.type,
    target: {
      id: target.id || null, tag: target.tagName.toLowerCase(), value: "value" in target ? String(target.value) : null,
      dataset: { ...target.dataset }, text: (target.textContent ?? "").slice(0, 500),
    },
  };
}

/** The panels of one page; `server` is the reactor server's root, for `params.fetchJson`. */
export class Panels {
  constructor(server, notify) {
    this.server = server;
    this.notify = notify;  // (type, fields) -> a notice to the worker
    this.open = new Map();  // id -> {section, body, dispose, listeners: Map(listener -> remove)}
  }

  /**
   * The panel area, looked up each time: a page may add it after reactor started.
   * @returns {HTMLElement | null}
   */
  area() {
    return document.querySelector("[data-reactor-panels]");
  }

  /** Add a record's panel; a JavaScript one's Run starts now. False when the page has no panel area. */
  async add({ id, name, language, code, config, viewId }) {
    const area = this.area();
    if (!area) return false;
    if (this.open.has(id)) this.remove({ panel: id });
    const section = document.createElement("section");
    section.className = "plugin-panel";
    section.dataset.panel = id;
    section.dataset.language = language;
    const heading = Object.assign(document.createElement("h3"), { textContent: name, id: `panel-${id}-title` });
    section.setAttribute("aria-labelledby", heading.id);
    const body = Object.assign(document.createElement("div"), { className: "plugin-panel-body" });
    section.append(heading, body);
    area.append(section);
    area.hidden = false;
    const entry = { section, body, dispose: null, listeners: new Map() };
    this.open.set(id, entry);
    if (language === "javascript") await this.run(entry, name, code, { container: body, config, viewId });
    return true;
  }

  async run(entry, name, code, params) {
    try {
      const run = new Function("params", `"use strict";\n${code}\n;return Run(params);`);
      const dispose = await run({ ...params, server: this.server, fetchJson: (url, options) => this.fetchJson(url, options) });
      if (typeof dispose !== "function") {
        throw new TypeError(`Run(params) returned ${dispose === null ? "null" : typeof dispose}, not a function; `
          + "return the function that undoes what Run drew (it is called when the panel goes away).");
      }
      if (this.open.get(entry.section.dataset.panel) === entry) entry.dispose = dispose;
      else dispose();  // the panel closed while Run was still starting
    } catch (error) {
      this.fail(entry, `${name} failed to start: ${error?.name ?? "Error"}: ${error?.message ?? error}`);
    }
  }

  /** Remove a panel, its JavaScript dispose run first: {disposed, error?}. */
  remove({ panel: id }) {
    const entry = this.open.get(id);
    if (!entry) return { disposed: false };
    this.open.delete(id);
    for (const remove of entry.listeners.values()) remove();
    let answer = { disposed: false };
    if (entry.dispose) {
      try {
        entry.dispose();
        answer = { disposed: true };
      } catch (error) {
        console.error(`The panel ${id} failed to dispose:`, error);
        answer = { disposed: false, error: String(error?.message ?? error) };
      }
    }
    entry.section.remove();
    const area = this.area();
    if (area && !area.querySelector(".plugin-panel")) area.hidden = true;
    return answer;
  }

  /** Run every JavaScript dispose: the page is going away. */
  removeAll() {
    for (const id of [...this.open.keys()]) this.remove({ panel: id });
  }

  /** A Python panel's drawing: HTML made inert, text, or its error. */
  draw({ panel: id, html, text, error }) {
    const entry = this.open.get(id);
    if (!entry) return;
    if (error) return this.fail(entry, error);
    entry.body.replaceChildren(...(html != null ? inert(html) : [document.createTextNode(text ?? "")]));
  }

  fail(entry, message) {
    const shown = Object.assign(document.createElement("p"), { className: "plugin-panel-error", textContent: message });
    shown.setAttribute("role", "alert");
    entry.body.replaceChildren(shown);
    entry.section.dataset.state = "failed";
  }

  /** A Python listener: the panel's events (on `selector`, when given) go to the worker. */
  listen({ panel: id, listener, event, selector }) {
    const entry = this.open.get(id);
    if (!entry) return;
    try {
      if (selector) entry.body.querySelector(selector);
    } catch {
      return this.fail(entry, `container.on: ${JSON.stringify(selector)} is not a CSS selector this browser reads.`);
    }
    const handle = (happened) => {
      const target = selector ? happened.target.closest?.(selector) : happened.target;
      if (!target || !entry.body.contains(target)) return;
      this.notify("panel.event", { listener, event: described(happened, target) });
    };
    entry.body.addEventListener(event, handle);
    entry.listeners.set(listener, () => entry.body.removeEventListener(event, handle));
  }

  unlisten({ panel: id, listener }) {
    const entry = this.open.get(id);
    entry?.listeners.get(listener)?.();
    entry?.listeners.delete(listener);
  }

  /**
   * JSON from the reactor server, with the user's session: root-relative URLs mean that server.
   * @param {string} url
   * @param {{method?: string, body?: unknown}} [options]
   */
  async fetchJson(url, { method = "GET", body } = {}) {
    const target = new URL(url, this.server);
    const own = target.origin === new URL(this.server).origin;
    const response = await fetch(target, {
      method, credentials: own ? "include" : "same-origin",
      headers: { "content-type": "application/json" }, ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer = await response.json().catch(() => null);
    if (!response.ok) throw new Error(answer?.error ?? `${target.pathname} answered ${response.status}`);
    return answer;
  }
}
