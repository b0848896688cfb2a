// Bundles the extension host into dist/extension.js, and the gateway's worker thread
// (src/gateway/gatewayWorker.ts) into dist/gatewayWorker.js. `vscode` is provided by VS Code; the
// wasm package is not bundled: the extension (and the worker) load it from its own folder at run
// time.
import { build } from "esbuild";

await build({
  entryPoints: { extension: "src/extension.ts", gatewayWorker: "src/gateway/gatewayWorker.ts" },
  bundle: true,
  outdir: "dist",
  platform: "node",
  format: "cjs",
  target: "node20",
  external: ["vscode"],
  sourcemap: false,
  minify: false,
  logLevel: "warning",
  // When the bundle's code starts to run (after Node read and compiled it): activate() logs how
  // long loading its modules took, the protocol's and zod's included.
  banner: { js: "\"use strict\";\nconst __bundleStart = performance.now();" },
});
