// The longest stall of the extension host's thread (issue 24): what the extension does with a
// file, in the order it does it, with the wasm package it ships, while a ticker on the event loop
// (setImmediate, as a command or an IPC message would wait) records the longest gap between two
// of its turns. A gap is a slice the thread could not answer in. A benchmark, never a test.
//
//   node benches/stall.mjs [--rounds N]
//
// Flows:
//   - 1 MB of one letter and 1 MB of base64 zeros, counted (`countText`), with gpt-tokenizer's
//     count of the same text beside it (its merge is quadratic too: it runs on a 100 KB prefix,
//     and its 1 MB time is not measured);
//   - the 200,000-letter session of the e2e test: Open Session File… (hold, count in slices), the
//     meter (hold), Preview (truncation, of the held file);
//   - the 1.1M-token benchmark chat (target/bench-inputs/chat1m.json): the meter (hold, count in
//     slices), Condense Now (truncation by handle, then the condensed file's text); then, counted,
//     Condense Now with lossless, mask and smart.
// Between two calls of the extension the thread turns (an event, an await of VS Code's API): so
// here, and the longest stall is the longest single call or slice.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stalls } from "./ticker.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const roundsArg = process.argv.indexOf("--rounds");
const rounds = roundsArg > 0 ? Number(process.argv[roundsArg + 1]) : 5;
const { CondenseEngine } = createRequire(import.meta.url)(path.join(root, "extension/wasm/condense_wasm.js"));
const gpt = await import("gpt-tokenizer/encoding/o200k_base");
const chat1m = path.join(root, "target/bench-inputs/chat1m.json");
if (!existsSync(chat1m)) {
  console.error("benches: no inputs; run `node scripts/bench-inputs.mjs` first");
  process.exit(1);
}
const newEngine = () =>
  new CondenseEngine({ fetch: () => Promise.reject(new Error("no network")), now: () => performance.now(), log: () => {} });


/** A turn of the event loop, as between two of the extension's calls (an event, an await of
 *  VS Code's API). */
const turn = () => new Promise((r) => setImmediate(r));
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const f = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));

const MB = 1_000_000;
const letters = JSON.stringify({
  messages: [
    { role: "user", content: "Read attachment.b64 and tell me what it holds." },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path":"attachment.b64"}' } }] },
    { role: "tool", tool_call_id: "call_1", content: "L".repeat(200_000) },
    { role: "assistant", content: "It is one run of the letter L." },
    { role: "user", content: "Thanks. Now list the files of the project." },
    { role: "assistant", content: "src/main.rs, src/lib.rs and Cargo.toml." },
  ],
});
const big = readFileSync(chat1m, "utf8");

const flows = [
  ["`countText`: 1 MB of `L`", (e) => e.countText("L".repeat(MB), "gpt-4o")],
  ["`countText`: 1 MB of base64 zeros", (e) => e.countText("A".repeat(MB), "gpt-4o")],
  [
    "200,000-letter session: Open Session File… (hold, count in slices), the meter (hold), Preview (truncation, by handle)",
    async (e) => {
      await e.countHeld(e.hold("conversation", "file:///letters.json", letters), "gpt-4o");
      await turn();
      const h = e.hold("conversation", "file:///letters.json", letters);
      await turn();
      e.heldTokens(h, "gpt-4o");
      await turn();
      await e.preview(h, { provider: "truncation", model: "gpt-4o", targetTokens: 200 }, () => {});
    },
  ],
  [
    "1.1M-token chat: the meter (hold, count in slices), Condense Now (truncation by handle, the file's text)",
    async (e) => {
      const h = e.hold("conversation", "file:///chat1m.json", big);
      await turn();
      const { tokens } = await e.countHeld(h, "gpt-4o");
      await turn();
      const r = await e.condense(h, { provider: "truncation", model: "gpt-4o", targetTokens: Math.round(tokens / 2) });
      await turn();
      e.heldText(r.handle);
    },
  ],
  [
    "1.1M-token chat, counted: Condense Now with lossless, mask, smart (each by handle, the file's text)",
    async (e) => {
      const { tokens } = await e.countHeld(e.hold("conversation", "file:///chat1m.json", big), "gpt-4o");
      for (const provider of ["lossless", "mask", "smart"]) {
        await turn();
        const h = e.hold("conversation", "file:///chat1m.json", big);
        await turn();
        e.heldTokens(h, "gpt-4o");
        await turn();
        const r = await e.condense(h, { provider, model: "gpt-4o", targetTokens: Math.round(tokens / 2) });
        await turn();
        if (!r.error) e.heldText(r.handle);
      }
    },
  ],
];

console.log(`\n### The longest stall of the thread (median of ${rounds} rounds, each in a fresh engine)\n`);
console.log("| flow | longest stall | whole flow |");
console.log("|---|---:|---:|");
for (const [name, flow] of flows) {
  const longest = [];
  const total = [];
  for (let i = 0; i < rounds; i++) {
    const e = newEngine();
    const s = await stalls(() => flow(e));
    longest.push(s.longest);
    total.push(s.total);
  }
  console.log(`| ${name} | ${f(median(longest))} ms [${f(Math.min(...longest))}–${f(Math.max(...longest))}] | ${f(median(total))} ms |`);
}

// gpt-tokenizer beside the 1 MB counts: its merge is quadratic, so a 100 KB prefix.
console.log("\n| gpt-tokenizer (`countTokens`) | time |");
console.log("|---|---:|");
for (const [name, text] of [["100 KB of `L`", "L".repeat(100_000)], ["100 KB of base64 zeros", "A".repeat(100_000)]]) {
  const t0 = performance.now();
  gpt.countTokens(text);
  console.log(`| ${name} | ${f(performance.now() - t0)} ms |`);
}
