/**
 * The page's one Markdown: CommonMark by markdown-it (vendored by web/vendor.py), raw HTML off,
 * so text from a deck, a model or a crawled site stays text; links open in a new tab without
 * a handle on this page. The server renders with markdown-it-py under the same rules.
 */
// Imported by a URL, not a literal, so that the type check does not read the vendored minified code.
await import(new URL("./vendor/markdown-it/markdown-it.min.js", import.meta.url).href);

const markdown = window.markdownit("commonmark", { html: false, linkify: false, typographer: false });
const openLink = markdown.renderer.rules.link_open ?? ((tokens, i, options, env, self) => self.renderToken(tokens, i, options));
markdown.renderer.rules.link_open = (tokens, i, options, env, self) => {
  tokens[i].attrSet("target", "_blank");
  tokens[i].attrSet("rel", "noopener noreferrer");
  return openLink(tokens, i, options, env, self);
};

/** Draw `text` as Markdown into `element`, replacing what was there; `headingShift` pushes
 * its headings down (a slide's `#` under the slide's own title). */
export function renderMarkdown(element, text, headingShift = 0) {
  const tokens = markdown.parse(String(text ?? ""), {});
  for (const token of tokens) {
    if (headingShift && (token.type === "heading_open" || token.type === "heading_close")) {
      token.tag = `h${Math.min(Number(token.tag.slice(1)) + headingShift, 6)}`;
    }
  }
  element.innerHTML = markdown.renderer.render(tokens, markdown.options, {});
  return element;
}
