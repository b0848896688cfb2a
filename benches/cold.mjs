// One cold start, in a fresh process (run by benches/run.mjs): import the package, build what it
// needs, count one text; prints {ms}. `node benches/cold.mjs gpt-tokenizer|"wasm package"`.
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const text = "Why does the parser drop nested groups? See src/parser.rs:120 — `parse_group` returns early.";
const t0 = performance.now();
let n;
if (process.argv[2] === "gpt-tokenizer") {
  const { countTokens } = await import("gpt-tokenizer/encoding/o200k_base");
  n = countTokens(text);
} else {
  const { CondenseEngine } = createRequire(import.meta.url)(path.join(root, "extension/wasm/condense_wasm.js"));
  const engine = new CondenseEngine({ fetch: () => Promise.reject(new Error("no network")), now: () => performance.now(), log: () => {} });
  n = typeof engine.countText === "function"
    ? engine.countText(text, "gpt-4o")
    : engine.countTokens({ messages: [{ id: "x", role: "user", content: [{ type: "text", text }] }] }).total_tokens;
}
const ms = performance.now() - t0;
process.stdout.write(JSON.stringify({ ms, n }));
