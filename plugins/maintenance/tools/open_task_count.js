/** AI Tool (JavaScript): how many tasks are still open in each building. */
async function Invoke(args, context) {
  const response = await fetch(`${context.config.endpoint}?entityType=maintenance_task&limit=1000`, {
    signal: context.signal,
  });
  if (!response.ok) throw new Error(`The maintenance API answered ${response.status}.`);
  const answer = await response.json();
  return { buildings: answer.openByBuilding };
}
