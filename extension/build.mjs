// Bundles the extension host into dist/extension.js, and the gateway's worker thread
// (src/gateway/gatewayWorker.ts) into dist/gatewayWorker.js. `vscode` is provided by VS Code; the
// wasm package is not bundled: the extension (and the worker) load it from its own folder at run
// time.
import { build } from "esbuild";
import { bundleOptions } from "./bundleOptions.mjs";

await build({
  ...bundleOptions,
  entryPoints: { extension: "src/extension.ts", gatewayWorker: "src/gateway/gatewayWorker.ts" },
  outdir: "dist",
  // When the bundle's code starts to run (after Node read and compiled it): activate() logs how
  // long loading its modules took, the protocol's and zod's included.
  banner: { js: "\"use strict\";\nconst __bundleStart = performance.now();" },
});
