// The bindings from Node: the wasm package that the extension loads (extension/wasm, built by
// scripts/build-wasm), driven through the same host contract, with `fetch` pointed at the fixture
// LLM server on 127.0.0.1. Run: node --test crates/condense-wasm/tests-js/
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { repoRoot, startFixtureLlm } from "../../../tests/js/servers.mjs";
import { applyChange } from "./change.mjs";
import { holdChat, condenseWhole } from "./held.mjs";

const require = createRequire(import.meta.url);
const { CondenseEngine } = require(path.join(repoRoot, "extension/wasm/condense_wasm.js"));

const fixture = (name) => readFileSync(path.join(repoRoot, "tests/fixtures", name), "utf8");
const session = JSON.parse(fixture("small-session.json"));
const KEY = "sk-test-bindings";

function makeEngine(extra = {}) {
  const logs = [];
  const engine = new CondenseEngine({
    fetch: (req, signal) => fetch(req.url, { method: req.method, headers: req.headers, body: req.body, signal }),
    now: () => performance.now(),
    log: (level, message) => logs.push(`${level} ${message}`),
    ...extra,
  });
  return { engine, logs };
}

/** The CLI on the same input: the bindings must agree with it. */
function cli(...args) {
  return JSON.parse(
    execFileSync("cargo", ["run", "--quiet", "-p", "condense-cli", "--", ...args], { cwd: repoRoot, encoding: "utf8" }),
  );
}

let llm;
before(async () => {
  llm = await startFixtureLlm({ apiKey: KEY, stallSeconds: 5 });
});
after(async () => {
  await llm?.stop();
});

const profile = (kind, model = "fixture") => ({
  id: `test-${kind}`,
  kind,
  base_url: kind === "anthropic" ? llm.origin : `${llm.origin}/v1`,
  model,
  context_window: 32000,
  max_output: 1000,
  price_input_per_mtok: 3,
  price_output_per_mtok: 15,
});

test("lists the built-in providers, smart the default", () => {
  const { engine } = makeEngine();
  const ids = engine.listProviders().map((p) => p.id);
  assert.deepEqual(ids, ["native", "lossless", "truncation", "manual", "superseded", "mask", "smart"]);
  assert.equal(engine.defaultProvider, "smart");
  engine.updateProviderConfig("truncation", { enabled: false });
  assert.deepEqual(engine.listProviders(true).map((p) => p.id), ["native", "lossless", "manual", "superseded", "mask", "smart"]);
  assert.equal(engine.providerEntries().find((e) => e.id === "truncation").enabled, false);
});

test("hands hosts the core's limits, defaults and each profile kind's base URL, window and key", () => {
  const { engine } = makeEngine();
  const { limits, kinds } = engine.hostMetadata();
  assert.equal(limits.threshold_min, 10);
  assert.equal(limits.threshold_max, 100);
  assert.equal(limits.default_threshold_percent, 80);
  assert.equal(limits.default_min_gain_percent, 5);
  assert.equal(limits.default_provider, "smart");
  assert.equal(limits.default_provider, engine.defaultProvider);
  assert.deepEqual(kinds, [
    { kind: "openai", default_base_url: "https://api.openai.com/v1", default_context_window: 128000, key: "required" },
    { kind: "anthropic", default_base_url: "https://api.anthropic.com", default_context_window: 200000, key: "required" },
    { kind: "openai-compatible", default_base_url: null, default_context_window: 8192, key: "optional" },
    { kind: "cli", default_base_url: null, default_context_window: 200000, key: "none" },
    { kind: "manual", default_base_url: null, default_context_window: 128000, key: "none" },
  ]);
  assert.deepEqual([limits.temperature_min, limits.temperature_max], [0, 2]);
  // The checks use the same numbers.
  const auto = (t) => ({ setting: "auto_condense", value: { enabled: true, threshold_percent: t, min_gain_percent: 5 } });
  assert.equal(engine.checkSetting(auto(limits.threshold_min)), undefined);
  assert.equal(engine.checkSetting(auto(limits.threshold_max)), undefined);
  assert.match(engine.checkSetting(auto(limits.threshold_min - 1)), /10 to 100/);
});

test("counts tokens as the CLI does", () => {
  const { engine } = makeEngine();
  const report = engine.countTokens(session, "gpt-4o");
  const expected = cli("count", "--model", "gpt-4o", "tests/fixtures/small-session.json");
  assert.deepEqual(report, expected);
  // Text in, and the OpenAI format, read by the same parser.
  assert.equal(engine.countTokens(fixture("small-session.json")).total_tokens, expected.total_tokens);
  assert.ok(engine.countTokens(fixture("openai-chat.json")).total_tokens > 0);
});

test("counts a text in the model's encoding, as tiktoken does", () => {
  const { engine } = makeEngine();
  // Reference counts from tiktoken's encode_ordinary (the core's unit tests hold the same).
  assert.equal(engine.countText("Ünïcödé façade — naïve café", "gpt-4o"), 10);
  assert.equal(engine.countText("Ünïcödé façade — naïve café", "gpt-4"), 13);
  assert.equal(engine.countText("hello world"), 2);
  assert.equal(engine.countText(""), 0);
});

test("counts texts of any length and content the same way as a conversation's text", () => {
  const { engine } = makeEngine();
  // The conversation path reads its text through JSON; countText writes it into the engine's own
  // buffer: both must give tiktoken's count, so they agree.
  const framing = engine.countTokens({ messages: [{ id: "x", role: "user", content: [{ type: "text", text: "" }] }] }).total_tokens;
  const viaConversation = (text) =>
    engine.countTokens({ messages: [{ id: "x", role: "user", content: [{ type: "text", text }] }] }, "gpt-4o").total_tokens - framing;
  const line = "Ünïcödé façade — naïve café 🦀 中文测试 don't `code` 12345\n";
  const texts = [
    "short",
    line,
    // Past the first 64 KiB of buffer, ASCII and multi-byte, and a four-byte character at the edge.
    "word ".repeat(14_000),
    line.repeat(2_000),
    "x y".repeat(21_844) + "z🦀🦀",
    "short again, after the buffer grew",
  ];
  for (const text of texts) assert.equal(engine.countText(text, "gpt-4o"), viaConversation(text), text.slice(0, 40));
  // A lone surrogate (which JSON cannot carry) is read as U+FFFD.
  assert.equal(engine.countText("broken \ud800 surrogate", "gpt-4o"), viaConversation("broken \ufffd surrogate"));
  // The wasm memory grows (a large conversation), so the buffer's view must be made again.
  engine.countTokens({ messages: [{ id: "y", role: "user", content: [{ type: "text", text: line.repeat(100_000) }] }] });
  assert.equal(engine.countText(line, "gpt-4o"), viaConversation(line));
  assert.throws(() => engine.countText(42, "gpt-4o"), (e) => e.kind === "invalid_input");
  // The error is thrown from inside the call: many of them leave the engine as it was (its text
  // buffer free, its counter not held), and the next count is right.
  for (let i = 0; i < 10_000; i++) assert.throws(() => engine.countText(i % 2 ? null : {}, i % 3 ? "gpt-4" : undefined));
  assert.equal(engine.countText(line, "gpt-4o"), viaConversation(line));
  assert.equal(engine.countText(line), viaConversation(line));
});

test("condenses losslessly as the CLI does, and undo of the held result brings every message back", async () => {
  const { engine, logs } = makeEngine();
  const result = await condenseWhole(engine, session, { provider: "lossless" });
  const expected = cli("run", "--provider", "lossless", "tests/fixtures/small-session.json");
  assert.equal(result.error, null);
  assert.deepEqual(result.messages, expected.messages);
  assert.equal(result.new_context_tokens, expected.new_context_tokens);
  assert.equal(result.system, session.system);
  assert.ok(result.metrics.tokens_saved > 0, "lossless saves tokens on this fixture");
  assert.ok(logs.some((l) => l.startsWith("info condensed with lossless")), logs.join("\n"));

  // The result is a conversation: held as a file, its condensation undone.
  const undone = engine.undo(engine.hold("conversation", "file:///condensed.json", result), undefined, Date.now());
  assert.equal(undone.condense_id, "c1");
  assert.deepEqual(JSON.parse(engine.heldText(undone.handle)).messages, engine.parseConversation(session).messages);
  assert.throws(() => engine.undo(undone.handle, undefined, Date.now()), (e) => e.kind === "nothing_to_undo");
  assert.throws(() => engine.undo(engine.hold("conversation", "file:///s.json", session), undefined, Date.now()), (e) => e.kind === "nothing_to_undo");
});

test("a file's tool definitions come back with the result, as Apply Pasted Summary writes it", async () => {
  const { engine } = makeEngine();
  const request = JSON.parse(fixture("anthropic-messages.json"));
  // Long enough to be worth a summary.
  for (let i = 0; i < 6; i++) {
    request.messages.push(
      { role: "user", content: `Step ${i}: explain the parser's state machine once more, in detail. `.repeat(12) },
      { role: "assistant", content: `The parser reads tokens and moves between states; step ${i}. `.repeat(12) },
    );
  }
  request.tools = [
    { name: "read_file", description: "Read a file", input_schema: { type: "object", properties: { path: { type: "string" } } } },
    { name: "grep", input_schema: { type: "object" }, cache_control: { type: "ephemeral" } },
  ];
  const answer = "## Summary\nThe user asked about README.md and its licence.";
  const result = await condenseWhole(engine, request, { provider: "manual", config: { answer }, model: "claude-sonnet-4-5" });
  assert.equal(result.error, null);
  assert.deepEqual(result.tools, request.tools);
  assert.deepEqual(engine.parseConversation(result).tools, request.tools);
  assert.equal(engine.parseConversation(result).system, request.system);
  // A conversation without tools gives a result without the field.
  const plain = await condenseWhole(engine, session, {});
  assert.equal("tools" in plain, false);
});

test("bad input and bad calls are typed errors, never crashes", async () => {
  const { engine } = makeEngine();
  assert.throws(() => engine.countTokens(fixture("broken.json")), (e) => e.kind === "invalid_input");
  assert.throws(
    () => engine.countTokens({ messages: [{ id: "a", role: "user", content: [{ type: "text" }] }] }),
    (e) => e.kind === "invalid_input" && /messages\[0\]/.test(e.message),
  );
  await assert.rejects(condenseWhole(engine, session, { provider: "nope" }), (e) => e.kind === "provider_not_found");
  await assert.rejects(condenseWhole(engine, session, { bogus: 1 }), (e) => e.kind === "invalid_input" && /bogus/.test(e.message));
  engine.updateProviderConfig("truncation", { enabled: false });
  await assert.rejects(condenseWhole(engine, session, { provider: "truncation" }), (e) => e.kind === "provider_disabled");
  assert.throws(() => engine.updateProviderConfig("lossless", { wrong: true }), (e) => e.kind === "invalid_input");
  assert.throws(() => new CondenseEngine({ now: () => 0, log() {} }), (e) => e.kind === "invalid_input" && /fetch/.test(e.message));
});

for (const kind of ["openai", "anthropic"]) {
  test(`native summary through the host's fetch (${kind})`, async () => {
    const { engine } = makeEngine();
    await llm.clearRequests();
    const result = await condenseWhole(engine, session, { provider: "native", llm: { profile: profile(kind), apiKey: KEY } });
    assert.equal(result.error, null, JSON.stringify(result.error));
    assert.ok(result.summary && result.summary.length > 0);
    assert.ok(result.cost > 0, "priced profile, reported usage");
    assert.ok(result.messages.some((m) => m.is_summary));
    const [request] = await llm.requests();
    const sent = kind === "anthropic" ? request.headers["x-api-key"] : request.headers.authorization;
    assert.ok(sent.endsWith(KEY), "the key reached the server");
  });
}

test("a wrong API key is llm_auth, the conversation untouched, the key not in the message", async () => {
  const { engine, logs } = makeEngine();
  const wrong = "sk-wrong-canary-1234";
  const result = await condenseWhole(engine, session, { provider: "native", llm: { profile: profile("openai"), apiKey: wrong } });
  assert.equal(result.error.kind, "llm_auth");
  assert.deepEqual(result.messages, engine.parseConversation(session).messages);
  assert.equal(result.cost, 0);
  assert.ok(!JSON.stringify(result).includes(wrong));
  assert.ok(logs.some((l) => l.startsWith("warn condensation with native failed: llm_auth")), logs.join("\n"));
  assert.ok(!logs.join("\n").includes(wrong));
});

// LLM calls run inside chat turns and condensations, and Test Connection: the streaming layer is
// seen through a turn's events, its errors through `Error` events and Test Connection's rejection.

const chatOptions = (p, extra = {}) => ({ llm: { profile: p, apiKey: KEY }, provider: "native", nowMs: Date.now(), ...extra });
const eventTypes = (events) =>
  events.map((e) => e.type).filter((t, i, all) => !(t === "MessageContent" && all[i - 1] === "MessageContent"));

test("a chat turn streams the answer's chunks as they arrive and ends with usage and cost", async () => {
  const { engine } = makeEngine();
  const events = [];
  const { change } = await engine.chat(
    engine.newChat("chat-s", 1000).handle,
    { type: "user", content: "Say something." },
    chatOptions(profile("openai")),
    (e) => events.push(e),
  );
  const chunks = events.filter((e) => e.type === "MessageContent");
  assert.ok(chunks.length > 2, `several chunks, got ${chunks.length}`);
  const end = events.find((e) => e.type === "MessageEnd");
  assert.equal(events.findLast((e) => e.type === "MessageContent"), chunks.at(-1));
  assert.ok(events.indexOf(end) > events.indexOf(chunks.at(-1)), "the end after the last chunk");
  assert.equal(change.messages.at(-1).content[0].text, chunks.map((c) => c.delta).join(""));
  assert.ok(end.usage.output_tokens > 0);
  assert.ok(end.cost > 0, "priced profile, reported usage");
});

test("a server that goes silent ends in llm_timeout with the partial text", async () => {
  const { engine } = makeEngine({ readTimeoutMs: 300 });
  await assert.rejects(
    engine.testConnection({ profile: profile("openai", "fault-stall"), apiKey: KEY, maxRetries: 0 }),
    (e) => e.kind === "llm_timeout" && e.partial === "Partial",
  );
  // In a chat turn: an Error event, the partial answer kept and marked.
  const events = [];
  const silent = { llm: { profile: profile("openai", "fault-stall"), apiKey: KEY, maxRetries: 0 } };
  const { change } = await engine.chat(
    engine.newChat("chat-silent", 1000).handle,
    { type: "user", content: "Hi" },
    chatOptions(undefined, silent),
    (e) => events.push(e),
  );
  const error = events.find((e) => e.type === "Error");
  assert.deepEqual([error.error.kind, error.partial], ["llm_timeout", "Partial"]);
  assert.equal(change.messages.at(-1).interrupted, "llm_timeout");
});

test("cancel aborts the request in flight: llm_cancelled, partial kept", async () => {
  const { engine } = makeEngine();
  // A turn over the Anthropic wire, cancelled at its first chunk.
  const events = [];
  await engine.chat(engine.newChat("chat-c", 1000).handle, { type: "user", content: "Hi" }, chatOptions(profile("anthropic", "fault-stall")), (e) => {
    events.push(e);
    if (e.type === "MessageContent") engine.cancel();
  });
  const error = events.find((e) => e.type === "Error");
  assert.deepEqual([error.error.kind, error.partial], ["llm_cancelled", "Partial"]);
  // Test Connection, cancelled by its scope while the server stalls (5 s) after "Partial".
  const pending = engine.testConnection({ profile: profile("anthropic", "fault-stall"), apiKey: KEY }, "probe-1");
  setTimeout(() => engine.cancel("probe-1"), 1000);
  await assert.rejects(pending, (e) => e.kind === "llm_cancelled" && e.partial === "Partial");
});

test("retries a 429 once through the host's fetch", async () => {
  const { engine } = makeEngine();
  await llm.clearRequests();
  const report = await engine.testConnection({ profile: profile("openai", "fault-429-once"), apiKey: KEY });
  assert.ok(report.reply.length > 0);
  assert.equal((await llm.requests()).length, 2);
});

// ---- Chat tasks (DefaultAgent) ---------------------------------------------------------------

/** A saved chat task holding `n` long turns, and its handle once the engine holds it. */
function longChat(engine, n, id = "chat-1") {
  const { task } = engine.newChat(id, 1000);
  for (let i = 0; i < n; i++) {
    task.conversation.messages.push({
      id: `m${i + 1}`,
      ts: 1000,
      role: i % 2 ? "assistant" : "user",
      content: [{ type: "text", text: `Turn ${i}: ${"the parser drops nested parentheses in grouped expressions; ".repeat(10)}` }],
    });
  }
  return { task, handle: holdChat(engine, JSON.stringify(task)) };
}


test("a chat turn streams agent events and resolves with what changed, the host's copy then the task to save", async () => {
  const { engine, logs } = makeEngine();
  const events = [];
  const created = engine.newChat("chat-1", 1000);
  assert.deepEqual([created.keep, created.messages, created.task.conversation.messages], [0, [], []]);
  const { change, context } = await engine.chat(
    created.handle,
    { type: "user", content: "Why are nested groups dropped?" },
    chatOptions(profile("openai-compatible")),
    (e) => events.push(e),
  );
  assert.deepEqual(eventTypes(events), [
    "ThinkingStart", "UserMessage", "MessageStart", "MessageContent", "MessageEnd", "ThinkingEnd",
  ]);
  const streamed = events.filter((e) => e.type === "MessageContent").map((e) => e.delta).join("");
  assert.equal(change.keep, 0);
  assert.deepEqual(change.task.conversation.messages, [], "the task crosses without its messages");
  const task = applyChange(created.task, change);
  assert.equal(task.conversation.messages.length, 2);
  assert.equal(task.conversation.messages[1].content[0].text, streamed);
  assert.equal(task.title, "Why are nested groups dropped?");
  assert.equal(context.source, "reported");
  assert.equal(context.window, 32000);
  assert.equal(context.threshold_percent, 80);
  // The task is plain JSON: saved and held again from its text (a fresh engine, as after a
  // restart), the next turn continues it and sends back only what it added.
  const { engine: restarted } = makeEngine();
  const next = await restarted.chat(
    holdChat(restarted, JSON.stringify(task)),
    { type: "user", content: "And commas?" },
    chatOptions(profile("anthropic")),
  );
  assert.equal(next.change.keep, 2);
  assert.equal(applyChange(task, next.change).conversation.messages.length, 4);
  assert.ok(!logs.join("\n").includes(KEY));
});

test("a chat past its threshold condenses before the request; undo brings every message back", async () => {
  const { engine, logs } = makeEngine();
  const small = { ...profile("openai-compatible"), context_window: 1400, max_output: 200 };
  const events = [];
  const long = longChat(engine, 12);
  const { change, context } = await engine.chat(long.handle, { type: "user", content: "What is left?" }, chatOptions(small), (e) =>
    events.push(e),
  );
  assert.deepEqual(eventTypes(events).slice(0, 5), [
    "ThinkingStart", "UserMessage", "CondenseStart", "CondenseEnd", "MessageStart",
  ]);
  const end = events.find((e) => e.type === "CondenseEnd");
  assert.equal(end.record.provider_id, "native");
  assert.equal(end.record.reason, "threshold");
  assert.ok(end.record.tokens_after < end.record.tokens_before);
  const task = applyChange(long.task, change);
  assert.equal(task.condensations.length, 1);
  assert.ok(context.tokens < end.record.tokens_before);
  assert.match(logs.join("\n"), /condensed with native \(threshold, automatic\): \d+ → \d+ tokens/);

  const undone = engine.undo(change.handle, "c1", Date.now());
  assert.equal(undone.condense_id, "c1");
  const restored = applyChange(task, undone.change);
  assert.equal(restored.condensations.length, 0);
  assert.ok(restored.conversation.messages.every((m) => !m.condense_parent && !m.is_summary));
  assert.equal(restored.conversation.messages.length, 14);
  assert.throws(() => engine.undo(undone.change.handle, undefined, Date.now()), { kind: "nothing_to_undo" });
  // The status of a chat can be asked for without a turn.
  const status = engine.chatContext(undone.change.handle, chatOptions(small));
  assert.ok(status.percent > 80);
});

test("cancel during a chat turn aborts the fetch; the partial answer is kept and marked", async () => {
  const { engine } = makeEngine();
  const events = [];
  const { change } = await engine.chat(
    engine.newChat("chat-2", 1000).handle,
    { type: "user", content: "Go on" },
    chatOptions(profile("openai-compatible", "fault-stall")),
    (e) => {
      events.push(e);
      if (e.type === "MessageContent") engine.cancel();
    },
  );
  const error = events.find((e) => e.type === "Error");
  assert.equal(error.error.kind, "llm_cancelled");
  assert.equal(error.partial, "Partial");
  const last = change.messages.at(-1);
  assert.equal(last.interrupted, "cancelled");
  assert.equal(last.content[0].text, "Partial");
});

test("cancel with a chat's id stops that chat's turn only", async () => {
  const { engine } = makeEngine();
  const events = [];
  const first = await engine.chat(
    engine.newChat("chat-4", 1000).handle,
    { type: "user", content: "Go on" },
    chatOptions(profile("openai-compatible")),
    (e) => {
      events.push(e);
      // Another chat's Stop must not touch this turn.
      if (e.type === "MessageContent") engine.cancel("chat-other");
    },
  );
  assert.ok(!events.some((e) => e.type === "Error"));
  assert.equal(first.change.messages.at(-1).interrupted, undefined);

  const cut = [];
  const second = await engine.chat(first.change.handle, { type: "user", content: "More" }, chatOptions(profile("openai-compatible")), (e) => {
    cut.push(e);
    if (e.type === "MessageContent") engine.cancel("chat-4");
  });
  assert.equal(cut.find((e) => e.type === "Error").error.kind, "llm_cancelled");
  assert.equal(second.change.messages.at(-1).interrupted, "cancelled");
});

test("bad chat calls are typed errors", async () => {
  const { engine } = makeEngine();
  const { handle, task } = engine.newChat("chat-3", 1000);
  await assert.rejects(engine.chat(handle, { type: "dance" }, chatOptions(profile("openai"))), { kind: "invalid_input" });
  await assert.rejects(
    engine.chat(handle, { type: "user", content: "hi" }, chatOptions(profile("openai"), { auto: { threshold_percent: 150 } })),
    { kind: "invalid_input", message: /threshold/ },
  );
  // A whole task where a handle goes, a missing or ill-typed argument: invalid_input.
  await assert.rejects(engine.chat(task, { type: "user", content: "hi" }, chatOptions(profile("openai"))), { kind: "invalid_input", message: /handle/ });
  assert.throws(() => engine.chatContext(undefined, chatOptions(profile("openai"))), { kind: "invalid_input", message: /handle is missing/ });
  assert.throws(() => engine.pinMessage(handle, "m1"), { kind: "invalid_input" });
  assert.throws(() => engine.undo(handle, 7, Date.now()), { kind: "invalid_input" });
  assert.throws(() => engine.hold("chat", "chat-3", "{}"), { kind: "invalid_input", message: /the chat/ });
  assert.throws(() => engine.hold("chat", "chat-4", JSON.stringify(task)), { kind: "invalid_input", message: /chat-3/ }, "a chat is held under its own id");
  assert.throws(() => engine.hold("dance", "chat-3", JSON.stringify(task)), { kind: "invalid_input" });
  // Refused calls changed nothing: the handle still names the chat.
  assert.doesNotThrow(() => engine.chatContext(handle, chatOptions(profile("openai"))));
});

test("providerEntries: the registry's cards with their forms, and checkSetting judges changes", () => {
  const { engine } = makeEngine();
  const entries = engine.providerEntries();
  assert.deepEqual(entries.map((e) => e.id), ["native", "lossless", "truncation", "manual", "superseded", "mask", "smart"]);
  const truncation = entries.find((e) => e.id === "truncation");
  assert.deepEqual(truncation.schema.map((f) => [f.key, f.kind, f.min, f.max ?? null]), [
    ["keep_last", "integer", 0, null],
    ["target_percent", "integer", 1, 100],
    ["ledger", "boolean", undefined, null],
  ]);
  assert.deepEqual(truncation.config, { keep_last: 3, target_percent: 50, ledger: true });
  const native = entries.find((e) => e.id === "native");
  const prompt = native.schema.find((f) => f.key === "custom_prompt");
  assert.equal(prompt.shared, true);
  assert.match(prompt.default, /Primary request and intent/);

  assert.equal(engine.checkSetting({ setting: "auto_condense", value: { threshold_percent: 60 } }), undefined);
  assert.match(engine.checkSetting({ setting: "auto_condense", value: { threshold_percent: 150 } }), /10 to 100/);
  const keepLast = (n) => ({ setting: "provider", value: { id: "truncation", update: { config: { keep_last: n } } } });
  assert.equal(engine.checkSetting(keepLast(2)), undefined);
  assert.match(engine.checkSetting(keepLast(-1)), /keep_last must be a whole number of 0 or more, got -1/);
  assert.match(engine.checkSetting({ setting: "default_provider", value: "smart9" }), /'smart9' not found/);
  const bad = { ...profile("openai-compatible"), base_url: "127.0.0.1:8080/v1" };
  assert.match(engine.checkSetting({ setting: "profile", value: bad }), /must start with http:\/\/ or https:\/\//);
  assert.throws(() => engine.checkSetting({ setting: "colour", value: 1 }), (e) => e.kind === "invalid_input");
  // Checking changes nothing.
  assert.equal(engine.providerEntries().find((e) => e.id === "truncation").config.keep_last, 3);
});

test("testConnection: latency and the model the server names, or the typed error", async () => {
  const { engine } = makeEngine();
  for (const kind of ["openai-compatible", "anthropic"]) {
    const report = await engine.testConnection({ profile: profile(kind, "fixture-probe"), apiKey: KEY });
    assert.equal(report.model, "fixture-probe");
    assert.ok(report.latencyMs > 0, JSON.stringify(report));
    assert.ok(report.reply.length > 0);
  }
  await assert.rejects(
    engine.testConnection({ profile: profile("openai-compatible"), apiKey: "wrong" }),
    (e) => e.kind === "llm_auth" && !JSON.stringify(e).includes("wrong"),
  );
  await assert.rejects(
    engine.testConnection({ profile: { ...profile("openai-compatible"), base_url: "localhost/v1" } }),
    (e) => e.kind === "llm_config" && /http/.test(e.message),
  );
});

test("previewChat writes the summary once; applyPreview applies it as shown; pins survive; a changed chat refuses the preview", async () => {
  const { engine } = makeEngine();
  const long = longChat(engine, 12);
  const pinnedId = long.task.conversation.messages[3].id;
  const pinned = engine.pinMessage(long.handle, pinnedId, true, Date.now());
  assert.deepEqual(pinned.changed, [pinnedId]);
  assert.equal(pinned.change.keep, 3);
  assert.deepEqual([pinned.change.messages, pinned.change.marks], [[], [{ id: pinnedId, pinned: true }]], "only the pin crosses back, not the message");
  let task = applyChange(long.task, pinned.change);
  let { handle } = pinned.change;
  assert.equal(task.conversation.messages[3].pinned, true);
  await llm.clearRequests();
  const outcome = await engine.preview(handle, chatOptions(profile("openai")));
  assert.equal(outcome.status, "ready", JSON.stringify(outcome.failure));
  const { preview } = outcome;
  assert.equal((await llm.requests()).length, 1);
  assert.equal("result" in preview, false, "the engine keeps the result; it does not cross");
  assert.ok(preview.estimated_cost > 0);
  assert.ok(preview.tokens_after < preview.tokens_before);
  assert.ok(preview.hidden.length > 0 && preview.added.some((m) => m.is_summary));
  assert.ok(!preview.hidden.some((m) => m.id === pinnedId), "the pinned message is not hidden");

  // The chat changed since (a pin): the preview is refused, and kept for the chat it was made of.
  const changed = engine.pinMessage(handle, task.conversation.messages[0].id, true, Date.now());
  assert.throws(() => engine.applyPreview(changed.change.handle, preview.condense_id, Date.now()), { kind: "invalid_input", message: /changed since/ });
  const unpinned = engine.pinMessage(changed.change.handle, task.conversation.messages[0].id, false, Date.now());
  task = applyChange(applyChange(task, changed.change), unpinned.change);
  handle = unpinned.change.handle;
  assert.equal(task.conversation.messages[0].pinned, undefined);

  // Unpinned again, the chat is as the preview saw it: applied as shown, no second request.
  const applied = engine.applyPreview(handle, preview.condense_id, Date.now());
  assert.equal((await llm.requests()).length, 1, "no second request");
  assert.equal(applied.record.condense_id, preview.condense_id);
  assert.equal(applied.record.tokens_before, preview.tokens_before);
  assert.equal(applied.record.tokens_after, preview.tokens_after);
  assert.ok(applied.record.cost > 0, "the summary's cost, spent once, at the preview");
  const after = applyChange(task, applied.change);
  assert.ok(applied.change.keep < task.conversation.messages.length);
  const hidden = new Set(preview.hidden.map((m) => m.id));
  for (const m of after.conversation.messages) {
    if (hidden.has(m.id)) assert.equal(m.condense_parent, preview.condense_id, m.id);
  }
  assert.deepEqual(
    after.conversation.messages.filter((m) => m.is_summary).map((m) => m.id),
    preview.added.filter((m) => m.is_summary).map((m) => m.id),
  );
  assert.deepEqual(after.condensations.map((c) => c.condense_id), [preview.condense_id]);
  const kept = after.conversation.messages.find((m) => m.id === pinnedId);
  assert.ok(kept.pinned && !kept.condense_parent);
  assert.equal(engine.chatContext(applied.change.handle, chatOptions(profile("openai"))).tokens, preview.tokens_after);
  // Applied once: the engine keeps it no more.
  assert.throws(() => engine.applyPreview(applied.change.handle, preview.condense_id, Date.now()), { kind: "invalid_input", message: /no preview/ });
  assert.throws(() => engine.pinMessage(applied.change.handle, "nope", true, Date.now()), { kind: "invalid_input" });
});

test("a preview hands the provider's estimate to onEstimate before the LLM call, then the real figures", async () => {
  const order = [];
  const { engine } = makeEngine({
    fetch: (req, signal) => {
      order.push("fetch");
      return fetch(req.url, { method: req.method, headers: req.headers, body: req.body, signal });
    },
  });
  const { task, handle } = longChat(engine, 12);
  const estimates = [];
  const outcome = await engine.preview(handle, chatOptions(profile("openai")), (estimate) => {
    order.push("estimate");
    estimates.push(estimate);
  });
  assert.equal(outcome.status, "ready", JSON.stringify(outcome.failure));
  assert.deepEqual(order, ["estimate", "fetch"], "the estimate comes before the one LLM request");
  const [estimate] = estimates;
  assert.deepEqual(
    { task_id: estimate.task_id, provider_id: estimate.provider_id, needs: estimate.needs },
    { task_id: task.id, provider_id: "native", needs: "llm" },
  );
  assert.ok(estimate.estimated_cost > 0);
  assert.equal(estimate.estimated_cost, outcome.preview.estimated_cost);
  assert.equal(estimate.tokens_before, outcome.preview.tokens_before);

  // A file's preview too (the task's id is the file's); an LLM-free provider estimates nothing
  // and needs nothing.
  const doc = engine.hold("conversation", "file:///preview.json", task.conversation);
  const file = [];
  const truncated = await engine.preview(doc, { provider: "truncation" }, (e) => file.push(e));
  assert.equal(truncated.status, "ready", JSON.stringify(truncated.failure));
  assert.deepEqual(file, [
    { task_id: "file:///preview.json", provider_id: "truncation", needs: "nothing", tokens_before: truncated.preview.tokens_before, estimated_cost: 0 },
  ]);
  // Applied by its id: the condensed file is the next revision; undone, the file is back.
  const condensed = engine.applyPreview(doc, truncated.preview.condense_id, Date.now()).handle;
  assert.notEqual(condensed.revision, doc.revision);
  assert.equal(engine.heldTokens(condensed), truncated.preview.tokens_after);
  assert.throws(() => engine.applyPreview(condensed, truncated.preview.condense_id, Date.now()), { kind: "invalid_input" });
  const undone = engine.undo(condensed, undefined, Date.now());
  assert.equal(undone.condense_id, truncated.preview.condense_id);
  assert.deepEqual(JSON.parse(engine.heldText(undone.handle)).messages, task.conversation.messages);
  // An unknown provider fails with no estimate to show; a throwing callback does not end the call.
  const none = [];
  const unknown = await engine.preview(undone.handle, { provider: "nope" }, (e) => none.push(e));
  assert.equal(unknown.status, "failed");
  assert.equal(unknown.failure.error.kind, "provider_not_found");
  assert.equal(none.length, 0);
  const thrown = await engine.preview(undone.handle, { provider: "truncation" }, () => {
    throw new Error("the host's bug");
  });
  assert.equal(thrown.status, "ready");
});

test("a manual summary pasted for a chat is previewed without any LLM call, then applied as a condensation with its row", async () => {
  const { engine } = makeEngine();
  const { task, handle } = longChat(engine, 12);
  const request = engine.renderManualRequest(task.conversation, { provider: "manual", model: "gpt-4o" });
  assert.match(request, /Primary request and intent/);
  const answer = "## 1. Primary request\nThe user wants the nested groups fixed.\n\n## 9. Next step\nRun the parser tests.";
  await llm.clearRequests();
  const outcome = await engine.preview(handle, chatOptions(profile("openai"), { provider: "manual", config: { answer } }));
  assert.equal(outcome.status, "ready", JSON.stringify(outcome.failure));
  assert.equal((await llm.requests()).length, 0, "the manual provider calls no LLM");
  const summary = outcome.preview.added.find((m) => m.is_summary);
  assert.ok(summary && summary.text.includes("The user wants the nested groups fixed."), JSON.stringify(outcome.preview.added));
  const applied = engine.applyPreview(handle, outcome.preview.condense_id, Date.now());
  assert.equal(applied.record.provider_id, "manual");
  assert.equal(applyChange(task, applied.change).condensations.length, 1);
  // Without an answer the manual provider refuses, and nothing is applied.
  const none = await engine.preview(applied.change.handle, chatOptions(profile("openai"), { provider: "manual" }));
  assert.equal(none.status, "failed");
});
