// The decks view: draws the state the decks plugin passes to page.show("decks", state).
// All logic lives in Python; this only draws. Every piece of user data is set as text
// (textContent), never as HTML. Buttons ask for a command by dispatching a bubbling
// `reactor:command` event ({detail: {command, args}}); on the reactor page, the code at the
// end of this module runs it through window.reactor.executeCommand.

/**
 * Draw the decks view into `root`, replacing what was there.
 *
 * @param {HTMLElement} root the element the view owns
 * @param {{
 *   decks?: Array<{id: string, title: string, slides: number, saved?: boolean}>,
 *   deck?: {id: string, title: string, theme?: string, slides: Array<{title: string, body: string}>},
 *   slide?: number,
 *   blocks?: Array<{kind: string, text?: string, level?: number, ordered?: boolean, items?: string[]}>,
 *   presenting?: boolean,
 *   message?: string,
 * }} state plain data from the decks plugin; `blocks` is the current slide's body, cut in Python
 */
export function renderDecks(root, state) {
  const doc = root.ownerDocument;
  const el = (tag, attributes = {}, text = undefined) => {
    const node = doc.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  };
  const run = (command, args = {}) =>
    root.dispatchEvent(
      new CustomEvent('reactor:command', { bubbles: true, composed: true, detail: { command, args } }),
    );
  const button = (label, command, args, testid) => {
    const node = el('button', { type: 'button', 'data-testid': testid }, label);
    node.addEventListener('click', () => run(command, args));
    return node;
  };

  root.replaceChildren();
  root.classList.add('decks');
  root.classList.toggle('decks--presenting', Boolean(state.presenting));
  root.dataset.theme = (state.deck && state.deck.theme) || 'light';
  root.onkeydown = null;

  if (state.decks) {
    const list = el('ul', { class: 'decks-list', 'data-testid': 'deck-list' });
    for (const deck of state.decks) {
      const item = el('li', { 'data-deck-id': deck.id });
      item.append(
        el('span', { class: 'decks-list-title' }, deck.title),
        el('span', { class: 'decks-list-count' }, `${deck.slides} slide${deck.slides === 1 ? '' : 's'}`),
      );
      if (deck.saved === false) item.append(el('span', { class: 'decks-unsaved' }, 'not saved'));
      item.append(button('Open', 'decks.open', { id: deck.id }, 'open-deck'));
      list.append(item);
    }
    root.append(el('h1', { class: 'decks-heading' }, 'Decks'), list);
  }

  if (state.deck) {
    const slides = state.deck.slides;
    const number = Math.min(Math.max(state.slide || 1, 1), slides.length);
    const slide = slides[number - 1];
    const header = el('header', { class: 'decks-header' });
    header.append(
      el('h1', { 'data-testid': 'deck-title' }, state.deck.title),
      el('p', { class: 'decks-number', 'data-testid': 'slide-number' }, `Slide ${number} of ${slides.length}`),
    );
    const body = el('div', { class: 'decks-body', 'data-testid': 'slide-body' });
    for (const block of state.blocks || paragraphs(slide.body)) body.append(drawBlock(el, block));
    const article = el('article', { class: 'decks-slide' });
    article.append(el('h2', { 'data-testid': 'slide-title' }, slide.title), body);
    const controls = el('nav', { class: 'decks-controls' });
    controls.append(
      button('Previous', 'decks.previousSlide', {}, 'previous-slide'),
      button('Next', 'decks.nextSlide', {}, 'next-slide'),
      button('Present', 'decks.present', {}, 'present'),
      button('Print', 'decks.print', { id: state.deck.id }, 'print'),
    );
    root.append(header, article, controls);
    root.tabIndex = 0;
    root.onkeydown = (event) => {
      if (['ArrowRight', 'PageDown', ' '].includes(event.key)) run('decks.nextSlide');
      else if (['ArrowLeft', 'PageUp'].includes(event.key)) run('decks.previousSlide');
      else return;
      event.preventDefault();
    };
  }

  if (state.message) {
    root.append(el('p', { class: 'decks-message', role: 'status', 'data-testid': 'decks-message' }, state.message));
  }
}

function drawBlock(el, block) {
  if (block.kind === 'heading') return el(`h${Math.min((block.level || 1) + 2, 6)}`, {}, block.text);
  if (block.kind === 'list') {
    const list = el(block.ordered ? 'ol' : 'ul');
    for (const item of block.items || []) list.append(el('li', {}, item));
    return list;
  }
  return el('p', {}, block.text || '');
}

// Used only when the state carries no blocks: plain paragraphs, never HTML.
function paragraphs(text) {
  return String(text || '')
    .split(/\n\s*\n/)
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => ({ kind: 'paragraph', text: part.replace(/\s*\n\s*/g, ' ') }));
}

// On the reactor page (index.html's <section id="decks">), draw there and run the buttons'
// commands. Imported anywhere else (a test harness), the module only exports renderDecks.
const stage = globalThis.document && document.getElementById('decks');
if (stage && globalThis.window && window.reactor && window.reactor.defineView) {
  window.reactor.defineView('decks', (state) => renderDecks(stage, state));
  // Esc, or the browser's own control, leaves full screen: leave presentation mode with it.
  document.addEventListener('fullscreenchange', () => {
    if (!document.fullscreenElement && stage.classList.contains('decks--presenting')) {
      window.reactor.executeCommand('decks.stopPresenting').catch(() => {});
    }
  });
  stage.addEventListener('reactor:command', (event) => {
    const { command, args } = event.detail;
    window.reactor.executeCommand(command, args).catch((error) => {
      renderMessage(stage, error.message);
    });
  });
}

function renderMessage(root, text) {
  let node = root.querySelector('[data-testid="decks-message"]');
  if (!node) {
    node = root.ownerDocument.createElement('p');
    node.className = 'decks-message';
    node.setAttribute('role', 'status');
    node.setAttribute('data-testid', 'decks-message');
    root.append(node);
  }
  node.textContent = text;
}
