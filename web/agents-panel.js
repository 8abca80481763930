/**
 * The demo page's *Agents* panel: the switch "Let my agents use this page" (off by default,
 * remembered in localStorage); how to connect an agent by sign-in (the address alone: the agent
 * opens this server's consent page, server/agents/oauth/); the agents the person allowed, with
 * when each last called and Revoke; and agent tokens for agents that cannot sign in — make one
 * (its secret shown once, with the lines that give it to each agent), list, revoke.
 */
import { el, whenIdle } from "./dom.js";

const SWITCH_KEY = "reactor.agents.enabled";
const box = document.getElementById("agents");
const mcpUrl = new URL("/mcp", location.href).href;
let user = null;

function api(path, options = {}) {
  return fetch(path, { ...options, headers: { "content-type": "application/json", ...(options.headers ?? {}) } });
}

const status = el("p", { class: "agents-status", role: "status", "data-testid": "agents-status" });
const lastCall = el("p", { class: "agents-last-call", "data-testid": "agents-last-call", hidden: "" });
const toggle = el("input", { type: "checkbox", "data-testid": "agents-switch" });
// shown with a problem the link stopped on: it tries again when the person asks
const retry = el("button", { type: "button", hidden: "" }, "Try again");
retry.addEventListener("click", () => follow());
const tokens = el("ul", { class: "agents-tokens", "data-testid": "agent-tokens" });
const connections = el("ul", { class: "agents-tokens", "data-testid": "agent-connections" });
const connect = el("div", { class: "agents-connect", "data-testid": "agent-connect" });
const signedInOnly = el("div", { class: "agents-signed-in", hidden: "" });
const made = el("div", { class: "agents-made", "data-testid": "agent-token-made" });
const nameInput = el("input", { name: "token-name", placeholder: "Which agent? e.g. Claude Code on my laptop", maxlength: "80", "aria-label": "Which agent the token is for" });
const makeButton = el("button", { type: "submit" }, "Make a token");
const form = el("form", { class: "agents-form" }, nameInput, makeButton);
const formNote = el("span", { class: "agents-note", "data-testid": "agent-token-note" });
const formError = el("span", { class: "session-error", role: "alert" });
form.append(formNote, formError);

toggle.addEventListener("change", () => {
  localStorage.setItem(SWITCH_KEY, toggle.checked ? "on" : "off");
  follow();
});

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  formError.textContent = "";
  const response = await api("/api/agent-tokens", { method: "POST", body: JSON.stringify({ name: nameInput.value }) });
  const answer = await response.json();
  if (!response.ok) { formError.textContent = answer.error; return; }
  nameInput.value = "";
  showOnce(answer);
  listTokens();
});

/** A titled line to copy, with its Copy button. */
function snippet(title, text, testid) {
  const copy = el("button", { type: "button" }, "Copy");
  copy.addEventListener("click", () => navigator.clipboard?.writeText(text).then(() => { copy.textContent = "Copied"; }, () => {}));
  return el("div", { class: "agents-snippet" }, el("strong", {}, title), " ", copy, el("pre", { "data-testid": testid }, text));
}

/** The lines that connect an agent by sign-in: the address alone, where the agent speaks MCP's
 * OAuth (Claude Code, Cursor, VS Code); it then opens this server's consent page. Claude Desktop's
 * own connectors reach a server from Anthropic's cloud: for a server on this computer (or plain
 * http), its mcp-remote bridge signs in instead. */
function drawConnect() {
  const json = (value) => JSON.stringify(value, null, 2);
  const url = new URL(mcpUrl);
  const local = url.protocol === "http:" || ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  const bridge = ["-y", "mcp-remote", mcpUrl];
  if (url.protocol === "http:" && !["localhost", "127.0.0.1"].includes(url.hostname)) bridge.push("--allow-http");
  connect.replaceChildren(
    el("p", {}, "Give your agent this address; it opens this page to ask you, and you choose Allow or Deny."),
    snippet("Claude Code, in a terminal", `claude mcp add --transport http reactor ${mcpUrl}`, "agent-connect-claude-code"),
    local
      ? snippet("Claude Desktop, in claude_desktop_config.json (needs Node.js)", json({ mcpServers: { reactor: { command: "npx", args: bridge } } }), "agent-connect-desktop-json")
      : snippet("Claude Desktop, in Settings › Connectors › Add custom connector", mcpUrl, "agent-connect-desktop-json"),
    snippet("Cursor, in ~/.cursor/mcp.json", json({ mcpServers: { reactor: { url: mcpUrl } } }), "agent-connect-cursor-json"),
    snippet("VS Code, in .vscode/mcp.json", json({ servers: { reactor: { type: "http", url: mcpUrl } } }), "agent-connect-vscode-json"),
  );
}

/** The secret, once: with the lines that hand it to each agent, as each one's documentation
 * spells its configuration. Claude Desktop reads no `url` entry in claude_desktop_config.json
 * (remote servers are its Connectors, which take no bearer token): it starts `mcp-remote`, a
 * stdio bridge, which sends the header; the header comes from `env`, since Desktop on Windows
 * splits arguments at spaces, and mcp-remote refuses plain http except on localhost/127.0.0.1
 * without --allow-http. */
function showOnce({ name, token }) {
  const bearer = `Bearer ${token}`;
  const claudeCode = `claude mcp add --transport http reactor ${mcpUrl} --header "Authorization: ${bearer}"`;
  const url = new URL(mcpUrl);
  const bridge = ["-y", "mcp-remote", mcpUrl, "--header", "Authorization:${AUTH_HEADER}"];
  if (url.protocol === "http:" && !["localhost", "127.0.0.1"].includes(url.hostname)) bridge.push("--allow-http");
  const json = (value) => JSON.stringify(value, null, 2);
  const desktop = json({ mcpServers: { reactor: { command: "npx", args: bridge, env: { AUTH_HEADER: bearer } } } });
  const cursor = json({ mcpServers: { reactor: { url: mcpUrl, headers: { Authorization: bearer } } } });
  const vscode = json({ servers: { reactor: { type: "http", url: mcpUrl, headers: { Authorization: bearer } } } });
  const hide = el("button", { type: "button" }, "Done: hide it");
  hide.addEventListener("click", () => made.replaceChildren());
  made.replaceChildren(
    el("p", {}, `The token for “${name}”. It is shown this once: copy it now.`),
    snippet("Token", token, "agent-token-secret"),
    snippet("Claude Code: run in a terminal", claudeCode, "agent-claude-code"),
    snippet("Claude Desktop: claude_desktop_config.json (needs Node.js), then restart Claude", desktop, "agent-desktop-json"),
    snippet("Cursor: ~/.cursor/mcp.json", cursor, "agent-cursor-json"),
    snippet("VS Code: .vscode/mcp.json (or MCP: Open User Configuration)", vscode, "agent-vscode-json"),
    hide,
  );
}

const when = (seconds) => (seconds ? new Date(seconds * 1000).toLocaleString() : "never");

/** The agents the person allowed (OAuth), each with Revoke, which asks first. */
async function listConnections() {
  if (!user) { connections.replaceChildren(); return; }
  const response = await api("/api/agent-connections");
  if (!response.ok) return;
  connections.replaceChildren(...(await response.json()).map((connection) => {
    const item = el("li", { "data-connection-id": connection.id });
    const revoke = el("button", { type: "button" }, "Revoke");
    const draw = () => item.replaceChildren(el("strong", {}, connection.name),
      ` allowed ${when(connection.created)}, last called ${when(connection.lastUsed)} `, revoke);
    revoke.addEventListener("click", () => {
      const yes = el("button", { type: "button" }, "Revoke");
      const no = el("button", { type: "button" }, "Keep");
      yes.addEventListener("click", async () => {
        await api(`/api/agent-connections/${encodeURIComponent(connection.id)}`, { method: "DELETE" });
        listConnections();
      });
      no.addEventListener("click", () => { draw(); revoke.focus(); });
      item.replaceChildren(el("span", { role: "alert" }, `Revoke ${connection.name}? Its next call is refused; to use it again, allow it again. `), yes, " ", no);
      no.focus();
    });
    draw();
    return item;
  }));
}

async function listTokens() {
  if (!user) { tokens.replaceChildren(); return; }
  const response = await api("/api/agent-tokens");
  if (!response.ok) return;
  tokens.replaceChildren(...(await response.json()).map((token) => {
    const item = el("li", { "data-token-id": token.id }, el("strong", {}, token.name),
      ` made ${when(token.created)}, last used ${when(token.lastUsed)} `);
    const revoke = el("button", { type: "button" }, "Revoke");
    // Revoking cannot be undone: the panel asks first, in place.
    revoke.addEventListener("click", () => {
      const yes = el("button", { type: "button" }, "Yes, revoke it");
      const no = el("button", { type: "button" }, "Keep it");
      const question = el("span", { role: "alert" }, `Revoke “${token.name}”? An agent using it is refused from its next request. `, yes, " ", no);
      yes.addEventListener("click", async () => {
        await api(`/api/agent-tokens/${encodeURIComponent(token.id)}`, { method: "DELETE" });
        listTokens();
      });
      no.addEventListener("click", () => { question.replaceWith(revoke); revoke.focus(); });
      revoke.replaceWith(question);
      no.focus();
    });
    item.append(revoke);
    return item;
  }));
}

/** Connect while the switch is on and someone is signed in; disconnect otherwise. */
async function follow() {
  // Signed out, nothing of the last person stays: their agents' last call, their token's secret;
  // making a token waits for someone to sign in, and says so.
  nameInput.disabled = makeButton.disabled = !user;
  formNote.textContent = user ? "" : "Sign in to make a token for an agent.";
  retry.hidden = true;
  signedInOnly.hidden = !user;
  delete status.dataset.page;
  if (!user) {
    made.replaceChildren();
    lastCall.hidden = true;
    lastCall.textContent = "";
    status.textContent = "Sign in to let your agents use this page.";
    await window.reactor.agents.disconnect();
    return;
  }
  if (!toggle.checked) {
    status.textContent = `Your agents cannot use this page. MCP address: ${mcpUrl}`;
    await window.reactor.agents.disconnect();
    return;
  }
  status.textContent = "Connecting…";
  try {
    const { pageId } = await window.reactor.agents.connect();
    status.dataset.page = pageId;
    status.textContent = `Your agents can use this page's tools (page ${pageId}) at ${mcpUrl}.`;
  } catch (error) {
    if (!toggle.checked || !user) return;  // switched off or signed out meanwhile: said already
    status.textContent = error.message;
    retry.hidden = false;
  }
}

window.addEventListener("reactor:agents", ({ detail }) => {
  if (!toggle.checked || !user) return;
  retry.hidden = !detail.problem;
  if (detail.problem) {
    delete status.dataset.page;
    status.textContent = detail.problem;
  } else if (detail.connected) {
    status.dataset.page = detail.pageId;
    status.textContent = `Your agents can use this page's tools (page ${detail.pageId}) at ${mcpUrl}.`;
  } else {
    delete status.dataset.page;
    status.textContent = "Connection lost; connecting again…";
  }
});

// What an agent last asked this page for, in the words the person sees in the palette (the worker
// tells the last call at most once a second: web/agent-socket.js).
window.addEventListener("reactor:agent-call", ({ detail }) => {
  if (!user) return;  // told just as its person signed out
  const { agent, title, at } = detail;
  lastCall.hidden = false;
  lastCall.textContent = `${agent || "An agent"} asked for “${title}” at ${at.toLocaleTimeString()}.`;
  listConnections();  // when each allowed agent last called
});

// Drawn once the page is idle, in a task of its own: the panel is not needed for the page's first
// frame. It follows the switch and the session from then on.
whenIdle().then(() => {
  toggle.checked = localStorage.getItem(SWITCH_KEY) === "on";
  drawConnect();
  signedInOnly.append(
    el("h3", {}, "Connect an agent"), connect,
    el("h3", {}, "Agents you allowed"), connections,
    el("h3", {}, "Tokens, for agents that cannot sign in"),
  );
  box.append(
    el("h2", { id: "agents-title" }, "Agents"),
    el("label", { class: "agents-switch" }, toggle, " Let my agents use this page"),
    status, retry, lastCall, signedInOnly, form, made, tokens,
  );
  window.addEventListener("reactor:session", ({ detail }) => {
    const before = user?.username;
    user = detail;
    if (before && before !== user?.username) window.reactor.agents.disconnect();  // never carry a page to another person
    follow();
    listTokens();
    listConnections();
  });
  fetch("/auth/session").then((r) => r.json()).then(({ user: current }) => {
    user = current;
    follow();
    listTokens();
    listConnections();
  }, () => follow());
});
