/**
 * The interpreter module PyScript loads in the page: Pyodide's API (`loadPyodide`, `version`),
 * but the boot behind it started earlier: from the script the server puts in index.html's head
 * while the page parses, or (on a page that embeds reactor.js) the moment boot.json named the
 * runtime, while PyScript's own modules were still loading (bench/RESULTS.md).
 * PyScript still configures and runs Python; it gets its interpreter sooner, with the page's Python
 * already written into it (`prepare`). Output goes to the handlers PyScript passes; a call asking
 * for packages gets a boot of its own, as Pyodide would.
 */

let started = null;
let pyodideModule = null;
const preparations = [];
const output = { stdout: console.log, stderr: console.error };

/** The version PyScript reads; set by startPyodide. */
export let version = "";

/**
 * Start booting the Pyodide at `url` (its pyodide.mjs, relative to this module's server), once;
 * index.html's head and reactor.js call this. Marks `reactor:pyodide-start` and `-ready`.
 */
export function startPyodide(url, pyodideVersion) {
  version = pyodideVersion;
  if (started) return started;
  const absolute = new URL(url, import.meta.url).href;
  performance.mark("reactor:pyodide-start");
  pyodideModule = import(absolute);
  started = pyodideModule.then((pyodide) => pyodide.loadPyodide({
    indexURL: new URL(".", absolute).href,
    stdout: (text) => output.stdout(text),
    stderr: (text) => output.stderr(text),
  })).then((pyodide) => {
    performance.mark("reactor:pyodide-ready");
    return pyodide;
  });
  return started;
}

/**
 * Have `task(pyodide)` (may be async) run once Pyodide is ready and before PyScript gets it: reactor.js
 * writes the page's Python there, so that PyScript's own set-up imports pycs too. Marks
 * `reactor:pyodide-handed` when PyScript gets the interpreter.
 */
export function prepare(task) {
  preparations.push(task);
}

/** What PyScript calls: the boot already under way, printing through PyScript's handlers. */
export async function loadPyodide(options = {}) {
  if (!started) throw new Error("reactor: startPyodide() was not called before PyScript asked for Pyodide");
  const { stdout, stderr, packages, lockFileURL, lockFileContents } = options;
  if (packages?.length || lockFileURL || lockFileContents) {
    return (await pyodideModule).loadPyodide({ ...options, indexURL: undefined });
  }
  if (stdout) output.stdout = stdout;
  if (stderr) output.stderr = stderr;
  const pyodide = await started;
  for (const task of preparations.splice(0)) await task(pyodide);
  performance.mark("reactor:pyodide-handed");
  return pyodide;
}
