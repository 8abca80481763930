/**
 * The command palette and the agent-tools list beside the stage: what a person can run, and
 * what an agent may call. Commands that need arguments are run from the agent or from code;
 * the palette runs those that need none.
 */
const list = document.getElementById("palette");
const filter = document.getElementById("palette-filter");
const tools = document.getElementById("agent-tools");

function item(text, title) {
  const li = document.createElement("li");
  li.textContent = text;
  if (title) li.title = title;
  return li;
}

async function drawCommands() {
  const commands = await window.reactor.listCommands();
  const words = filter.value.trim().toLowerCase();
  list.replaceChildren(...commands
    .filter((c) => !words || `${c.id} ${c.label}`.toLowerCase().includes(words))
    .map((command) => {
      const li = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = command.label;
      button.title = `${command.id}: ${command.description}`;
      button.dataset.command = command.id;
      button.disabled = !command.available;
      button.addEventListener("click", () => runFromPalette(command.id));
      li.append(button);
      return li;
    }));
}

async function runFromPalette(id) {
  try {
    await window.reactor.executeCommand(id, {});
  } catch (error) {
    console.warn(error.message);
  } finally {
    drawCommands();
  }
}

function drawTools(bundles) {
  tools.replaceChildren(...bundles.flatMap((bundle) =>
    bundle.commands.map((tool) => item(`${tool.name} → ${tool.command}`, tool.description))));
}

window.reactor.ready.then(() => {
  drawCommands();
  window.reactor.agentToolBundles().then(drawTools);
  window.reactor.onAgentToolBundles(drawTools);
  window.reactor.onCommandsChanged(drawCommands);
}, () => {});
filter.addEventListener("input", drawCommands);
