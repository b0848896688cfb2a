// What crosses the boundary between the host and the wasm engine per chat turn on a ~188k-token
// chat, now (the engine holds the chat; a handle, the input and the options go in, what changed
// comes out) and before (the whole task went in and the whole task came back: computed from the
// same task, not run), and the time of Undo, Pin and Apply on that chat. The turns are real
// `chat` turns: the host's `fetch` answers an OpenAI-compatible stream in-process
// (benches/fake-llm.mjs), so no network. Sizes are `JSON.stringify` lengths (UTF-16 code units)
// of the actual arguments, results and events: a measure of what crosses, not of how the
// bindings copy it. A benchmark, never a test: nothing here asserts a time.
//
//   node scripts/bench-inputs.mjs        (once: writes target/bench-inputs/)
//   node benches/boundary.mjs [--runs N] (default 20; `npm run bench:boundary` does both)
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fakeProfile, sseFetch } from "./fake-llm.mjs";
import { applyChange } from "../crates/condense-wasm/tests-js/change.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const runsArg = process.argv.indexOf("--runs");
const runs = runsArg > 0 ? Number(process.argv[runsArg + 1]) : 20;
const input200k = path.join(root, "target/bench-inputs/chat200k.json");
if (!existsSync(input200k)) {
  console.error("benches: no inputs; run `node scripts/bench-inputs.mjs` first");
  process.exit(1);
}
const { CondenseEngine } = createRequire(import.meta.url)(path.join(root, "extension/wasm/condense_wasm.js"));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const ms = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3));
const size = (v) => (v === undefined ? 0 : JSON.stringify(v).length);
const chars = (n) => Math.round(n).toLocaleString("en-US");
const times = (xs) => `${ms(median(xs))} | ${ms(Math.min(...xs))}–${ms(Math.max(...xs))}`;


// The LLM request and its answer cross too (the host's fetch), the same before and after.
let requestChars = 0;
let answerChars = 0;
const engine = new CondenseEngine({
  fetch: sseFetch({ seen: (request, sse) => ((requestChars = request.body.length), (answerChars = sse.length)) }),
  now: () => performance.now(),
  log: () => {},
});
const options = (extra = {}) => ({ llm: { profile: fakeProfile }, nowMs: 1_700_000_000_000, ...extra });

// The chat, as benches/run.mjs builds its 188k-token chat: chat200k.json in a new chat task.
const conversation = JSON.parse(readFileSync(input200k, "utf8"));
let task = { ...engine.newChat("bench-200k", 0).task, conversation };
let handle = engine.hold("chat", task.id, JSON.stringify(task));
const tokens = engine.chatContext(handle, options()).tokens; // Counted once, as after opening it.
const messages = conversation.messages.length;

// ---- (a), (b): bytes per chat turn ---------------------------------------------------------

const now = { in: [], out: [], events: [], eventCount: [], keep: [], changed: [] };
const before = { in: [], out: [] };
const request = { body: [], answer: [] };
const turnMs = [];
for (let i = 0; i < runs; i++) {
  const input = { type: "user", content: `One more question, number ${i}: why does the parser drop nested groups?` };
  const opts = options();
  const events = [];
  const t0 = performance.now();
  const step = await engine.chat(handle, input, opts, (e) => events.push(e));
  turnMs.push(performance.now() - t0);
  if (events.some((e) => e.type === "Error")) throw new Error(`the turn failed: ${JSON.stringify(events.find((e) => e.type === "Error"))}`);
  const after = applyChange(task, step.change);
  now.in.push(size(handle) + size(input) + size(opts));
  now.out.push(size(step));
  now.events.push(events.reduce((n, e) => n + size(e), 0));
  now.eventCount.push(events.length);
  now.keep.push(step.change.keep);
  now.changed.push(step.change.messages.length);
  // Before: `chat(task, input, options, onEvent)` took the whole task and resolved with
  // `{task, context}`, the whole task after the turn. Computed from the same tasks.
  before.in.push(size(task) + size(input) + size(opts));
  before.out.push(size({ task: after, context: step.context }));
  request.body.push(requestChars);
  request.answer.push(answerChars);
  task = after;
  handle = step.change.handle;
}
const m = (xs) => median(xs);
const nowTotal = m(now.in) + m(now.out) + m(now.events);
const beforeTotal = m(before.in) + m(before.out) + m(now.events);
console.log(`\n### What crosses the boundary per chat turn on a ${tokens.toLocaleString("en-US")}-token, ${messages}-message chat (median of ${runs} turns)\n`);
console.log(`Each turn adds a user message and the answer (the chat grows by two messages a turn); the answer streams in ${m(now.eventCount)} events. Sizes in characters of JSON.\n`);
console.log("| what crosses | now: measured | before: computed, not run |");
console.log("| --- | ---: | ---: |");
console.log(`| in: the handle (before: the whole task), the input, the options | ${chars(m(now.in))} | ${chars(m(before.in))} |`);
console.log(`| out: the ChatStep (${m(now.keep)} messages kept, ${m(now.changed)} sent; before: \`{task, context}\`, the whole task) | ${chars(m(now.out))} | ${chars(m(before.out))} |`);
console.log(`| out: the agent events (onEvent), the same either way | ${chars(m(now.events))} | ${chars(m(now.events))} |`);
console.log(`| **total per turn** | **${chars(nowTotal)}** | **${chars(beforeTotal)}** (${(beforeTotal / nowTotal).toFixed(0)}×) |`);
console.log(`\nBefore is computed: \`JSON.stringify\` of the host's task before the turn and after it (the same task, with the turn's changes applied), plus the same input, options and events; the old \`chat(task, …)\` is not run (this engine has no such call). Not counted above, the same either way: the LLM request the engine hands the host's fetch (${chars(m(request.body))}: the whole chat, as the server needs it) and the answer's event stream (${chars(m(request.answer))}). A turn took ${times(turnMs).replace(" | ", " ms median, range ")} ms, with the server answering at once.`);

// ---- (c): the time of Undo, Pin and Apply ----------------------------------------------------

// Apply: a truncation to half the chat previewed (untimed), then applied by its id (timed); Undo:
// that condensation undone (timed), so every run starts from the same chat.
const grown = engine.chatContext(handle, options()).tokens;
const truncation = options({ provider: "truncation", config: { keep_last: 3, target_percent: 50, ledger: true } });
const op = () => ({ ms: [], in: [], out: [], before: [], keep: [], sent: [] });
const apply = op();
const undo = op();
/** Records one timed call: its time, what crossed now, the whole task in and out before. */
function record(into, t, args, result, from, to) {
  into.ms.push(t);
  into.in.push(args.reduce((n, a) => n + size(a), 0));
  into.out.push(size(result));
  into.before.push(size(from) + size(to));
  into.keep.push(result.change.keep);
  into.sent.push(result.change.messages.length);
}
let condensedTo;
for (let i = 0; i < runs; i++) {
  const outcome = await engine.preview(handle, truncation);
  if (outcome.status !== "ready") throw new Error(`the preview failed: ${JSON.stringify(outcome.failure)}`);
  const at = Date.now();
  let t0 = performance.now();
  const applied = engine.applyPreview(handle, outcome.preview.condense_id, at);
  let t = performance.now() - t0;
  const condensed = applyChange(task, applied.change);
  record(apply, t, [handle, outcome.preview.condense_id, at], applied, task, condensed);
  condensedTo = applied.record.tokens_after;
  t0 = performance.now();
  const undone = engine.undo(applied.change.handle, undefined, at);
  t = performance.now() - t0;
  const restored = applyChange(condensed, undone.change);
  record(undo, t, [applied.change.handle, undefined, at], undone, condensed, restored);
  if (restored.conversation.messages.length !== task.conversation.messages.length) throw new Error("undo did not bring every message back");
  task = restored;
  handle = undone.change.handle;
}

// Pin: pinned and unpinned alternately, a text user message early in the chat, in the middle and
// last: the change carries back the message and every one after it.
const userTexts = task.conversation.messages
  .map((msg, at) => ({ msg, at }))
  .filter(({ msg }) => msg.role === "user" && msg.content.every((b) => b.type === "text"));
const pins = [
  ["early", userTexts[1]],
  ["middle", userTexts[userTexts.length >> 1]],
  ["last", userTexts.at(-1)],
].map(([where, { msg, at }]) => ({ where, id: msg.id, at, ...op() }));
for (const pin of pins) {
  for (let i = 0; i < runs; i++) {
    const at = Date.now();
    const t0 = performance.now();
    const pinned = engine.pinMessage(handle, pin.id, i % 2 === 0, at);
    const t = performance.now() - t0;
    const after = applyChange(task, pinned.change);
    record(pin, t, [handle, pin.id, i % 2 === 0, at], pinned, task, after);
    task = after;
    handle = pinned.change.handle;
  }
}

console.log(`\n### Undo, Pin and Apply on the same chat, ${grown.toLocaleString("en-US")} tokens and ${task.conversation.messages.length} messages after the turns above (${runs} runs each)\n`);
console.log(`Apply: a truncation to half (→ ${condensedTo.toLocaleString("en-US")} tokens) previewed, untimed, then applied by its id; Undo: that condensation undone, so each run starts from the same chat. Pin: pinned and unpinned alternately. Sizes in characters of JSON; before is computed (the whole task in and the whole task out; Apply also took the preview, whose result held the whole new chat, not counted).\n`);
console.log("| call | median ms | range ms | in now | out now (messages kept / sent whole) | before, computed |");
console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
const line = (label, x) =>
  console.log(`| ${label} | ${times(x.ms)} | ${chars(m(x.in))} | ${chars(m(x.out))} (${m(x.keep)} / ${m(x.sent)}) | ${chars(m(x.before))} |`);
line("applyPreview(handle, previewId, nowMs)", apply);
line("undo(handle, undefined, nowMs)", undo);
for (const pin of pins) line(`pinMessage(handle, id, pinned, nowMs): the ${pin.where} user message (${pin.at + 1} of ${task.conversation.messages.length})`, pin);
console.log(`| for reference: a chat turn (section above) | ${times(turnMs)} | | | |`);

console.log(`\nMachine: ${os.cpus()[0]?.model ?? "?"} × ${os.cpus().length}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(", ")}; Node ${process.version}; wasm package ${engine.version}.`);
