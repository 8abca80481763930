/**
 * The command palette and the agent-tools list beside the stage: what a person can run, and
 * what an agent may call. The palette is redrawn whenever commands come or go and whenever a
 * view changes (opening a deck enables Next Slide); a command that takes arguments opens a
 * small form drawn from its JSON Schema, and every outcome is shown, never only logged.
 */
import { el } from "./dom.js";

const list = document.getElementById("palette");
// The filter comes with the commands it filters: the page's first frame has no form control (the
// first one's styles cost that frame several milliseconds).
const filter = el("input", { id: "palette-filter", type: "search", placeholder: "Filter commands", "aria-label": "Filter commands" });
const tools = document.getElementById("agent-tools");
const status = document.getElementById("palette-status");
// Only so many commands and tools are drawn: a page of thousands draws what a person can read,
// and the filter finds the rest (each definition of a plugin redraws, so this bounds its cost).
const DRAWN = 100;
let drawn = null;  // the drawing under way, and whether another was asked for meanwhile
let redraw = false;
let open = null;  // the id of the command whose form is open, and that form (kept across redraws: what was typed stays)
let openForm = null;
let bundles = [];  // the latest AgentTools bundles (patternMessages: what a `pattern` asks for)
let toolsDrawn = [];  // the tools drawn in the agent-tools list, as drawn
let commandsDrawn = "";  // the commands drawn in the palette and its open form, as JSON

/**
 * Redraw the palette: one drawing at a time, and one more after it for all the asks meanwhile,
 * after a pause of a few times what the last one took. A page defining plugins one by one then
 * spends at most a fifth of the worker's time listing commands, however many there are.
 */
function drawCommands() {
  if (drawn) {
    redraw = true;
    return drawn;
  }
  const started = performance.now();
  drawn = draw().finally(() => {
    const pause = 4 * (performance.now() - started);
    setTimeout(() => {
      drawn = null;
      if (redraw) {
        redraw = false;
        drawCommands();
      }
    }, pause);
  });
  return drawn;
}

async function draw() {
  const words = filter.value.trim();
  // Only what is drawn is asked for; an open form stays, wherever its command is.
  const include = open ? [open] : [];
  const found = await window.reactor.findCommands(words, { limit: DRAWN, include });
  const { commands: shown, matching } = found;
  const rest = more(matching - shown.length, "commands");
  const drawing = JSON.stringify([open, shown]);
  if (shown.length && drawing === commandsDrawn) {  // the same commands: only the count may change
    recount(list, rest);
    return;
  }
  commandsDrawn = drawing;
  if (!shown.length) {
    list.replaceChildren(el("li", { class: "palette-empty" },
      words ? `No command matches “${words}”.` : "No plugin has registered a command yet."));
    return;
  }
  // A redraw moves the open form into the new list: what the person was typing in keeps its focus.
  const typing = openForm?.contains(document.activeElement) ? /** @type {HTMLInputElement} */ (document.activeElement) : null;
  const caret = typing && "selectionStart" in typing ? [typing.selectionStart, typing.selectionEnd] : null;
  list.replaceChildren(...shown
    .map((command) => {
      const li = el("li");
      const button = el("button", { type: "button", title: `${command.id}: ${command.description}` }, command.label);
      button.dataset.command = command.id;
      button.disabled = !command.available;
      const fields = Object.keys(command.parameters?.properties ?? {});
      if (fields.length) {
        button.setAttribute("aria-expanded", String(open === command.id));
        button.addEventListener("click", () => { toggle(command.id); drawCommands(); });
      } else {
        button.addEventListener("click", () => run(command, {}));
      }
      li.append(button);
      if (open === command.id && command.available) li.append(openForm ??= form(command));
      return li;
    }),
    ...rest);
  if (typing?.isConnected) {
    typing.focus({ preventScroll: true });
    if (caret) try { typing.setSelectionRange(caret[0], caret[1]); } catch { /* not a text field */ }
  }
}

/** Open `id`'s form, or close it if open; a closed form leaves the screen now, not at the next redraw. */
function toggle(id) {
  openForm?.previousElementSibling?.setAttribute("aria-expanded", "false");
  openForm?.remove();
  open = open === id ? null : id;
  openForm = null;
}

/** A form for `command`'s arguments: required fields first, enums as selects, JSON for the rest. */
function form(command) {
  const schema = command.parameters;
  const required = new Set(schema.required ?? []);
  const names = Object.keys(schema.properties).sort((a, b) => Number(required.has(b)) - Number(required.has(a)));
  const node = el("form", { class: "palette-form", "data-form": command.id, novalidate: "" });
  const inputs = new Map();
  for (const name of names) {
    const property = schema.properties[name] ?? {};
    const id = `palette-${command.id}-${name}`.replace(/[^\w-]/g, "-");
    const label = el("label", { for: id }, required.has(name) ? `${name} *` : name);
    const input = field(property, id, name);
    const hint = el("small", { class: "palette-hint" }, property.description ?? "");
    const problem = el("small", { class: "palette-problem", role: "alert", "data-problem": name });
    inputs.set(name, { input, property, problem });
    node.append(label, input, hint, problem);
  }
  const general = el("p", { class: "palette-problem", role: "alert" });
  node.append(el("button", { type: "submit" }, "Run"), general);
  const say = (target, text) => { target.textContent = target.textContent ? `${target.textContent} ${text}` : text; };
  node.addEventListener("submit", async (event) => {
    event.preventDefault();
    for (const { problem } of inputs.values()) problem.textContent = "";
    general.textContent = "";
    // Every field is read before anything runs; the command's schema then checks them all, and
    // every field's problem is said at once.
    const args = {};
    let unread = false;
    for (const [name, { input, property, problem }] of inputs) {
      try {
        const value = read(input, property);
        if (value !== undefined) args[name] = value;
      } catch (error) {
        say(problem, error.message);
        unread = true;
      }
    }
    if (unread) {
      attempt("error", `${command.label}: check the fields above.`);
      return;
    }
    const error = await run(command, args);
    if (!error) return;
    for (const item of error.problems ?? []) {
      const name = problemField(item);
      const known = inputs.get(name);
      say(known?.problem ?? general, known ? inWords(item, known.property) : item.message);
    }
    if (error.problems?.length) attempt("error", `${command.label}: check the fields above.`);
    else general.textContent = error.display ?? error.message;
  });
  return node;
}

/** A field's problem as a person reads it: what the field asks for, never a regular expression;
 * a problem inside a list or an object says where ("Item 1, title: should be text."). */
function inWords({ path, message }, property) {
  const text = message ?? "";
  const inside = /^\$\.[\w-]+([[.].*)$/.exec(path ?? "")?.[1];
  if (inside) return `${where(inside)}: ${shortly(text)}`;
  if (/is a required property|should be non-empty|is too short/.test(text) && !(property.minLength > 1)) return "Fill this in.";
  if (/does not match/.test(text)) {
    const said = patternWord(property.pattern) ?? property.description;
    return said ?? "This is not in the form this field takes.";
  }
  if (/is too long/.test(text) && property.maxLength !== undefined) return `At most ${property.maxLength} characters.`;
  if (/is too short/.test(text) && property.minLength !== undefined) return `At least ${property.minLength} characters.`;
  if (/is not one of/.test(text)) return "Pick one of the list.";
  if (/is (less|greater) than/.test(text)) {
    const range = [property.minimum, property.maximum];
    if (range.every((n) => n !== undefined)) return `A number from ${range[0]} to ${range[1]}.`;
    return property.minimum !== undefined ? `At least ${property.minimum}.` : `At most ${property.maximum}.`;
  }
  return property.description || text;
}

/** "[0].title" as "Item 1, title". */
function where(inside) {
  const parts = inside.match(/\[\d+\]|\.[\w-]+/g) ?? [];
  const words = parts.map((part) => (part.startsWith("[") ? `item ${Number(part.slice(1, -1)) + 1}` : part.slice(1)));
  const said = words.join(", ");
  return said.charAt(0).toUpperCase() + said.slice(1);
}

const TYPE_WORDS = { string: "text", integer: "a whole number", number: "a number", array: "a list", object: "an object", boolean: "true or false" };

/** A validator's sentence about a part of a field, short and without the schema's syntax. */
function shortly(text) {
  const required = /^'([^']+)' is a required property/.exec(text);
  if (required) return `needs “${required[1]}”.`;
  const type = /is not of type '(\w+)'/.exec(text);
  if (type) return `should be ${TYPE_WORDS[type[1]] ?? type[1]}.`;
  if (/does not match/.test(text)) return "is not in the form it takes.";
  if (/is too long/.test(text)) return "is too long.";
  if (/should be non-empty|is too short/.test(text)) return "is empty.";
  if (/is not one of/.test(text)) return "is not one of the choices.";
  if (/Additional properties are not allowed/.test(text)) return "has a part it does not take.";
  return text;
}

function field(property, id, name) {
  const type = Array.isArray(property.type) ? property.type.find((t) => t !== "null") : property.type;
  // A secret is never shown as typed (the page's own sign-in is the header's form, not a palette form).
  if (type === "string" && (property.format === "password" || property.writeOnly === true || /password/i.test(name))) {
    return el("input", { id, type: "password", autocomplete: "current-password" });
  }
  if (Array.isArray(property.enum)) {
    const select = el("select", { id });
    select.append(el("option", { value: "" }, "—"), ...property.enum.map((value) => el("option", { value: JSON.stringify(value) }, value)));
    return select;
  }
  if (type === "boolean") return el("input", { id, type: "checkbox" });
  if (type === "integer" || type === "number") {
    const input = el("input", { id, type: "number", step: type === "integer" ? "1" : "any" });
    if (property.minimum !== undefined) input.min = property.minimum;
    if (property.maximum !== undefined) input.max = property.maximum;
    return input;
  }
  if (type === "string" && !(property.maxLength > 200)) return el("input", { id, type: "text" });
  const area = el("textarea", { id, rows: "3" });
  if (type !== "string") area.placeholder = type === "array" ? "JSON, e.g. [ ]" : "JSON";
  return area;
}

/** The value typed into `input` as the schema's type; undefined when left empty. */
function read(input, property) {
  if (input.type === "checkbox") return input.checked ? true : undefined;
  const text = input.value.trim();
  if (text === "") return undefined;
  if (input.tagName === "SELECT") return JSON.parse(text);
  if (input.type === "number") return Number(text);
  const type = Array.isArray(property.type) ? property.type.find((t) => t !== "null") : property.type;
  if (type === "string") return input.value;
  try {
    return JSON.parse(text);
  } catch {
    throw new Error("This is not JSON.");
  }
}

/** Which field a validation problem is about: "$.title", or "$" saying "'title' is a required property". */
function problemField({ path, message }) {
  const direct = /^\$\.([\w-]+)/.exec(path ?? "");
  if (direct) return direct[1];
  return /^'([^']+)' is a required property/.exec(message ?? "")?.[1];
}

/** The status line says the last attempt only: whatever an earlier one said goes. */
function attempt(state, text) {
  status.dataset.state = state;
  status.textContent = text;
}

/** Run a command; the outcome goes to the palette's status line. Returns the error, if any. */
async function run(command, args) {
  attempt("running", `${command.label}…`);
  try {
    await window.reactor.executeCommand(command.id, args);
    attempt("done", `${command.label}: done.`);
    if (open === command.id) toggle(null);
    return null;
  } catch (error) {
    attempt("error", `${command.label}: ${error.display ?? error.message}`);
    return error;
  } finally {
    drawCommands();
  }
}

/** What a schema `pattern` asks for, in the words of the first bundle that says it. */
function patternWord(pattern) {
  const saying = bundles.find((bundle) => Object.hasOwn(bundle.patternMessages ?? {}, pattern));
  return saying?.patternMessages[pattern];
}

/**
 * Draw the first tools and a line saying how many more: only the line changes when what came
 * or went is past the tools drawn (a plugin defined at 10,000 tools costs what it did at 10).
 */
function drawTools(latest) {
  bundles = latest;
  const shown = [];
  let count = 0;
  for (const bundle of bundles) {
    if (shown.length < DRAWN) shown.push(...bundle.commands.slice(0, DRAWN - shown.length));
    count += bundle.commands.length;
  }
  const rest = more(count - shown.length, "tools", "");
  if (shown.length === toolsDrawn.length && shown.every((tool, i) => tool === toolsDrawn[i])) {
    recount(tools, rest);
    return;
  }
  toolsDrawn = shown;
  const line = (t) => el("li", { title: t.description ?? "" }, `${t.name} → ${t.command}`);
  tools.replaceChildren(...shown.map(line), ...rest);
}

/** Put `rest` (the line saying how many more, or none) in place of `list`'s: only its words change. */
function recount(list, rest) {
  const line = list.querySelector(":scope > .palette-empty");
  if (line && rest.length) line.textContent = rest[0].textContent;
  else line?.remove();
  if (!line) list.append(...rest);
}

/** The line that says how many are not drawn, if any. */
function more(count, what, hint = ": type in the filter to find one") {
  return count > 0 ? [el("li", { class: "palette-empty" }, `…and ${count} more ${what}${hint}.`)] : [];
}

window.reactor.ready.then(() => {
  status.before(filter);
  drawCommands();
  window.reactor.agentToolBundles().then(drawTools);
  window.reactor.onAgentToolBundles(drawTools);
  window.reactor.onCommandsChanged(drawCommands);
  // A view changed: what is enabled may have changed with it (a deck opened, presenting ended).
  window.addEventListener("reactor:shown", () => drawCommands());
}, () => {});
filter.addEventListener("input", drawCommands);
