// What the page's scripts find on window beyond the DOM: types for the type check (jsconfig.json).

interface Window {
  /** The page's door into reactor, set by web/reactor.js. */
  reactor: typeof import("./reactor.js").reactor;
  /** Set by a page that embeds reactor before it loads web/reactor.js (the README's embedding). */
  reactorConfig?: { server?: string; plugins?: string[]; agent?: object };
  /** The CommonMark renderer web/vendor/markdown-it defines when web/markdown.js imports it. */
  markdownit?: (preset: string, options: object) => any;
}

/** WebMCP: where a browser that offers it takes a page's tools. */
interface ModelContext {
  registerTool(tool: object, options?: { signal?: AbortSignal }): void;
}
interface Document {
  modelContext?: ModelContext;
}
interface Navigator {
  modelContext?: ModelContext;
}

/** The page's own events on window: what each one's `detail` holds. */
interface WindowEventMap {
  "reactor:agents": CustomEvent<{ connected: boolean; pageId?: string; problem?: string }>;
  "reactor:agent-call": CustomEvent<{ agent: string; tool: string; title: string; at: Date }>;
  "reactor:shown": CustomEvent<{ view: string }>;
  "reactor:chat": CustomEvent<any>;
  "reactor:session": CustomEvent<{ username: string } | null>;
}

/** A plugin view's button asks for a command (plugins/decks/view.js); it bubbles to the stage. */
interface HTMLElementEventMap {
  "reactor:command": CustomEvent<{ command: string; args?: object }>;
}
