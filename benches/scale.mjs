// The scale run (started by benches/run.mjs in a fresh process, so that the peak RSS is the wasm
// engine's alone): a ~1M-token, 2,000-message conversation — the first count, then lossless, mask
// and truncation, each run once to fill the engine's caches and then timed with the counts cached,
// two ways: on the conversation the engine holds (`condense(handle)`: only a handle and the options
// cross, the result stays in the engine; what the extension does with a conversation file), and
// on the whole conversation (`condense(conversation)`: the 4 MB conversation crosses in and the
// result out, as before). Prints a Markdown table. A benchmark, never a test.
//
// `--memory`: a fresh process that does what the extension does with such a file, once per
// provider — hold and count it (the meter), condense it by handle, take the condensed text — and
// prints its peak RSS: the timed run's peak also holds the garbage of some fifty 4 MB results and
// texts that V8 had not collected yet. `--memory whole`: the same with what Condense Now did
// before (the conversation parsed out, condensed whole, the result parsed and stringified), with
// calls every package has, so that `--package DIR` (another build's `extension/wasm`) measures
// an older engine the same way.
//
//   node benches/scale.mjs [--quick] [--rounds N] [--memory [whole]] [--package DIR]
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const quick = process.argv.includes("--quick");
const roundsArg = process.argv.indexOf("--rounds");
const rounds = roundsArg > 0 ? Number(process.argv[roundsArg + 1]) : quick ? 2 : 7;
const packageArg = process.argv.indexOf("--package");
const pkg = packageArg > 0 ? path.resolve(process.argv[packageArg + 1]) : path.join(root, "extension/wasm");
const { CondenseEngine } = createRequire(import.meta.url)(path.join(pkg, "condense_wasm.js"));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const ms = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
const spread = (xs) => `${ms(median(xs))} | ${ms(Math.min(...xs))}–${ms(Math.max(...xs))}`;

const text = readFileSync(path.join(root, "target/bench-inputs/chat1m.json"), "utf8");
const e = new CondenseEngine({ fetch: () => Promise.reject(new Error("no network")), now: () => performance.now(), log: () => {} });
// The calls of this package, or of an older one (`--package`): `hold` and `condense(handle)` now;
// before issue 39, `holdConversation`, `condenseHeld`, and a one-shot `condense(conversation)`,
// which the whole rows and `--memory whole` measure (a package without it skips them).
const older = typeof e.holdConversation === "function";
const holdFile = (id, value) => (older ? e.holdConversation(id, value) : e.hold("conversation", id, value));
const condenseHeld = (h, options) => (older ? e.condenseHeld(h, options) : e.condense(h, options));
const ID = "file:///bench/chat1m.json";
const mb = (bytes) => `${(bytes / 1048576).toFixed(0)} MB`;

const memoryArg = process.argv.indexOf("--memory");
if (memoryArg > 0) {
  const whole = process.argv[memoryArg + 1] === "whole";
  if (whole && !older) throw new Error("--memory whole measures a package with a one-shot condense(conversation): pass an older one with --package DIR");
  let h = holdFile(ID, text);
  const tokens = e.heldTokens(h, "gpt-4o");
  const target = Math.round(tokens / 2);
  const rows = [];
  for (const [provider, extra] of [["lossless", {}], ["mask", { targetTokens: target }], ["truncation", { targetTokens: target }]]) {
    h = holdFile(ID, text);
    e.heldTokens(h, "gpt-4o");
    const options = { provider, model: "gpt-4o", ...extra };
    let after;
    let written;
    if (whole) {
      const r = await e.condense(e.parseConversation(text), options);
      after = r.new_context_tokens;
      written = `${JSON.stringify(e.parseConversation(r), null, 2)}\n`;
    } else {
      const r = await condenseHeld(h, options);
      after = r.new_context_tokens;
      written = e.heldText(r.handle);
    }
    rows.push(`${provider} → ${after} tokens, ${(written.length / 1048576).toFixed(1)} MB of text`);
  }
  const m = process.memoryUsage();
  const how = whole
    ? "parse it out, condense it whole, parse the result and stringify it (Condense Now before)"
    : "condense it by handle and take its text (Condense Now now)";
  console.log(`\n### Scale, memory: hold and count the ${tokens.toLocaleString("en-US")}-token file (the meter), then ${how}, once per provider (a fresh process)\n`);
  console.log(`- ${rows.join("\n- ")}`);
  console.log(`- peak RSS of this process: **${mb(process.resourceUsage().maxRSS * 1024)}**; at the end: RSS ${mb(m.rss)}, JS heap ${mb(m.heapUsed)}, outside the JS heap (the wasm memory and buffers) ${mb(m.external)}`);
  process.exit(0);
}

const conversation = JSON.parse(text);
let t0 = performance.now();
const handle = holdFile(ID, conversation);
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
console.log(`Load average at the start: ${os.loadavg().map((l) => l.toFixed(1)).join(", ")}; ${rounds} timed runs per row after one untimed.\n`);
console.log("| step | median ms | range ms |");
console.log("| --- | ---: | ---: |");
console.log(`| first count: hold + heldTokens | ${ms(first)} | |`);
console.log(`| heldTokens again (every message counted) | ${ms(heldAgain)} | |`);
console.log(`| countTokens(conversation) (the conversation crosses; a counter per call) | ${ms(countTokensMs)} | |`);

const target = Math.round(tokens / 2);
for (const [provider, extra] of [["lossless", {}], ["mask", { targetTokens: target }], ["truncation", { targetTokens: target }]]) {
  const options = { provider, model: "gpt-4o", ...extra };
  const label = `${provider}${extra.targetTokens ? ` to ${target.toLocaleString("en-US")}` : ""}`;
  // Held: the engine holds the file (as the meter leaves it: held and counted, untimed), then
  // condenses it by handle; the condensed file's text is what the host writes.
  const held = async () => {
    const h = holdFile(ID, text);
    e.heldTokens(h, "gpt-4o");
    const t = performance.now();
    const r = await condenseHeld(h, options);
    const run = performance.now() - t;
    const u = performance.now();
    const written = r.error ? "" : e.heldText(r.handle);
    return { run, text: performance.now() - u, r, written };
  };
  // Whole: the conversation object crosses in, the result document out.
  const whole = async () => {
    const t = performance.now();
    const r = await e.condense(conversation, options);
    return { run: performance.now() - t, r };
  };
  const coldHeld = await held(); // Fills the engine's caches (message and text counts).
  const coldWhole = older ? await whole() : undefined;
  const h = { run: [], text: [] };
  const w = [];
  for (let i = 0; i < rounds; i++) {
    // Alternate which goes first, so that neither always runs after the other's garbage.
    const pair = !older ? [held] : i % 2 ? [whole, held] : [held, whole];
    for (const f of pair) {
      const x = await f();
      if (f === held) {
        h.run.push(x.run);
        h.text.push(x.text);
      } else w.push(x.run);
    }
  }
  const after = coldHeld.r.new_context_tokens;
  if (coldWhole && after !== coldWhole.r.new_context_tokens) throw new Error(`${provider}: the held and the whole run disagree`);
  const outcome = `→ ${(after ?? tokens).toLocaleString("en-US")} tokens${coldHeld.r.error ? `, ${coldHeld.r.error.kind}` : ""}`;
  console.log(`| **${label}, held** (condense(handle); first run ${ms(coldHeld.run)}) ${outcome} | **${spread(h.run)}** |`);
  console.log(`| ${label}: heldText, the condensed file's text (${(coldHeld.written.length / 1048576).toFixed(1)} MB) | ${spread(h.text)} |`);
  if (coldWhole) console.log(`| ${label}, whole (condense(conversation): 4 MB in, the result out; first run ${ms(coldWhole.run)}) | ${spread(w)} |`);
}
const m = process.memoryUsage();
console.log(`| peak RSS of this process (with the runs' uncollected garbage; see \`--memory\`) | ${mb(process.resourceUsage().maxRSS * 1024)} | |`);
console.log(`| at the end: outside the JS heap (the wasm memory and buffers) / JS heap used | ${mb(m.external)} / ${mb(m.heapUsed)} | |`);
