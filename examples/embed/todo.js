/**
 * The host page's own to-do list: its state, its drawing and its form. It knows nothing of
 * reactor; todo-plugin.js hands it to reactor as a plugin.
 */

const list = document.getElementById("todos");
let nextId = 1;

/** The live list: `items`, the `selected` id, and the changes the page (or a tool) makes. */
export const todos = {
  items: [],
  selected: null,

  add(title) {
    const text = String(title ?? "").trim();
    if (!text) throw new Error("A to-do needs a title: say what is to be done.");
    const item = { id: nextId++, title: text, done: false };
    this.items.push(item);
    draw();
    return { ...item };
  },

  find(id) {
    const item = this.items.find((candidate) => candidate.id === id);
    if (item) return item;
    throw new Error(`There is no to-do ${id}; the list has ${this.items.map((i) => i.id).join(", ") || "none"}.`);
  },

  complete(id) {
    if (id == null) throw new Error("Which to-do? Pass its id, as todo_list lists it, or select one on the page.");
    const item = this.find(id);
    item.done = true;
    draw();
    return { ...item };
  },

  select(id) {
    this.selected = this.find(id).id;
    draw();
    return { selected: this.selected };
  },
};

function draw() {
  // What had the focus is drawn anew: the focus goes to its new self, not to the page's top.
  const focused = /** @type {HTMLElement | null} */ (list.contains(document.activeElement) ? document.activeElement : null);
  const again = focused && `li[data-id="${focused.closest("li")?.dataset.id}"] ${focused.tagName.toLowerCase()}`;
  list.replaceChildren(...todos.items.map((item) => {
    const li = document.createElement("li");
    li.dataset.id = item.id;
    li.classList.toggle("done", item.done);
    li.classList.toggle("selected", item.id === todos.selected);
    const box = Object.assign(document.createElement("input"), { type: "checkbox", checked: item.done, disabled: item.done });
    box.setAttribute("aria-label", `Done: ${item.title}`);
    box.addEventListener("change", () => todos.complete(item.id));
    // A button, so that a keyboard selects it too (Tab, then Enter or Space).
    const title = Object.assign(document.createElement("button"), { type: "button", className: "todo-title", textContent: item.title });
    title.setAttribute("aria-pressed", String(item.id === todos.selected));
    title.addEventListener("click", () => todos.select(item.id));
    li.append(box, title);
    return li;
  }));
  if (again) /** @type {HTMLElement | null} */ (list.querySelector(again))?.focus();
}

document.getElementById("new-todo").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = event.target.elements.title;
  todos.add(input.value);
  input.value = "";
});

["Water the plants", "Write to the landlord"].forEach((title) => todos.add(title));
