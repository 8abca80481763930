/**
 * Compile Python sources to bytecode with Pyodide's own Python, so the page imports `.pyc`
 * instead of compiling every module in WebAssembly at start-up (bench/RESULTS.md).
 *
 *   node web/compile.mjs <pyodide folder>   stdin: {"name": "source", …}
 *                                           stdout: {"name": "<base64 checked-hash .pyc>", …}
 *
 * Checked-hash pycs: Python re-hashes the source on import and ignores a pyc that does not match.
 * A source that does not compile is left out (the page then reports its SyntaxError itself).
 */
import { pathToFileURL } from "node:url";

const folder = process.argv[2];
let input = "";
for await (const chunk of process.stdin.setEncoding("utf8")) input += chunk;
const { loadPyodide } = await import(pathToFileURL(`${folder}/pyodide.mjs`).href);
const pyodide = await loadPyodide({ indexURL: `${folder}/` });
pyodide.globals.set("sources_json", input);
const answer = pyodide.runPython(`
import base64, importlib._bootstrap_external as external, importlib.util, json
compiled = {}
for name, source in json.loads(sources_json).items():
    data = source.encode()
    try:
        code = compile(data, name, "exec", dont_inherit=True)
    except SyntaxError:
        continue
    pyc = external._code_to_hash_pyc(code, importlib.util.source_hash(data), checked=True)
    compiled[name] = base64.b64encode(pyc).decode()
json.dumps(compiled)
`);
process.stdout.write(answer);
