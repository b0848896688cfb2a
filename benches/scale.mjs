// The scale run (started by benches/run.mjs in a fresh process, so that the peak RSS is the wasm
// engine's alone): a ~1M-token, 2,000-message conversation — the first count, then lossless, mask
// and truncation, each run once to fill the engine's counter cache and then timed with the counts
// cached. Prints a Markdown table. A benchmark, never a test.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const quick = process.argv.includes("--quick");
const { CondenseEngine } = createRequire(import.meta.url)(path.join(root, "extension/wasm/condense_wasm.js"));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const ms = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));

const text = readFileSync(path.join(root, "target/bench-inputs/chat1m.json"), "utf8");
const conversation = JSON.parse(text);
const e = new CondenseEngine({ fetch: () => Promise.reject(new Error("no network")), now: () => performance.now(), log: () => {} });
let t0 = performance.now();
const handle = e.holdConversation("bench-1m", conversation);
const tokens = e.heldTokens(handle, "gpt-4o");
const first = performance.now() - t0;
t0 = performance.now();
const again = e.heldTokens(handle, "gpt-4o");
const heldAgain = performance.now() - t0;
t0 = performance.now();
const report = e.countTokens(conversation, "gpt-4o");
const countTokensMs = performance.now() - t0;
if (again !== tokens || report.total_tokens !== tokens) throw new Error("the counts disagree");

console.log(`\n### Scale: a ${tokens.toLocaleString("en-US")}-token, ${conversation.messages.length}-message conversation (${(text.length / 1048576).toFixed(1)} MB), a fresh process\n`);
console.log("| step | ms |");
console.log("| --- | ---: |");
console.log(`| first count: holdConversation + heldTokens | ${ms(first)} |`);
console.log(`| heldTokens again (every message counted) | ${ms(heldAgain)} |`);
console.log(`| countTokens(conversation) (a counter per call: uncached) | ${ms(countTokensMs)} |`);
const target = Math.round(tokens / 2);
for (const [provider, extra] of [["lossless", {}], ["mask", { targetTokens: target }], ["truncation", { targetTokens: target }]]) {
  const run = async () => {
    const t = performance.now();
    const r = await e.condense(conversation, { provider, model: "gpt-4o", ...extra });
    return { ms: performance.now() - t, r };
  };
  const cold = await run(); // Fills the engine's counter cache.
  const warm = [];
  for (let i = 0; i < (quick ? 2 : 5); i++) warm.push((await run()).ms);
  const after = cold.r.new_context_tokens ?? tokens;
  console.log(`| ${provider}${extra.targetTokens ? ` to ${target.toLocaleString("en-US")}` : ""} (first run ${ms(cold.ms)}); counts cached, median of ${warm.length} (range ${ms(Math.min(...warm))}–${ms(Math.max(...warm))}) | ${ms(median(warm))} (→ ${after.toLocaleString("en-US")} tokens${cold.r.error ? `, ${cold.r.error.kind}` : ""}) |`);
}
console.log(`| peak RSS of this process | ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB |`);
