// The VSIX keeps only the files .vscodeignore lets through: every file the wasm package's glue
// loads must be one of them, or the packaged extension cannot start its engine.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.join(__dirname, "..");
/** The `!` patterns of .vscodeignore (after its `**`), as tests of a path relative to extension/. */
const kept = readFileSync(path.join(root, ".vscodeignore"), "utf8")
  .split("\n")
  .filter((l) => l.startsWith("!"))
  .map((l) => l.slice(1).trim())
  .map((p) => (p.endsWith("/**") ? (f: string) => f.startsWith(p.slice(0, -2)) : (f: string) => f === p));

describe("the VSIX's files", () => {
  it("include every bundle build.mjs writes: the extension and the gateway's worker thread", () => {
    const entries = readFileSync(path.join(root, "build.mjs"), "utf8").match(/entryPoints:\s*\{([^}]*)\}/)?.[1] ?? "";
    const bundles = [...entries.matchAll(/(\w+):\s*"/g)].map((m) => `dist/${m[1]}.js`);
    expect(bundles).toEqual(["dist/extension.js", "dist/gatewayWorker.js"]);
    for (const file of bundles) expect(kept.some((k) => k(file)), `${file} is left out of the VSIX by .vscodeignore`).toBe(true);
    // The extension starts the worker from where the VSIX puts it.
    expect(readFileSync(path.join(root, "src", "extension.ts"), "utf8")).toContain('"dist", "gatewayWorker.js"');
  });

  it("include every file the wasm glue loads: the .wasm and each JS snippet it requires", () => {
    const glue = readFileSync(path.join(root, "wasm", "condense_wasm.js"), "utf8");
    const required = [...glue.matchAll(/require\("\.\/([^"]+)"\)/g)].map((m) => `wasm/${m[1]}`);
    const loaded = [...required, "wasm/condense_wasm_bg.wasm"];
    expect(glue).toContain("condense_wasm_bg.wasm");
    for (const file of ["wasm/condense_wasm.js", ...loaded]) {
      expect(existsSync(path.join(root, file)), file).toBe(true);
      expect(kept.some((k) => k(file)), `${file} is left out of the VSIX by .vscodeignore`).toBe(true);
    }
  });
});
