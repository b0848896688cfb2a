// Held tasks from Node: a chat or a conversation file kept inside the engine and named by a handle
// `{id, revision}`, so that a turn moves only what changed. The held path (counts kept from turn
// to turn) must give the same results as a fresh engine given the saved chat; a stale or unknown
// handle is refused with `unknown_task`; the engine holds at most eight tasks, the least recently
// used going first. Run: node --test crates/condense-wasm/tests-js/
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { repoRoot, startFixtureLlm } from "../../../tests/js/servers.mjs";
import { applyChange } from "./change.mjs";
import { holdChat } from "./held.mjs";

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

/** A saved chat task holding `n` long turns (what the host's file holds). */
function longTask(engine, id, n) {
  const { task } = engine.newChat(id, 1000);
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


const text = (v) => JSON.stringify(v);
/** A task without the wall-clock durations a condensation records (they differ run to run). */
const stable = (v) => JSON.parse(JSON.stringify(v, (k, x) => (k === "time_ms" || k === "time_elapsed_ms" ? 0 : x)));

test("a held chat's context, kept from turn to turn, equals a fresh engine's count of the saved chat", async () => {
  const engine = makeEngine();
  const task = longTask(engine, "chat-a", 40);
  const handle = holdChat(engine, text(task));
  assert.deepEqual(Object.keys(handle).sort(), ["id", "revision"]);
  assert.equal(handle.id, "chat-a");
  const fresh = () => {
    const other = makeEngine();
    return (t) => other.chatContext(holdChat(other, text(t)), options());
  };
  assert.deepEqual(engine.chatContext(handle, options()), fresh()(task));

  // A turn adds two messages: the step's status and a later check of the new revision (the
  // counts carried over, the new messages counted once) equal a fresh count of the saved chat.
  const step = await engine.chat(handle, { type: "user", content: "And now — ünïcode?" }, options());
  const saved = applyChange(task, step.change);
  assert.equal(saved.conversation.messages.length, 42);
  assert.deepEqual(step.context, fresh()(saved));
  assert.deepEqual(engine.chatContext(step.change.handle, options()), step.context);
});

test("a turn on a held chat gives the same task as a fresh engine given the saved chat, and moves only what changed", async () => {
  const engine = makeEngine();
  const task = longTask(engine, "chat-b", 6);
  const handle = holdChat(engine, text(task));
  engine.chatContext(handle, options()); // Counted, as after the chat was opened.
  const step = await engine.chat(handle, { type: "user", content: "Why are nested groups dropped?" }, options());
  assert.equal(step.change.keep, 6, "the six messages the host has are not sent back");
  assert.equal(step.change.messages.length, 2);
  assert.deepEqual(step.change.task.conversation.messages, []);
  assert.notEqual(step.change.handle.revision, handle.revision);

  const other = makeEngine();
  const full = await other.chat(holdChat(other, text(task)), { type: "user", content: "Why are nested groups dropped?" }, options());
  const saved = applyChange(task, step.change);
  assert.deepEqual(saved, applyChange(task, full.change));
  assert.deepEqual(step.context, full.context);

  // The old handle is stale now; the new one goes on.
  assert.throws(() => engine.chatContext(handle, options()), { kind: "unknown_task", message: /hold it again/ });
  await assert.rejects(engine.chat(handle, { type: "user", content: "And commas?" }, options()), { kind: "unknown_task" });
  const again = await engine.chat(step.change.handle, { type: "user", content: "And commas?" }, options());
  assert.equal(again.change.keep, 8);
  const fullAgain = await other.chat(holdChat(other, text(saved)), { type: "user", content: "And commas?" }, options());
  assert.deepEqual(applyChange(saved, again.change), applyChange(saved, fullAgain.change));
  assert.deepEqual(again.context, fullAgain.context);
});

test("a held chat past its threshold condenses like a fresh one; the step carries the changed messages", async () => {
  const small = profile({ context_window: 1400, max_output: 200 });
  const engine = makeEngine();
  const task = longTask(engine, "chat-c", 12);
  const handle = holdChat(engine, text(task));
  engine.chatContext(handle, options(small));
  const step = await engine.chat(handle, { type: "user", content: "What is left?" }, options(small));
  const saved = applyChange(task, step.change);
  assert.equal(saved.condensations.length, 1);
  assert.ok(step.change.keep < 12, "hidden messages changed");
  assert.ok(step.change.marks.length > 0 && step.change.marks.every((m) => m.condense_parent), "hidden messages come back as their marks alone");

  const other = makeEngine();
  const full = await other.chat(holdChat(other, text(task)), { type: "user", content: "What is left?" }, options(small));
  assert.deepEqual(stable(saved), stable(applyChange(task, full.change)));
  assert.deepEqual(step.context, full.context);
});

test("an unknown, evicted or stale handle is refused with unknown_task; revisions never repeat", async () => {
  const engine = makeEngine();
  const task = longTask(engine, "chat-d", 4);
  assert.throws(() => engine.chatContext({ id: "nobody", revision: 1 }, options()), { kind: "unknown_task" });
  const handle = holdChat(engine, text(task));
  assert.throws(() => engine.chatContext({ id: "chat-d", revision: handle.revision + 1 }, options()), { kind: "unknown_task" });
  assert.throws(() => engine.chatContext({ id: "chat-d", revision: handle.revision - 1 }, options()), { kind: "unknown_task" });
  // Evicted: eight other tasks held after it.
  for (let i = 0; i < 8; i++) engine.hold("conversation", `file:///other-${i}.json`, session);
  assert.throws(() => engine.chatContext(handle, options()), { kind: "unknown_task" });
  await assert.rejects(engine.chat(handle, { type: "user", content: "hi" }, options()), { kind: "unknown_task" });
  await assert.rejects(engine.preview(handle, options()), { kind: "unknown_task" });
  assert.throws(() => engine.undo(handle, undefined, NOW), { kind: "unknown_task" });
  assert.throws(() => engine.pinMessage(handle, "m1", true, NOW), { kind: "unknown_task" });
  assert.throws(() => engine.heldTokens(handle), { kind: "unknown_task" });
  await assert.rejects(engine.countHeld(handle), { kind: "unknown_task" });
  // Held again from its text: a new revision, never the evicted one's.
  const again = holdChat(engine, text(task));
  assert.notEqual(again.revision, handle.revision);
  assert.throws(() => engine.chatContext(handle, options()), { kind: "unknown_task" });
  assert.ok(engine.chatContext(again, options()).tokens > 0);
  // A conversation file's handle is not a chat's.
  const doc = engine.hold("conversation", "file:///a.json", session);
  assert.throws(() => engine.chatContext(doc, options()), { kind: "unknown_task" });
});

test("the engine holds at most eight tasks, chats and files together, the least recently used going first", () => {
  const engine = makeEngine();
  // Even: chats; odd: conversation files. Each is read with the call of its kind; a read makes it
  // the most recently used, so the probes below read the held ones oldest first, keeping the order.
  const hold = (i) =>
    i % 2 ? engine.hold("conversation", `file:///t-${i}.json`, session) : holdChat(engine, text(longTask(engine, `t-${i}`, 2)));
  const read = (h) => (h.id.startsWith("file:") ? engine.heldTokens(h) : engine.chatContext(h, options()).tokens);
  const isHeld = (h) => {
    try {
      return read(h) > 0;
    } catch (e) {
      if (e.kind !== "unknown_task") throw e;
      return false;
    }
  };
  /** Which of `handles` are held: the absent ones probed first (a miss changes nothing), then the
   *  held ones in `order`. */
  const probe = (handles, gone, order) => {
    for (const i of gone) assert.equal(isHeld(handles[i]), false, `t-${i} should be gone`);
    for (const i of order) assert.equal(isHeld(handles[i]), true, `t-${i} should be held`);
  };
  const handles = [];
  for (let i = 0; i < 12; i++) handles.push(hold(i));
  probe(handles, [0, 1, 2, 3], [4, 5, 6, 7, 8, 9, 10, 11]);
  // Using one keeps it: t-4 is read, then four more are held, and t-4 is still there.
  read(handles[4]);
  for (let i = 12; i < 16; i++) handles.push(hold(i));
  probe(handles, [5, 6, 7, 8], [9, 10, 11, 4, 12, 13, 14, 15]);
  // Holding an id again replaces it (one slot, a new revision): one new task evicts one, t-9.
  const replaced = engine.hold("conversation", "file:///t-9.json", session);
  assert.throws(() => engine.heldTokens(handles[9]), { kind: "unknown_task" });
  handles[9] = replaced;
  handles.push(hold(16));
  probe(handles, [10], [11, 4, 12, 13, 14, 15, 9, 16]);
});

test("a held conversation file counts as countTokens does, through edits and appends", () => {
  const engine = makeEngine();
  const conversation = engine.parseConversation(session);
  let handle = engine.hold("conversation", "file:///s.json", session);
  assert.equal(engine.heldTokens(handle, "gpt-4o"), engine.countTokens(conversation, "gpt-4o").total_tokens);
  assert.equal(engine.heldTokens(handle, "gpt-4"), engine.countTokens(conversation, "gpt-4").total_tokens);

  // The file edited: one message changed.
  const edited = JSON.parse(text(conversation));
  edited.messages[1].content = [{ type: "text", text: "A different answer, with more words than before." }];
  handle = engine.hold("conversation", "file:///s.json", text(edited));
  assert.equal(engine.heldTokens(handle), engine.countTokens(edited).total_tokens);

  // A message appended to the file.
  edited.messages.push({ id: "added-1", ts: 0, role: "user", content: [{ type: "text", text: "One more question." }] });
  handle = engine.hold("conversation", "file:///s.json", text(edited));
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
  const file = text({ system: "You are a coding assistant.", messages });
  const handle = engine.hold("conversation", "file:///sliced.json", file);
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
  assert.equal(counted.tokens, makeEngine().countTokens(file, "gpt-4o").total_tokens);
  assert.ok(turns >= 10, `the host's event loop turned between slices (${turns} turns)`);
  // Counted again: the same, from the held counts.
  assert.deepEqual(await engine.countHeld(handle, "gpt-4o"), counted);
  // Always a promise: an unknown handle rejects, it does not throw.
  const unknown = engine.countHeld({ id: "file:///none.json", revision: 1 }, "gpt-4o");
  assert.ok(unknown instanceof Promise);
  await assert.rejects(unknown, { kind: "unknown_task" });
});
