/**
 * The one element builder of the page's widgets and plugin views: `el("button", {type: "button",
 * "data-testid": "next"}, "Next")`. Attributes are set as attributes (true: present, false or
 * null: absent, anything else as its string); children are nodes or strings, a string always as
 * text, never as HTML.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, unknown>} [attributes]
 * @param {...(Node | string | null | undefined)} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === true) node.setAttribute(name, "");
    else if (value !== false && value !== null && value !== undefined) node.setAttribute(name, String(value));
  }
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

/**
 * Resolves once the page is idle (within a second at most): a widget that is not needed for the
 * page's first frame draws then, in a task of its own, not in the page's first busy tasks.
 */
export function whenIdle() {
  return new Promise((resolve) => (/** @type {{requestIdleCallback?: unknown}} */ (window).requestIdleCallback ? requestIdleCallback(resolve, { timeout: 1000 }) : setTimeout(resolve)));
}
