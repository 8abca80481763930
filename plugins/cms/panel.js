// The CMS panel: draws the state the CMS plugin passes to page.show("cms", state) and turns the
// person's clicks into commands (cms.selectSite, cms.publishSitePage…). All logic
// lives in Python; every piece of data is set as text (textContent), never as HTML.

import { el } from '/web/dom.js';

/**
 * Draw the CMS panel into `root`, replacing what was there.
 *
 * @param {HTMLElement} root the element the panel owns
 * @param {{
 *   signedIn: boolean, username: string, site: string, role: string, current: string, message: string,
 *   sites: Array<{id: string, title: string, role: string}>,
 *   entries: Array<{slug: string, title: string, collection: string, status: string, url: ?string}>,
 * }} state plain data from the CMS plugin
 * @param {(command: string, args?: object) => Promise<unknown>} run runs a command, reporting failures
 */
export function renderCmsPanel(root, state, run) {
  const button = (label, testid, onClick) => {
    const node = el('button', { type: 'button', 'data-testid': testid }, label);
    node.addEventListener('click', onClick);
    return node;
  };

  root.replaceChildren(el('h2', { id: 'cms-title' }, 'CMS'));
  root.classList.add('cms');

  // One sign-in serves the page: the header's form. The panel follows that session.
  if (!state.signedIn) {
    root.append(el('p', { class: 'cms-empty', 'data-testid': 'cms-signed-out' },
      'Sign in at the top of the page to see your sites and their pages.'));
  } else {
    if (!state.sites.length) {
      root.append(el('p', { class: 'cms-empty', 'data-testid': 'cms-no-sites' },
        `${state.username} is not a member of any site yet; an administrator adds members.`));
    } else {
      const select = el('select', { 'aria-label': 'Site', 'data-testid': 'cms-site' });
      for (const site of state.sites) {
        const option = el('option', { value: site.id }, `${site.title} (${site.role})`);
        option.selected = site.id === state.site;
        select.append(option);
      }
      select.addEventListener('change', () => run('cms.selectSite', { site: select.value }));
      root.append(select, button('Refresh', 'cms-refresh', () => run('cms.refreshSiteView')));
    }
    if (state.sites.length && !state.entries.length) {
      root.append(el('p', { class: 'cms-empty' }, 'No pages on this site yet: ask the assistant to crawl a blog into drafts.'));
    }
    const list = el('ul', { class: 'cms-entries', 'data-testid': 'cms-entries' });
    for (const entry of state.entries) {
      const item = el('li', { 'data-slug': entry.slug, 'data-status': entry.status });
      if (entry.slug === state.current) item.classList.add('cms-current');
      const title = el('button', { type: 'button', class: 'cms-entry-title', 'data-testid': 'cms-entry-title' }, entry.title);
      title.addEventListener('click', () => run('cms.selectEntry', { slug: entry.slug }));
      item.append(title, el('span', { class: `cms-status cms-status--${entry.status}`, 'data-testid': 'cms-status' }, entry.status),
        el('span', { class: 'cms-collection' }, entry.collection));
      if (entry.status === 'published') {
        item.append(button('Show', 'cms-show', () => run('cms.showSitePage', { slug: entry.slug })));
      } else if (state.role === 'publisher') {
        item.append(button('Publish', 'cms-publish', () => run('cms.publishSitePage', { slug: entry.slug })));
      }
      list.append(item);
    }
    root.append(list);
  }
  if (state.message) root.append(el('p', { class: 'cms-message', role: 'status', 'data-testid': 'cms-message' }, state.message));
}

function say(root, text) {
  let node = root.querySelector('[data-testid="cms-message"]');
  if (!node) {
    node = root.ownerDocument.createElement('p');
    node.className = 'cms-message';
    node.setAttribute('role', 'status');
    node.setAttribute('data-testid', 'cms-message');
    root.append(node);
  }
  node.textContent = text;
}

// On the reactor page (index.html's <section id="cms">), draw there; once Python is ready,
// a session cookie from before a reload signs the person back in.
const panel = globalThis.document && document.getElementById('cms');
if (panel && globalThis.window && window.reactor && window.reactor.defineView) {
  const run = (command, args = {}) =>
    window.reactor.executeCommand(command, args).catch((error) => say(panel, error.display ?? error.message));
  window.reactor.defineView('cms', (state) => renderCmsPanel(panel, state, run));
  say(panel, 'Loading the CMS…');
  window.reactor.ready.then(() => run('cms.restoreSession'), () => {});
  // One sign-in for the page: the header's sign-in or sign-out reaches the CMS too.
  window.addEventListener('reactor:session', () => window.reactor.ready.then(() => run('cms.restoreSession')));
}
