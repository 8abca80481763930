// ESLint for the page's JavaScript (./dev lint): the recommended rules, with the globals of the
// scope each file runs in. The type check is tsc's (jsconfig.json, web/jsconfig.worker.json).
import { readFileSync } from "node:fs";
import js from "@eslint/js";
import globals from "globals";

/** The files that run in a Web Worker, not on the page: those tsc checks with the WebWorker library. */
const WORKER = JSON.parse(readFileSync(new URL("web/jsconfig.worker.json", import.meta.url), "utf8"))
  .include.map((name) => `web/${name}`);

export default [
  { ignores: ["web/vendor/", "web/build-npm/"] },
  { files: ["web/*.js", "plugins/*/*.js"], ...js.configs.recommended },
  { files: ["web/*.js", "plugins/*/*.js"], ignores: WORKER, languageOptions: { globals: globals.browser } },
  { files: WORKER, languageOptions: { globals: globals.worker } },
  // Node scripts: the server's, to compile Python and snapshot Pyodide, and this file.
  { files: ["web/*.mjs", "eslint.config.js"], ...js.configs.recommended, languageOptions: { globals: globals.node } },
];
