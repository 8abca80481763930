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

/** The reactor server's root, as web/reactor.js resolves it. */
const server = new URL(window.reactorConfig?.server ?? "/", import.meta.url).href;

function stored(storage, key) {
  try { return JSON.parse(storage.getItem(key) ?? "null"); } catch { return null; }
}

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
  const pick = (chosen?.where === "local" && index.find((t) => t.id === chosen.id)) || index[0];
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

  /** Python takes over the conversation drawn at load; then what its cut turn needs is done. */
  async restore() {
    const { where, thread } = await this.loading;
    const answer = await window.reactor.chat.thread("restore", { thread, where, tab: this.tab });
    this.restored = true;
    this.offer(answer.offer);
    this.cut(answer.resume);
    if (this.signedMeanwhile) await this.signed(this.signedMeanwhile.user);
  }

  /** A turn a reload cut: asked again (an approval), re-attached (the site's reply), or Continue. */
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
  changed(event) {
    sessionStorage.setItem(CURRENT_KEY, JSON.stringify({ where: event.where, id: event.id }));
    this.title.textContent = event.title ?? "";
    if (event.items) this.chat.redraw(event.items);
  }

  /** Signing in offers to keep this browser's conversation in the person's account. */
  offer(summary) {
    if (!summary || sessionStorage.getItem(DISMISSED_KEY) === summary.id) return;
    const keep = el("button", { type: "button" }, "Keep it in my account");
    const not = el("button", { type: "button" }, "Not now");
    const card = el("li", { class: "chat-note chat-offer", "data-testid": "keep-offer" },
      `This browser kept a conversation from before you signed in: “${summary.title}”. `, keep, not);
    keep.addEventListener("click", async () => {
      card.remove();
      try { await window.reactor.chat.thread("keep", { id: summary.id }); } catch (error) { this.chat.note(error.message, "error"); }
    });
    not.addEventListener("click", () => { card.remove(); sessionStorage.setItem(DISMISSED_KEY, summary.id); });
    this.chat.log.append(card);
  }

  /** The person signed in or out in this page (web/session.js). */
  async signed(user) {
    if (!this.restored) {
      this.signedMeanwhile = { user };  // told to Python once it has the conversation of the load
      return;
    }
    try {
      const answer = await window.reactor.chat.thread("signedIn", { signedIn: Boolean(user) });
      this.offer(answer.offer);
    } catch (error) {
      this.chat.note(error.message, "error");
    }
  }

  /** What another tab added, drawn here when this tab comes back. */
  async refresh() {
    if (!this.restored || this.chat.dataset.running === "true") return;
    try {
      const answer = await window.reactor.chat.thread("refresh");
      if (answer) this.cut(answer.resume);
    } catch (error) {
      console.warn(`reactor chat: ${error.message}`);
    }
  }
}
