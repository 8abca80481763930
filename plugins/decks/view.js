// The decks view: draws the state the decks plugin passes to page.show("decks", state).
// All logic lives in Python; this only draws. Every piece of user data is set as text
// (textContent), never as HTML, but a slide's body, drawn by the page's CommonMark with raw
// HTML off (web/markdown.js). Buttons ask for a command by dispatching a bubbling
// `reactor:command` event ({detail: {command, args}}); on the reactor page, the code at the
// end of this module runs it through window.reactor.executeCommand.

import { el } from '/web/dom.js';

// web/markdown.js: imported once the page is ready and idle (or by the first slide), not while
// the page boots: evaluating markdown-it then made a long task on the host page's main thread.
let markdown = null;
const loadMarkdown = () => (markdown ??= import('/web/markdown.js'));

/**
 * Draw the decks view into `root`, replacing what was there.
 *
 * @param {HTMLElement} root the element the view owns
 * @param {{
 *   decks?: Array<{id: string, title: string, slides: number, saved?: boolean}>,
 *   deck?: {id: string, title: string, theme?: string, slides: Array<{title: string, body: string}>},
 *   slide?: number,
 *   presenting?: boolean,
 *   message?: string,
 *   focus?: boolean,
 * }} state plain data from the decks plugin; a slide's body is Markdown, drawn as CommonMark
 */
export function renderDecks(root, state) {
  const run = (command, args = {}) =>
    root.dispatchEvent(
      new CustomEvent('reactor:command', { bubbles: true, composed: true, detail: { command, args } }),
    );
  const button = (label, command, args, testid) => {
    const node = el('button', { type: 'button', 'data-testid': testid }, label);
    node.addEventListener('click', () => run(command, args));
    return node;
  };

  // A button pressed in the view goes with the redraw: the focus it had stays in the view.
  const hadFocus = root.contains(document.activeElement);
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
    root.dataset.deckId = state.deck.id;
    root.dataset.slide = String(number);
    const slide = slides[number - 1];
    const back = button('← All decks', 'decks.list', {}, 'back-to-list');
    back.classList.add('decks-back');
    root.append(back);
    const header = el('header', { class: 'decks-header' });
    header.append(
      el('h1', { 'data-testid': 'deck-title' }, state.deck.title),
      el('p', { class: 'decks-number', 'data-testid': 'slide-number' }, `Slide ${number} of ${slides.length}`),
    );
    const body = el('div', { class: 'decks-body', 'data-testid': 'slide-body' }, slide.body);
    loadMarkdown().then(({ renderMarkdown }) => renderMarkdown(body, slide.body, 2));
    const article = el('article', { class: 'decks-slide' });
    article.append(el('h2', { 'data-testid': 'slide-title' }, slide.title), body);
    const controls = el('nav', { class: 'decks-controls' });
    controls.append(
      button('Previous', 'decks.previousSlide', {}, 'previous-slide'),
      button('Next', 'decks.nextSlide', {}, 'next-slide'),
      button('Present', 'decks.present', {}, 'present'),
      button('Print', 'decks.print', { id: state.deck.id }, 'print'),
    );
    if (state.presenting) {
      controls.querySelector('[data-testid="present"]').replaceWith(button('Stop', 'decks.stopPresenting', {}, 'stop-presenting'));
      controls.append(el('span', { class: 'decks-number' }, `${number} / ${slides.length}`));
      // A click on the slide moves on, as in every presentation program.
      article.addEventListener('click', () => run('decks.nextSlide'));
    }
    root.append(header, article, controls);
    root.tabIndex = 0;
    root.onkeydown = (event) => {
      if (['ArrowRight', 'ArrowDown', 'PageDown', ' '].includes(event.key)) run('decks.nextSlide');
      else if (['ArrowLeft', 'ArrowUp', 'PageUp'].includes(event.key)) run('decks.previousSlide');
      else if (event.key === 'Home') run('decks.goToSlide', { slide: 1 });
      else if (event.key === 'End') run('decks.goToSlide', { slide: slides.length });
      // Esc leaves a presentation; where the browser takes Esc itself to leave full screen, the
      // fullscreenchange listener below does the same.
      else if (event.key === 'Escape' && state.presenting) run('decks.stopPresenting');
      else return;
      event.preventDefault();
    };
    // The keys reach the slide without a click on it first: once it is opened (from its button,
    // the palette, the chat or its address), while it is presented, and after its own buttons.
    if (state.focus) root.focus();
    else if ((state.presenting || hadFocus) && document.activeElement !== root) root.focus({ preventScroll: true });
  }
  // Presentation ended from the palette or by an agent: leave full screen with it.
  if (!state.presenting && document.fullscreenElement === root) document.exitFullscreen().catch(() => {});

  if (state.message) {
    root.append(el('p', { class: 'decks-message', role: 'status', 'data-testid': 'decks-message' }, state.message));
  }
}

// On the reactor page (index.html's <section id="decks">), draw there and run the buttons'
// commands. Imported anywhere else (a test harness), the module only exports renderDecks.
const stage = globalThis.document && document.getElementById('decks');
if (stage && globalThis.window && window.reactor && window.reactor.defineView) {
  // Presenting puts the stage alone in full screen, not the page with its sidebar.
  window.reactor.defineView('decks', (state) => { renderDecks(stage, state); keepAddress(state); }, { element: stage });
  // The address names the deck and slide on screen (#/decks/onboarding/4): a link opens it, a
  // reload restores it, and the browser's Back goes where the person was.
  window.reactor.ready.then(() => followAddress(), () => {});
  window.addEventListener('popstate', () => followAddress());
  window.addEventListener('hashchange', () => followAddress());
  window.reactor.ready.then(() => (globalThis.requestIdleCallback ?? setTimeout)(loadMarkdown), () => {});
  // Esc, or the browser's own control, leaves full screen: leave presentation mode with it.
  document.addEventListener('fullscreenchange', () => {
    if (!document.fullscreenElement && stage.classList.contains('decks--presenting')) {
      window.reactor.executeCommand('decks.stopPresenting').catch(() => {});
    }
  });
  // Who is signed in decides which decks there are: a list on screen is listed again.
  window.addEventListener('reactor:session', () => {
    if (stage.querySelector('[data-testid="deck-list"]')) window.reactor.executeCommand('decks.list').catch(() => {});
  });
  stage.addEventListener('reactor:command', (event) => {
    const { command, args } = event.detail;
    window.reactor.executeCommand(command, args).catch((error) => {
      renderMessage(stage, error.display ?? error.message);
    });
  });
}

const ADDRESS = /^#\/decks(?:\/([^/]+)(?:\/(\d+))?)?\/?$/;

/** The deck and slide an address names: {id, slide}, {} for the list, or null for none. */
function addressed(hash) {
  const match = ADDRESS.exec(hash);
  if (!match) return null;
  if (!match[1]) return {};
  return match[2] ? { id: decodeURIComponent(match[1]), slide: Number(match[2]) } : { id: decodeURIComponent(match[1]) };
}

/** Put what is on screen in the address: a new deck or the list is a new entry of the history,
 * a move within a deck replaces the current one. */
let deckInAddress = false;  // a deck is on screen and in the address (the list then replaces it)

const PAGE_TITLE = globalThis.document?.title ?? '';

function keepAddress(state) {
  // The tab's title says which deck is on screen (a person's tab list, an agent's list of pages).
  document.title = state.deck ? `${state.deck.title} – ${PAGE_TITLE}` : PAGE_TITLE;
  const here = addressed(location.hash);
  let want;
  if (state.deck) {
    deckInAddress = true;
    want = `#/decks/${encodeURIComponent(state.deck.id)}/${state.slide || 1}`;
  } else if (state.decks) {
    const leftDeck = deckInAddress && Boolean(here?.id);  // not when the address itself went back
    deckInAddress = false;
    if (!leftDeck) return;  // the first list, or one the address asked for, leaves it alone
    want = '#/decks';
  } else {
    return;
  }
  if (location.hash === want) return;
  const sameDeck = state.deck && here && here.id === state.deck.id;
  history[sameDeck ? 'replaceState' : 'pushState'](null, '', want);
}

/** Show what the address names, unless it is on screen already. */
function followAddress() {
  // No address at all is the page as it opened: the list (Back from the first deck opened).
  const wanted = location.hash === '' ? {} : addressed(location.hash);
  if (!wanted) return;
  const shownId = stage.querySelector('[data-testid="deck-title"]') ? stage.dataset.deckId : null;
  const shownSlide = Number(stage.dataset.slide || 0);
  if (wanted.id === undefined) {
    if (shownId) window.reactor.executeCommand('decks.list').catch((error) => renderMessage(stage, error.display ?? error.message));
    return;
  }
  if (wanted.id === shownId && (wanted.slide ?? shownSlide) === shownSlide) return;
  window.reactor.executeCommand('decks.open', wanted).catch((error) => renderMessage(stage, error.display ?? error.message));
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
