// Times token counting through a built wasm package (the extension's), for BENCHMARKS.md's
// before/after table. Not a test; prints JSON.
//
//   cargo run -q -p condense-cli -- bench-inputs /tmp/bench-inputs
//   node scripts/bench-wasm-count.mjs extension/wasm /tmp/bench-inputs         # throughput
//   node scripts/bench-wasm-count.mjs extension/wasm /tmp/bench-inputs cold    # one fresh process
//
// A package without countText (main before issue 16) gets the countTokens rows only.
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import path from "node:path";

const [dir, inputs, mode] = process.argv.slice(2);
const require = createRequire(import.meta.url);
const host = { fetch: () => Promise.reject(new Error("no network here")), now: () => performance.now(), log: () => {} };
const one = (text) => ({ messages: [{ id: "a", role: "user", content: [{ type: "text", text }] }] });

if (mode === "cold") {
  const t0 = performance.now();
  const { CondenseEngine } = require(path.resolve(dir, "condense_wasm.js"));
  const t1 = performance.now();
  const engine = new CondenseEngine(host);
  const t2 = performance.now();
  engine.countTokens(one("hello world"), "gpt-4o");
  const t3 = performance.now();
  engine.countTokens(one("again"), "gpt-4o");
  const t4 = performance.now();
  const ms = (a, b) => +(b - a).toFixed(2);
  console.log(JSON.stringify({ load_ms: ms(t0, t1), engine_ms: ms(t1, t2), first_count_ms: ms(t2, t3), second_count_ms: ms(t3, t4) }));
  process.exit(0);
}

const { CondenseEngine } = require(path.resolve(dir, "condense_wasm.js"));
const prose = readFileSync(path.join(inputs, "prose-and-code.md"), "utf8");
const chat = JSON.parse(readFileSync(path.join(inputs, "tool-chat.json"), "utf8"));
const strings = JSON.parse(readFileSync(path.join(inputs, "short-strings.json"), "utf8"));
const median = (v) => v.sort((a, b) => a - b)[Math.floor(v.length / 2)];
function time(f, rounds = 9) {
  const ts = [];
  let n;
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    n = f();
    ts.push(performance.now() - t);
  }
  return { median_ms: +median(ts).toFixed(2), n };
}

new CondenseEngine(host).countTokens(one(prose), "gpt-4o"); // the vocabulary loaded
const out = {
  a_prose_countTokens_fresh_engine: time(() => new CondenseEngine(host).countTokens(one(prose), "gpt-4o").total_tokens),
  b_chat_countTokens_fresh_engine: time(() => new CondenseEngine(host).countTokens(chat, "gpt-4o").total_tokens),
};
const warm = new CondenseEngine(host);
warm.countTokens(chat, "gpt-4o");
out.b_chat_countTokens_same_engine = time(() => warm.countTokens(chat, "gpt-4o").total_tokens);
if (warm.countText) {
  out.a_prose_countText = time(() => warm.countText(prose, "gpt-4o"));
  out.c_strings_countText = time(() => strings.reduce((n, s) => n + warm.countText(s, "gpt-4o"), 0));
}
console.log(JSON.stringify(out, null, 1));
