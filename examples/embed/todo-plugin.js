/**
 * What this page adds to reactor in JavaScript: a plugin whose commands work on the page's live
 * to-do list (read at call time, never copied at registration), with the AgentTools bundle that
 * makes them model tools. None of them needs the server.
 */
import { todos } from "./todo.js";

const id = { type: "integer", description: "The to-do's id, as todo_list lists it." };
const reactor = window.reactor;  // absent when the reactor server refused this page: the page says so

if (reactor) {
  await reactor.definePlugin({
    name: "todo",
    description: "The to-do list on this page.",
    commands: [
      { id: "todo.add", label: "Add a to-do", execute: ({ title }) => todos.add(title) },
      { id: "todo.list", label: "List the to-dos",
        execute: () => todos.items.map((item) => ({ ...item, selected: item.id === todos.selected })) },
      { id: "todo.complete", label: "Complete a to-do", execute: ({ id }) => todos.complete(id ?? todos.selected),
        isEnabled: () => todos.items.some((item) => !item.done) },
      { id: "todo.select", label: "Select a to-do", execute: ({ id }) => todos.select(id) },
    ],
    agentTools: {
      id: "todo",
      name: "To-do list",
      commands: [
        { name: "todo_add", command: "todo.add", sideEffect: "write",
          description: "Add a to-do to the list on this page; returns it with its id.",
          parameters: { type: "object", properties: { title: { type: "string", minLength: 1 } },
                        required: ["title"], additionalProperties: false } },
        { name: "todo_list", command: "todo.list", sideEffect: "read",
          description: "List the to-dos on this page as they are now: id, title, done, and whether it is selected." },
        { name: "todo_complete", command: "todo.complete", sideEffect: "write",
          description: "Mark a to-do done: the one whose id is given, else the one selected on the page.",
          parameters: { type: "object", properties: { id }, additionalProperties: false } },
        { name: "todo_select", command: "todo.select", sideEffect: "none",
          description: "Select a to-do on the page, so the person sees it highlighted; changes nothing else.",
          parameters: { type: "object", properties: { id }, required: ["id"], additionalProperties: false } },
      ],
    },
  });
}
