// Held tasks from Node: a chat or a conversation file kept inside the engine and named by a handle
// `{id, revision}`, so that a turn moves only what changed. The handle path must give the same
// results as the full-task path; a stale or unknown handle is refused with `unknown_task`; the
// engine holds a bounded number of tasks. Run: node --test crates/condense-wasm/tests-js/
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { repoRoot, startFixtureLlm } from "../../../tests/js/servers.mjs";

const require = createRequire(import.meta.url);
const { CondenseEngine } = require(path.join(repoRoot, "extension/wasm/condense_wasm.js"));

const KEY = "sk-test-held";
const session = readFileSync(path.join(repoRoot, "tests/fixtures/small-session.json"), "utf8");

const makeEngine = () =>
  new CondenseEngine({
    fetch: (req, signal) => fetch(req.url, { method: req.method, headers: req.headers, body: req.body, signal }),
    now: () => performance.now(),
    log: () => {},
  });

let llm;
before(async () => {
  llm = await startFixtureLlm({ apiKey: KEY });
});
after(async () => {
  await llm?.stop();
});

const profile = (extra = {}) => ({
  id: "test-openai-compatible",
  kind: "openai-compatible",
  base_url: `${llm.origin}/v1`,
  model: "fixture",
  context_window: 32000,
  max_output: 1000,
  ...extra,
});
const NOW = 1_700_000_000_000;
const options = (p = profile()) => ({ llm: { profile: p, apiKey: KEY }, provider: "native", nowMs: NOW });

/** A chat task holding `n` long turns. */
function longChat(engine, id, n) {
  const task = engine.newChat(id, 1000);
  for (let i = 0; i < n; i++) {
    task.conversation.messages.push({
      id: `m${i + 1}`,
      ts: 1000,
      role: i % 2 ? "assistant" : "user",
      content: [{ type: "text", text: `Turn ${i}: ${"the parser drops nested parentheses in grouped expressions; ".repeat(10)}` }],
    });
  }
  return task;
}

/** What the host does with a step: keep the first `keep` messages of its copy, then the new ones. */
function applyStep(task, step) {
  const messages = [...task.conversation.messages.slice(0, step.keep), ...step.messages];
  return { ...step.task, conversation: { ...step.task.conversation, messages } };
}

const clone = (v) => JSON.parse(JSON.stringify(v));
/** A task without the wall-clock durations a condensation records (they differ run to run). */
const stable = (v) => JSON.parse(JSON.stringify(v, (k, x) => (k === "time_ms" || k === "time_elapsed_ms" ? 0 : x)));

test("a held chat's context equals the full task's, and after a new message too", () => {
  const engine = makeEngine();
  const task = longChat(engine, "chat-a", 40);
  const handle = engine.holdChat(task);
  assert.deepEqual(Object.keys(handle).sort(), ["id", "revision"]);
  assert.equal(handle.id, "chat-a");
  assert.deepEqual(engine.chatContext(handle, options()), engine.chatContext(task, options()));

  const message = { id: "m41", ts: 2000, role: "user", content: [{ type: "text", text: "And now — ünïcode?" }] };
  const next = engine.appendMessages(handle, [message]);
  assert.notEqual(next.revision, handle.revision);
  task.conversation.messages.push(message);
  assert.deepEqual(engine.chatContext(next, options()), engine.chatContext(task, options()));
  assert.throws(() => engine.appendMessages(next, [message]), { kind: "invalid_input", message: /m41 is already/ });
});

test("a turn on a held chat gives the same task as a turn on the full task, and moves only what changed", async () => {
  const engine = makeEngine();
  const task = longChat(engine, "chat-b", 6);
  const full = await engine.chat(clone(task), { type: "user", content: "Why are nested groups dropped?" }, options());

  const handle = engine.holdChat(task);
  const step = await engine.chatHeld(handle, { type: "user", content: "Why are nested groups dropped?" }, options());
  assert.equal(step.keep, 6, "the six messages the host has are not sent back");
  assert.equal(step.messages.length, 2);
  assert.deepEqual(step.task.conversation.messages, []);
  assert.deepEqual(applyStep(task, step), full.task);
  assert.deepEqual(step.context, full.context);

  // The old handle is stale now; the new one goes on, through `chat` too (the full outcome).
  assert.throws(() => engine.chatContext(handle, options()), { kind: "unknown_task", message: /send the full task/ });
  const again = await engine.chat(step.handle, { type: "user", content: "And commas?" }, options());
  const fullAgain = await engine.chat(full.task, { type: "user", content: "And commas?" }, options());
  assert.deepEqual(again.task, fullAgain.task);
  assert.deepEqual(again.context, fullAgain.context);
});

test("a held chat past its threshold condenses like the full one; the step carries the changed messages", async () => {
  const engine = makeEngine();
  const small = profile({ context_window: 1400, max_output: 200 });
  const task = longChat(engine, "chat-c", 12);
  const full = await engine.chat(clone(task), { type: "user", content: "What is left?" }, options(small));
  assert.equal(full.task.condensations.length, 1);

  const step = await engine.chatHeld(engine.holdChat(task), { type: "user", content: "What is left?" }, options(small));
  assert.ok(step.keep < 12, "hidden messages changed, so they come back");
  assert.deepEqual(stable(applyStep(task, step)), stable(full.task));
  assert.deepEqual(step.context, full.context);
});

test("an unknown, released or stale handle is refused with unknown_task", async () => {
  const engine = makeEngine();
  const task = longChat(engine, "chat-d", 4);
  assert.throws(() => engine.chatContext({ id: "nobody", revision: 1 }, options()), { kind: "unknown_task" });
  const handle = engine.holdChat(task);
  assert.throws(() => engine.chatContext({ id: "chat-d", revision: handle.revision + 1 }, options()), { kind: "unknown_task" });
  assert.equal(engine.releaseTask("chat-d"), true);
  assert.equal(engine.releaseTask("chat-d"), false);
  assert.throws(() => engine.chatContext(handle, options()), { kind: "unknown_task" });
  await assert.rejects(engine.chatHeld(handle, { type: "user", content: "hi" }, options()), { kind: "unknown_task" });
  await assert.rejects(engine.chat(handle, { type: "user", content: "hi" }, options()), { kind: "unknown_task" });
  assert.throws(() => engine.appendMessages(handle, []), { kind: "unknown_task" });
  assert.throws(() => engine.heldTokens(handle), { kind: "unknown_task" });
  // A conversation file's handle is not a chat's.
  const doc = engine.holdConversation("file:///a.json", session);
  assert.throws(() => engine.chatContext(doc, options()), { kind: "unknown_task" });
});

test("the engine holds at most eight tasks, the least recently used going first", () => {
  const engine = makeEngine();
  const handles = [];
  for (let i = 0; i < 12; i++) handles.push(engine.holdChat(longChat(engine, `chat-${i}`, 2)));
  assert.equal(engine.heldCount(), 8);
  assert.throws(() => engine.chatContext(handles[0], options()), { kind: "unknown_task" });
  // Using one keeps it: chat-4 is read, then four more are held, and chat-4 is still there.
  engine.chatContext(handles[4], options());
  for (let i = 12; i < 16; i++) engine.holdChat(longChat(engine, `chat-${i}`, 2));
  assert.equal(engine.heldCount(), 8);
  assert.ok(engine.chatContext(handles[4], options()).tokens > 0);
  assert.throws(() => engine.chatContext(handles[5], options()), { kind: "unknown_task" });
});

test("a held conversation file counts as countTokens does, through edits and appends", () => {
  const engine = makeEngine();
  const conversation = engine.parseConversation(session);
  let handle = engine.holdConversation("file:///s.json", session);
  assert.equal(engine.heldTokens(handle, "gpt-4o"), engine.countTokens(conversation, "gpt-4o").total_tokens);
  assert.equal(engine.heldTokens(handle, "gpt-4"), engine.countTokens(conversation, "gpt-4").total_tokens);

  // The file edited: one message changed.
  const edited = clone(conversation);
  edited.messages[1].content = [{ type: "text", text: "A different answer, with more words than before." }];
  handle = engine.holdConversation("file:///s.json", JSON.stringify(edited));
  assert.equal(engine.heldTokens(handle), engine.countTokens(edited).total_tokens);

  const added = { id: "added-1", ts: 0, role: "user", content: [{ type: "text", text: "One more question." }] };
  handle = engine.appendMessages(handle, [added]);
  edited.messages.push(added);
  assert.equal(engine.heldTokens(handle), engine.countTokens(edited).total_tokens);
});

test("countHeld counts in slices: the total heldTokens gives, the host's other work runs between slices", async () => {
  // A clock that moves 5 ms a reading: a slice ends after a few messages, whatever the machine.
  let ms = 0;
  const engine = new CondenseEngine({ fetch: () => Promise.reject(new Error("no network")), now: () => (ms += 5), log: () => {} });
  const messages = [];
  for (let i = 0; i < 40; i++) {
    messages.push({ role: "user", content: `Question ${i}: ${"why does the parser drop nested groups? ".repeat(20)}` });
    messages.push({ role: "assistant", content: `Answer ${i}: ${"L".repeat(2_000 + i)}` });
  }
  const text = JSON.stringify({ system: "You are a coding assistant.", messages });
  const handle = engine.holdConversation("file:///sliced.json", text);
  let turns = 0;
  let ticking = true;
  const tick = () => {
    turns++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  const counted = await engine.countHeld(handle, "gpt-4o");
  ticking = false;
  assert.deepEqual(counted, { tokens: engine.heldTokens(handle, "gpt-4o"), messages: 80 });
  assert.equal(counted.tokens, makeEngine().countTokens(text, "gpt-4o").total_tokens);
  assert.ok(turns >= 10, `the host's event loop turned between slices (${turns} turns)`);
  // Counted again: the same, from the held counts.
  assert.deepEqual(await engine.countHeld(handle, "gpt-4o"), counted);
  assert.throws(() => engine.countHeld({ id: "file:///none.json", revision: 1 }, "gpt-4o"), { kind: "unknown_task" });
});
