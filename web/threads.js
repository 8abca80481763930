/**
 * The chat's conversations in the page: the one drawn at load (read here while Python boots, so
 * it is on screen as soon as it can be), and the sentences and buttons around them. What is kept
 * where, and when, is decided in Python (reactor.host.conversations); this reads, asks and draws.
 *
 * Signed in, a conversation is the person's thread on the reactor server (/api/threads); signed
 * out, it is kept in this origin's localStorage, in the shapes reactor.host.threads writes:
 * STORAGE_INDEX (summaries, newest first) and STORAGE_PREFIX + id (a thread).
 */
import { el } from "./dom.js";

const STORAGE_INDEX = "reactor.threads";
const STORAGE_PREFIX = "reactor.thread.";
const TAB_KEY = "reactor.chat.tab";  // this tab's name, kept across reloads: its own cut turn is its to resume
const CURRENT_KEY = "reactor.chat.thread";  // {where, id}: the conversation this tab shows (id null: a new one)
const DISMISSED_KEY = "reactor.chat.keepOffer";  // the local conversation this tab chose not to keep now

/**
 * @typedef {{id: string, title: string, updated: number}} Summary  a conversation in the list
 * @typedef {{chat: {thread(op: string, fields?: object): Promise<any>}}} PageReactor  what of window.reactor this uses
 * @typedef {{server?: string}} PageConfig  what of window.reactorConfig this uses
 */

/** The page's window.reactor (web/reactor.js) and window.reactorConfig (the embedding page's). */
const page = () => /** @type {{reactor: PageReactor, reactorConfig?: PageConfig}} */ (/** @type {unknown} */ (window));

/** The reactor server's root, as web/reactor.js resolves it. */
const server = new URL(page().reactorConfig?.server ?? "/", import.meta.url).href;

/**
 * @param {Storage} storage
 * @param {string} key
 * @returns {any} what was kept under `key` (null: nothing, or not JSON)
 */
function stored(storage, key) {
  try { return JSON.parse(storage.getItem(key) ?? "null"); } catch { return null; }
}

/**
 * @param {string} path
 * @returns {Promise<any>}
 */
async function getJson(path) {
  const answer = await fetch(new URL(path, server), { credentials: "include", headers: { accept: "application/json" } });
  if (!answer.ok) throw new Error(`${path} answered ${answer.status}`);
  return answer.json();
}

/** This tab's name: random, made once per tab. */
export function tabName() {
  let name = sessionStorage.getItem(TAB_KEY);
  if (!name) {
    name = crypto.randomUUID().replaceAll("-", "");
    sessionStorage.setItem(TAB_KEY, name);
  }
  return name;
}

/**
 * The conversation this tab showed last (or the newest), and where it is kept: {where, thread}.
 * A signed-out person's never leaves this browser.
 */
export async function loadThread() {
  const chosen = stored(sessionStorage, CURRENT_KEY);
  const who = await getJson("/auth/session").catch(() => ({ user: null }));
  if (who.user) {
    if (chosen?.where === "server" && chosen.id === null) return { where: "server", thread: null };
    if (chosen?.where === "server" && chosen.id) {
      const thread = await getJson(`/api/threads/${encodeURIComponent(chosen.id)}`).catch(() => null);
      if (thread) return { where: "server", thread };
    }
    const newest = (await getJson("/api/threads?limit=1").catch(() => ({ threads: [] }))).threads[0];
    const thread = newest ? await getJson(`/api/threads/${newest.id}`).catch(() => null) : null;
    return { where: "server", thread };
  }
  if (chosen?.where === "local" && chosen.id === null) return { where: "local", thread: null };
  const index = stored(localStorage, STORAGE_INDEX) ?? [];
  const pick = (chosen?.where === "local" && index.find((/** @type {Summary} */ t) => t.id === chosen.id)) || index[0];
  return { where: "local", thread: pick ? stored(localStorage, STORAGE_PREFIX + pick.id) : null };
}

/** The conversations of one <reactor-chat>: what it says and offers about them. */
export class ChatThreads {
  /** @param {any} chat the <reactor-chat> element */
  constructor(chat) {
    this.chat = chat;
    this.tab = tabName();
    this.loading = loadThread();
    this.loading.catch(() => {});
    this.title = el("span", { class: "chat-thread-title", "data-testid": "thread-title" });
  }

  /** The conversations panel: a new one, the list (newest first), and for each open, rename, delete, export. */
  panel() {
    /** @type {HTMLOListElement} */
    this.list = el("ol", { class: "chat-thread-list", "data-testid": "thread-list" });
    /** @type {HTMLButtonElement} */
    this.more = el("button", { type: "button", hidden: true }, "More");
    this.more.addEventListener("click", () => this.showList(this.next));
    /** @type {HTMLParagraphElement} */
    this.said = el("p", { class: "chat-error", role: "alert" });
    /** @type {HTMLParagraphElement} */
    this.limits = el("p", { class: "chat-thread-limits", "data-testid": "thread-limits" });
    const fresh = el("button", { type: "button", "data-testid": "new-thread" }, "New conversation");
    fresh.addEventListener("click", () => this.ask(async () => {
      await page().reactor.chat.thread("new");
      this.shown(false);
    }));
    // A button, not a <details>: the chat's one <summary> is its Model settings'.
    /** @type {HTMLButtonElement} */
    this.toggle = el("button", { type: "button", class: "chat-threads-toggle", "aria-expanded": "false" }, "Conversations");
    /** @type {HTMLDivElement} */
    this.box = el("div", { class: "chat-threads", hidden: true }, fresh, this.list, this.more, this.limits, this.said);
    this.toggle.addEventListener("click", () => this.shown(this.box.hidden));
    return el("div", {}, this.toggle, this.box);
  }

  /** Show or hide the conversations panel (its list read anew when shown). */
  /** @param {HTMLElement["hidden"]} on */
  shown(on) {
    this.box.hidden = !on;
    this.toggle.setAttribute("aria-expanded", String(on));
    if (on) this.showList();
  }

  /** Run `action` (a request to Python); its refusal is said in the panel. */
  /**
   * @template T
   * @param {() => Promise<T>} action
   * @returns {Promise<T | undefined>}
   */
  async ask(action) {
    this.said.textContent = "";
    try {
      await this.chat.restored;
      return await action();
    } catch (error) {
      this.said.textContent = /** @type {Error} */ (error).message;
      return undefined;
    }
  }

  /** The list, from its start or after `before` (the `next` of the page shown). */
  async showList(before = "") {
    this.list.dataset.state = "listing";
    const listed = await this.ask(() => page().reactor.chat.thread("list", { before }));
    if (!listed) return;
    this.list.dataset.state = "listed";
    const rows = listed.threads.map((/** @type {Summary} */ thread) => this.row(thread));
    if (before) this.list.append(...rows);
    else this.list.replaceChildren(...rows);
    if (!listed.threads.length && !before) this.list.append(el("li", { class: "chat-note" }, "No conversations yet."));
    this.next = listed.next;
    this.more.hidden = !listed.next;
    // What the server (or this browser) keeps, said before it refuses anything.
    const { threads, threadBytes, keepDays } = listed.limits;
    this.limits.textContent = `${listed.count} of ${threads} conversations kept, each up to `
      + `${threadBytes / 1e6} MB${keepDays ? `; one untouched for ${keepDays} days is deleted` : ""}.`;
  }

  /** @param {Summary} thread */
  row(thread) {
    const when = new Date(thread.updated * 1000).toLocaleString();
    const open = el("button", { type: "button", class: "chat-thread-open", title: `Last changed ${when}` }, thread.title);
    open.addEventListener("click", () => this.ask(async () => {
      const answer = await page().reactor.chat.thread("open", { thread: thread.id });
      this.shown(false);
      this.cut(answer.resume);
    }));
    const rename = el("button", { type: "button" }, "Rename");
    rename.addEventListener("click", () => {
      const name = el("input", { value: thread.title, "aria-label": "New name", maxlength: 120 });
      const form = el("form", { class: "chat-thread-rename" }, name, el("button", { type: "submit" }, "Save"));
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        this.ask(async () => {
          await page().reactor.chat.thread("rename", { thread: thread.id, title: name.value });
          await this.showList();
        });
      });
      open.replaceWith(form);
      name.focus();
    });
    const remove = el("button", { type: "button" }, "Delete");
    remove.addEventListener("click", () => {
      if (remove.dataset.sure !== "true") {
        remove.dataset.sure = "true";
        remove.textContent = "Delete for good?";
        return;
      }
      this.ask(async () => {
        await page().reactor.chat.thread("delete", { thread: thread.id });
        await this.showList();
      });
    });
    const exports = ["markdown", "json"].map((format) => {
      const button = el("button", { type: "button" }, format === "json" ? "JSON" : "Markdown");
      button.addEventListener("click", () => this.ask(async () => {
        const file = await page().reactor.chat.thread("export", { thread: thread.id, format });
        const link = el("a", { href: URL.createObjectURL(new Blob([file.text], { type: file.type })), download: file.name });
        link.click();
        setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
      }));
      return button;
    });
    return el("li", { class: "chat-thread", "data-testid": "thread", "data-id": thread.id },
      open, el("span", { class: "chat-thread-actions" }, rename, remove, "Export: ", ...exports));
  }

  /** Python takes over the conversation drawn at load; then what its cut turn needs is done. */
  async restore() {
    const { where, thread } = await this.loading;
    const answer = await page().reactor.chat.thread("restore", { thread, where, tab: this.tab });
    this.restored = true;
    this.offer(answer.offer);
    this.cut(answer.resume);
    if (this.signedMeanwhile) await this.signed(this.signedMeanwhile.user);
  }

  /** A turn a reload cut: asked again (an approval), re-attached (the site's reply), or Continue. */
  /** @param {string | undefined} resume */
  cut(resume) {
    if (resume === "approval" || resume === "stream") this.chat.resume();
    else if (resume === "interrupted") this.interrupted();
    else if (resume === "elsewhere") {
      this.chat.note("The assistant is answering in another tab or window; what it adds shows here when you come back to this tab.");
    }
  }

  interrupted() {
    const button = el("button", { type: "button" }, "Continue");
    const note = el("li", { class: "chat-note chat-interrupted", "data-testid": "interrupted" },
      "The answer was interrupted when the page was reloaded. ", button);
    button.addEventListener("click", () => { note.remove(); this.chat.resume(); });
    this.chat.log.append(note);
  }

  /** Python's `thread` event: which conversation is shown (kept for this tab), drawn anew when it says. */
  /** @param {{where: string, id: string | null, title?: string, items?: object[]}} event */
  changed(event) {
    sessionStorage.setItem(CURRENT_KEY, JSON.stringify({ where: event.where, id: event.id }));
    this.title.textContent = event.title ?? "";
    if (event.items) this.chat.redraw(event.items);
  }

  /** Signing in offers to keep this browser's conversation in the person's account. */
  /** @param {Summary | null | undefined} summary */
  offer(summary) {
    if (!summary || sessionStorage.getItem(DISMISSED_KEY) === summary.id) return;
    const keep = el("button", { type: "button" }, "Keep it in my account");
    const not = el("button", { type: "button" }, "Not now");
    const card = el("li", { class: "chat-note chat-offer", "data-testid": "keep-offer" },
      `This browser kept a conversation from before you signed in: “${summary.title}”. `, keep, not);
    keep.addEventListener("click", async () => {
      card.remove();
      try { await page().reactor.chat.thread("keep", { thread: summary.id }); } catch (error) { this.chat.note(/** @type {Error} */ (error).message, "error"); }
    });
    not.addEventListener("click", () => { card.remove(); sessionStorage.setItem(DISMISSED_KEY, summary.id); });
    this.chat.log.append(card);
  }

  /** The person signed in or out in this page (web/session.js). */
  /** @param {{username: string} | null} user */
  async signed(user) {
    if (!this.restored) {
      this.signedMeanwhile = { user };  // told to Python once it has the conversation of the load
      return;
    }
    try {
      const answer = await page().reactor.chat.thread("signedIn", { signedIn: Boolean(user) });
      this.offer(answer.offer);
    } catch (error) {
      this.chat.note(/** @type {Error} */ (error).message, "error");
    }
  }

  /** What another tab added, drawn here when this tab comes back. */
  async refresh() {
    if (!this.restored || this.chat.dataset.running === "true") return;
    try {
      const answer = await page().reactor.chat.thread("refresh");
      if (answer) this.cut(answer.resume);
    } catch (error) {
      console.warn(`reactor chat: ${/** @type {Error} */ (error).message}`);
    }
  }
}
