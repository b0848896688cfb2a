// The extension bundle's load time in Node: `require` of extension/dist/extension.js with a stub
// `vscode`, in fresh processes, Node's built-in modules the bundle uses loaded first (as they are
// in VS Code's extension host). Prints the median and range. A measurement, never a test.
//
//   node benches/bundle-load.mjs [N] [bundle]      (after `npm run build`)
import { execFileSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const n = Number(process.argv[2]) || 11;
const bundle = path.resolve(process.argv[3] ?? path.join(root, "extension/dist/extension.js"));
const child = `
const Module = require("module");
const stub = new Proxy(function () {}, { get: (t, k) => (k === "__esModule" ? false : stub), apply: () => stub, construct: () => stub });
const load = Module._load;
Module._load = function (request) { return request === "vscode" ? stub : load.apply(this, arguments); };
for (const m of ["node:crypto", "node:fs", "node:fs/promises", "node:os", "node:path", "node:child_process"]) require(m);
const t0 = performance.now();
require(${JSON.stringify(bundle)});
process.stdout.write(String(performance.now() - t0));
`;
const times = Array.from({ length: n }, () => Number(execFileSync(process.execPath, ["-e", child], { encoding: "utf8" }))).sort((a, b) => a - b);
console.log(`${path.relative(root, bundle)}: require ${times[n >> 1].toFixed(1)} ms median, ${times[0].toFixed(1)}–${times[n - 1].toFixed(1)} ms over ${n} fresh processes`);
