/**
 * One record, two locations: as a UI plugin (location "ui") `Run` draws a bar chart of the open
 * maintenance tasks per building in its panel; as an AI Tool (location "ai-tool") `Invoke`
 * answers the agent with the same figures. Only the one the location calls for is used.
 */
async function openByBuilding(fetchJson, endpoint) {
  const answer = await fetchJson(`${endpoint}?entityType=maintenance_task&limit=1000`);
  return answer.openByBuilding;
}

function Run(params) {
  const { container, config } = params;
  let stopped = false;
  container.textContent = "Loading the backlog…";
  openByBuilding(params.fetchJson, config.endpoint).then((counts) => {
    if (stopped) return;
    const most = Math.max(1, ...Object.values(counts));
    const chart = document.createElement("ul");
    chart.className = "backlog-chart";
    chart.setAttribute("aria-label", "Open maintenance tasks per building");
    for (const [building, open] of Object.entries(counts)) {
      const row = document.createElement("li");
      const bar = document.createElement("span");
      bar.className = "backlog-bar";
      bar.style.cssText = `display:inline-block;height:0.8em;background:#3b6fd8;margin-right:0.4em;width:${(open / most) * 8}em`;
      row.append(`${building} `, bar, `${open} open`);
      chart.append(row);
    }
    container.replaceChildren(chart);
  }, (error) => {
    if (!stopped) container.textContent = `The backlog could not be loaded: ${error.message}`;
  });
  return () => {
    stopped = true;
    container.replaceChildren();
  };
}

async function Invoke(args, context) {
  const response = await fetch(`${context.config.endpoint}?entityType=maintenance_task&limit=1000`, { signal: context.signal });
  if (!response.ok) throw new Error(`The maintenance API answered ${response.status}.`);
  const counts = (await response.json()).openByBuilding;
  return { openByBuilding: counts, busiest: Object.keys(counts).sort((a, b) => counts[b] - counts[a])[0] ?? null };
}
