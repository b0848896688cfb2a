#!/usr/bin/env node
// `npm run bench`: the wasm package the extension ships against the JS tokenizers, in ONE Node
// process, the contenders' order rotated every round; medians and ranges; every figure also as a
// ratio against the anchor, gpt-tokenizer, measured in the same process. Then cold start (fresh
// processes), the auto-condense check on a ~200k-token chat the engine holds, and the scale run
// on a ~1M-token, 2,000-message chat. Inputs: scripts/bench-inputs.mjs (run first; `npm run
// bench` does). A benchmark, never a test: nothing here asserts a time.
//
//   node benches/run.mjs [--rounds N] [--quick]

import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const inputs = path.join(root, "target/bench-inputs");
const args = process.argv.slice(2);
const quick = args.includes("--quick");
const rounds = Number(args[args.indexOf("--rounds") + 1]) || (quick ? 3 : 7);

const read = (name) => readFileSync(path.join(inputs, name), "utf8");
if (!existsSync(path.join(inputs, "chat1m.json"))) {
  console.error("benches: no inputs; run `node scripts/bench-inputs.mjs` first");
  process.exit(1);
}

// ---- The contenders -------------------------------------------------------------------------

const { CondenseEngine } = require(path.join(root, "extension/wasm/condense_wasm.js"));
const newEngine = () => new CondenseEngine({ fetch: () => Promise.reject(new Error("no network")), now: () => performance.now(), log: () => {} });
const gpt = await import("gpt-tokenizer/encoding/o200k_base");
// gpt-tokenizer's own count of a chat (`countTokens(messages)`, which needs a model): for (c)'s
// like-for-like line, not the anchor.
const gptChat = await import("gpt-tokenizer/model/gpt-4o");
const { Tiktoken: JsTiktoken } = await import("js-tiktoken/lite");
const o200kRanks = (await import("js-tiktoken/ranks/o200k_base")).default;
const jsTiktoken = new JsTiktoken(o200kRanks);
const npmTiktoken = require("tiktoken").get_encoding("o200k_base");
const benchWasm = path.join(root, "target/wasm-bench/condense_wasm.js");
const tiktokenRs = existsSync(benchWasm) ? require(benchWasm) : undefined;
if (!tiktokenRs) {
  console.log("tiktoken-rs → wasm: skipped (target/wasm-bench/ is missing: run `bash scripts/build-wasm --bench` to include it)\n");
}

const engine = newEngine();
const countText = (text) => engine.countText(text, "gpt-4o");
/** A conversation in this project's format of one user message holding `text`. */
const FORMAT = "context-condenser/conversation@1";
const oneMessage = (text) => ({ format: FORMAT, messages: [{ id: "m", role: "user", content: [{ type: "text", text }] }] });
/** The strings as one conversation, a user message each. */
const manyMessages = (strings) => ({ format: FORMAT, messages: strings.map((text, i) => ({ id: `m${i}`, role: "user", content: [{ type: "text", text }] })) });

/** Every text of a conversation that a tokenizer of plain text would count, in order. */
function texts(conversation) {
  const out = [];
  if (conversation.system) out.push(conversation.system);
  for (const m of conversation.messages) {
    for (const b of m.content) {
      if (b.type === "text") out.push(b.text);
      else if (b.type === "tool_use") out.push(b.name, JSON.stringify(b.input));
      else if (b.type === "tool_result") out.push(typeof b.content === "string" ? b.content : JSON.stringify(b.content));
    }
  }
  return out;
}

/** The chat with every message changed (a round tag on each text, on each tool call's input), so
 *  that no message's count is in any cache, and the words almost all are. */
function variant(conversation, tag) {
  const block = (b) => {
    if (b.type === "text") return { ...b, text: `${b.text} ${tag}` };
    if (b.type === "tool_use") return { ...b, input: { ...b.input, round: tag } };
    if (b.type === "tool_result" && typeof b.content === "string") return { ...b, content: `${b.content} ${tag}` };
    return b;
  };
  return { ...conversation, system: conversation.system && `${conversation.system} ${tag}`, messages: conversation.messages.map((m) => ({ ...m, content: m.content.map(block) })) };
}

const plain = {
  "gpt-tokenizer": (t) => gpt.countTokens(t),
  "js-tiktoken": (t) => jsTiktoken.encode(t).length,
  "tiktoken (npm wasm)": (t) => npmTiktoken.encode_ordinary(t).length,
  ...(tiktokenRs ? { "tiktoken-rs → wasm": (t) => tiktokenRs.benchTiktokenCount(t, "o200k_base") } : {}),
};
const ANCHOR = "gpt-tokenizer";

// ---- Measuring ------------------------------------------------------------------------------

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const ms = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3));

/** Runs each contender once per round (with the round's number), the order rotated every round;
 *  returns times per name. Round 0 warms every contender up (tables loaded, JIT) and is not kept. */
function race(contenders, rounds) {
  const names = Object.keys(contenders);
  const times = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < rounds + 1; r++) {
    const order = names.map((_, i) => names[(i + r) % names.length]);
    for (const name of order) {
      const t0 = performance.now();
      contenders[name](r);
      const t = performance.now() - t0;
      if (r > 0) times[name].push(t);
    }
  }
  return times;
}

function table(title, times, bytes, note) {
  const anchor = median(times[ANCHOR]);
  console.log(`\n### ${title}\n`);
  if (note) console.log(`${note}\n`);
  console.log("| contender | median ms | range ms | MB/s | × gpt-tokenizer |");
  console.log("| --- | ---: | ---: | ---: | ---: |");
  for (const [name, xs] of Object.entries(times)) {
    const m = median(xs);
    console.log(`| ${name} | ${ms(m)} | ${ms(Math.min(...xs))}–${ms(Math.max(...xs))} | ${(bytes / 1048576 / (m / 1000)).toFixed(2)} | ${(anchor / m).toFixed(2)}× |`);
  }
}

// ---- Throughput -----------------------------------------------------------------------------

const prose = read("prose.md");
const chat200 = JSON.parse(read("chat200.json"));
const chat200Texts = texts(chat200);
const shorts = JSON.parse(read("short.json"));
const sum = (xs, f) => xs.reduce((a, x) => a + f(x), 0);
const tagOf = (r) => `r${r}`;
// What an uncached row counts in round r is made before its table's timing (and each table's
// inputs only for it, so that the heap the others time in stays small).
const eachRound = (f) => Array.from({ length: rounds + 1 }, (_, r) => f(r));

// The same counts, or the comparison means nothing: every contender's count of (a), and the
// engine's two paths on (b), must agree.
{
  const counts = Object.fromEntries(Object.entries(plain).map(([n, f]) => [n, f(prose)]));
  counts["wasm package: countText"] = countText(prose);
  counts["wasm package: countTokens (one message, framing removed)"] = engine.countTokens(oneMessage(prose), "gpt-4o").total_tokens - engine.countTokens(oneMessage(""), "gpt-4o").total_tokens;
  console.log(`## In Node: the wasm package\n\nCounts of (a), o200k_base: ${JSON.stringify(counts)}`);
  const differ = Object.entries(counts).filter(([, n]) => n !== counts[ANCHOR]);
  if (differ.length > 0) throw new Error(`the contenders' counts of (a) differ from ${ANCHOR}'s ${counts[ANCHOR]}: ${JSON.stringify(Object.fromEntries(differ))}`);
  const report = engine.countTokens(chat200, "gpt-4o");
  const framing = engine.countTokens({ format: chat200.format, system: chat200.system, messages: [] }, "gpt-4o").total_tokens;
  const perText = sum(chat200.messages, (m) => 4 + sum(texts({ messages: [m] }), countText)) + framing;
  if (report.total_tokens !== perText) throw new Error(`countTokens (${report.total_tokens}) and countText per text (${perText}) disagree on (b)`);
}

{
  const proseVariants = eachRound((r) => `${prose} ${tagOf(r)}`);
  const c = Object.fromEntries(Object.entries(plain).map(([n, f]) => [n, () => f(prose)]));
  c["wasm package: countText"] = () => countText(prose);
  c["wasm package: countTokens (one message), cached"] = () => engine.countTokens(oneMessage(prose), "gpt-4o");
  c["wasm package: countTokens (one message), uncached"] = (r) => engine.countTokens(oneMessage(proseVariants[r]), "gpt-4o");
  table(
    `(a) ~1 MB of Markdown prose and code (${(Buffer.byteLength(prose) / 1048576).toFixed(2)} MB, one call)`,
    race(c, rounds),
    Buffer.byteLength(prose),
    "countTokens: the text as a one-message conversation. Cached: the same text every round, so after the warm-up its count comes from the engine's per-message cache. Uncached: the text with the round's number appended, so no count is cached (the piece cache is warm, as gpt-tokenizer's cache of merged words is).",
  );
}
{
  const bytes = sum(chat200Texts, (t) => Buffer.byteLength(t));
  const c = Object.fromEntries(Object.entries(plain).map(([n, f]) => [n, () => sum(chat200Texts, f)]));
  c["wasm package: countText, each text"] = () => sum(chat200Texts, countText);
  // The engine counts the conversation itself (framing included), handed over as the object.
  c["wasm package: countTokens(conversation), cached"] = () => engine.countTokens(chat200, "gpt-4o").total_tokens;
  table(
    `(b) a 200-message tool-heavy chat, the same every round (${chat200Texts.length} texts, ${(bytes / 1048576).toFixed(2)} MB)`,
    race(c, rounds),
    bytes,
    "Cached: after the warm-up every message's count comes from the engine's per-message cache; what is timed is the chat crossing the boundary (JSON), its parse, each message's cache key and the report.",
  );
}
{
  const chatVariants = eachRound((r) => variant(chat200, tagOf(r)));
  const chatVariantTexts = chatVariants.map(texts);
  // The same chats as the text of their files (what the meter and Open Session File… pass: the
  // document's text), written before the timing.
  const chatVariantFiles = chatVariants.map((c) => JSON.stringify(c));
  // Fresh engines for the row with nothing cached.
  const freshEngines = eachRound(newEngine);
  const bytes = sum(chatVariantTexts[0], (t) => Buffer.byteLength(t));
  const c = {
    [ANCHOR]: (r) => sum(chatVariantTexts[r], plain[ANCHOR]),
    "wasm package: countText, each text": (r) => sum(chatVariantTexts[r], countText),
    "wasm package: countTokens(conversation), uncached": (r) => engine.countTokens(chatVariants[r], "gpt-4o").total_tokens,
    "wasm package: countTokens(conversation), fresh engine": (r) => freshEngines[r].countTokens(chatVariants[r], "gpt-4o").total_tokens,
    "wasm package: countTokens(file text), uncached": (r) => engine.countTokens(chatVariantFiles[r], "gpt-4o").total_tokens,
  };
  table(
    `(b′) the same chat with every message changed each round (its round's number appended to each text and tool input)`,
    race(c, rounds),
    bytes,
    "Uncached: no message's count is in the engine's cache, its piece cache is warm (as gpt-tokenizer's cache of merged words is): every message is counted. Fresh engine: a new engine each round (made before the timing), nothing cached at all. File text: the chat given as its file's text (as the extension passes a conversation file), not as an object the engine must first have `JSON.stringify`'d. **Issue 16's goal for countTokens is judged on the uncached rows.**",
  );
}
{
  const shortVariants = eachRound((r) => shorts.map((t) => `${t} ${tagOf(r)}`));
  const shortsConversation = manyMessages(shorts);
  const shortConversationVariants = shortVariants.map(manyMessages);
  const bytes = sum(shorts, (t) => Buffer.byteLength(t));
  const c = Object.fromEntries(Object.entries(plain).map(([n, f]) => [n, () => sum(shorts, f)]));
  c["wasm package: countText"] = () => sum(shorts, countText);
  c["wasm package: countTokens (one message each), cached"] = () => sum(shorts, (t) => engine.countTokens(oneMessage(t), "gpt-4o").total_tokens);
  c["wasm package: countTokens (one message each), uncached"] = (r) => sum(shortVariants[r], (t) => engine.countTokens(oneMessage(t), "gpt-4o").total_tokens);
  c["wasm package: countTokens (one 10,000-message conversation), cached"] = () => engine.countTokens(shortsConversation, "gpt-4o").total_tokens;
  c["wasm package: countTokens (one 10,000-message conversation), uncached"] = (r) => engine.countTokens(shortConversationVariants[r], "gpt-4o").total_tokens;
  const chatOf = (t) => [{ role: "user", content: t }];
  c["gpt-tokenizer: its chat count (one message each), uncached"] = (r) => sum(shortVariants[r], (t) => gptChat.countTokens(chatOf(t)));
  c["gpt-tokenizer: its chat count (one 10,000-message chat), uncached"] = (r) => gptChat.countTokens(shortVariants[r].map((t) => chatOf(t)[0]));
  const times = race(c, rounds);
  table(
    `(c) 10,000 strings of 40–60 characters, one call each`,
    times,
    bytes,
    "countTokens, one message each: each string as a one-message conversation, one call each (each call builds and returns a report object). One conversation: the 10,000 strings as the messages of one conversation, one call. Uncached: each string with the round's number appended. gpt-tokenizer's chat count: its `countTokens` given the same strings as chat messages (it encodes them whole, with its chat framing): not the anchor, the like-for-like line below.",
  );
  const likeForLike = (ours, theirs) => (median(times[theirs]) / median(times[ours])).toFixed(2);
  console.log(
    `\nLike for like, uncached: countTokens against gpt-tokenizer's own chat count: ${likeForLike("wasm package: countTokens (one message each), uncached", "gpt-tokenizer: its chat count (one message each), uncached")}× one message each, ` +
      `${likeForLike("wasm package: countTokens (one 10,000-message conversation), uncached", "gpt-tokenizer: its chat count (one 10,000-message chat), uncached")}× one conversation.`,
  );
}

// ---- Cold start: fresh processes ------------------------------------------------------------

{
  const who = ["gpt-tokenizer", "wasm package"];
  const times = Object.fromEntries(who.map((w) => [w, []]));
  const n = quick ? 3 : 7;
  for (let r = 0; r < n; r++) {
    for (const w of r % 2 ? [...who].reverse() : who) {
      const out = execFileSync(process.execPath, [path.join(root, "benches/cold.mjs"), w], { cwd: root, encoding: "utf8" });
      times[w].push(JSON.parse(out).ms);
    }
  }
  const anchor = median(times["gpt-tokenizer"]);
  console.log(`\n### Cold start: a fresh process imports the package, builds what it needs and counts one text (${n} processes each)\n`);
  console.log("| contender | median ms | range ms | × gpt-tokenizer's time |");
  console.log("| --- | ---: | ---: | ---: |");
  for (const [w, xs] of Object.entries(times)) {
    console.log(`| ${w} | ${ms(median(xs))} | ${ms(Math.min(...xs))}–${ms(Math.max(...xs))} | ${(median(xs) / anchor).toFixed(2)}× |`);
  }
}

// ---- The auto-condense check on a ~200k-token chat the engine holds ---------------------------

// The chat is held (`hold`) and every message counted once, as after it was opened. The engine
// checks the context inside a `chat` turn (before the request and after the answer); no call adds
// a message without a turn, so the rows are: the check after a change that adds no message
// (`pinMessage`, a new revision whose counts all carry over), a whole turn on an in-process server
// (benches/fake-llm.mjs: one user message and the answer added and counted), and a chat the
// engine does not hold (its text crossing whole, as on load or after `unknown_task`).
{
  const { sseFetch, fakeProfile } = await import("./fake-llm.mjs");
  const e = new CondenseEngine({ fetch: sseFetch(), now: () => performance.now(), log: () => {} });
  const options = { llm: { profile: fakeProfile }, nowMs: 0 };
  const conversation = JSON.parse(read("chat200k.json"));
  const task = { ...e.newChat("bench-200k", 0).task, conversation };
  const text = JSON.stringify(task);
  let handle = e.hold("chat", JSON.parse(text).id, text);
  const tokens = e.chatContext(handle, options).tokens; // Every message counted once.
  const size = conversation.messages.length;
  const message = (i) => `One more question, number ${i}: why does the parser drop nested groups?`;
  // Pin and unpin alternately the last user message (a text message, no tool-pair partner): the
  // change carries only it back, and the check counts nothing new.
  const last = conversation.messages.findLast((m) => m.role === "user" && m.content.every((b) => b.type === "text")).id;
  const pin = [];
  const n = quick ? 50 : 400;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    handle = e.pinMessage(handle, last, i % 2 === 0, i).change.handle;
    const status = e.chatContext(handle, options);
    pin.push(performance.now() - t0);
    if (status.tokens !== tokens) throw new Error("a pin changed the count");
  }
  // Whole turns: the check before the request and after the answer, the request built from the
  // whole chat (what makes most of a turn's time), the answer streamed as events.
  const turn = [];
  let grown = tokens;
  for (let i = 0; i < (quick ? 5 : 40); i++) {
    const t0 = performance.now();
    const step = await e.chat(handle, { type: "user", content: message(i) }, options, () => {});
    turn.push(performance.now() - t0);
    if (step.context.tokens <= grown) throw new Error("the check did not see the new messages");
    grown = step.context.tokens;
    handle = step.change.handle;
  }
  // Not held: each time under a new id (a chat the engine never held), the counter's per-message
  // cache warm, as after an eviction.
  const whole = [];
  for (let i = 0; i < (quick ? 3 : 10); i++) {
    const again = text.replace('"id":"bench-200k"', `"id":"bench-200k-${i}"`);
    const t0 = performance.now();
    e.chatContext(e.hold("chat", JSON.parse(again).id, again), options);
    whole.push(performance.now() - t0);
  }
  const gptOne = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    gpt.countTokens(message(i));
    gptOne.push(performance.now() - t0);
  }
  const row = (label, xs) => console.log(`| ${label} | ${ms(median(xs))} | ${ms(Math.min(...xs))}–${ms(Math.max(...xs))} |`);
  console.log(`\n### The auto-condense check on a ${tokens.toLocaleString("en-US")}-token, ${size}-message chat the engine holds\n`);
  console.log("| path | median ms | range ms |");
  console.log("| --- | ---: | ---: |");
  row("held, a change and the check: pinMessage(handle, id) + chatContext(handle) (no new message: every count carried over)", pin);
  row("held, a whole chat turn (in-process server, answer at once): one user message and the answer added, the check before the request and after, the request built from the whole chat", turn);
  row("not held: hold(the chat's text) + chatContext (the whole chat crosses, as on load or after unknown_task)", whole);
  row("for scale: gpt-tokenizer counting one new message's text alone", gptOne);
}

// ---- Scale: a ~1M-token, 2,000-message conversation, in its own process -----------------------

// A fresh process that loads only the wasm package, so its peak RSS is the engine's.
process.stdout.write(execFileSync(process.execPath, [path.join(root, "benches/scale.mjs"), ...(quick ? ["--quick"] : [])], { cwd: root, encoding: "utf8" }));

console.log(`\nMachine: ${os.cpus()[0]?.model ?? "?"} × ${os.cpus().length}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GB, ${os.platform()} ${os.release()}; Node ${process.version}; ${rounds} rounds.`);
const version = (p) => JSON.parse(readFileSync(path.join(root, "node_modules", p, "package.json"), "utf8")).version;
console.log(`Versions: gpt-tokenizer ${version("gpt-tokenizer")}, js-tiktoken ${version("js-tiktoken")}, tiktoken ${version("tiktoken")}, wasm package ${engine.version}${tiktokenRs ? "" : " (tiktoken-rs → wasm skipped: target/wasm-bench/ not built; `bash scripts/build-wasm --bench`)"}.`);
