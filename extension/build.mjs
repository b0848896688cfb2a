// Bundles the extension host into dist/extension.js. `vscode` is provided by VS Code; the wasm
// package is not bundled: the extension loads it from its own folder at run time.
import { build } from "esbuild";

await build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
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
