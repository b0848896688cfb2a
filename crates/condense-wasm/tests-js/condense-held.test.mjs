// Condensing a held conversation (`condense`) from Node: only the handle and the options cross in,
// the condensed conversation stays in the engine as the next revision, and the host reads it back
// as text (`heldText`) when it writes a file. It must give exactly what the native host
// (`condense run`, the same core) gives for the same conversation: the same figures, metrics,
// ledger and errors, and the same messages. Run: node --test crates/condense-wasm/tests-js/
import { test, before } from "node:test";
import { execFileSync, spawnSync } from "node:child_process";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { repoRoot } from "../../../tests/js/servers.mjs";
import { condenseWhole } from "./held.mjs";

const require = createRequire(import.meta.url);
const { CondenseEngine } = require(path.join(repoRoot, "extension/wasm/condense_wasm.js"));

const makeEngine = () =>
  new CondenseEngine({ fetch: () => Promise.reject(new Error("no network here")), now: () => performance.now(), log: () => {} });

/** A value without the wall-clock durations a run records (they differ run to run). */
const stable = (v) => JSON.parse(JSON.stringify(v, (k, x) => (k === "time_ms" || k === "time_elapsed_ms" ? 0 : x)));

/**
 * A tool-heavy coding chat, the same on every run: instructions, files read again unchanged (for
 * lossless), long results (for mask and truncation), edits, commands with exit codes and errors,
 * todo lists (for the ledger and its probes), a pinned message.
 */
function codingChat(turns) {
  const files = ["src/parser.rs", "src/lexer.rs", "README.md", "tests/parse.rs"];
  const body = (f, v) => Array.from({ length: 40 }, (_, i) => `${i + 1}\t// ${f} v${v}: fn item_${i}() { parse(tokens, ${i}); }`).join("\n");
  const messages = [];
  let id = 0;
  const push = (role, content, extra = {}) => messages.push({ id: `m${++id}`, ts: 1_700_000_000_000 + id, role, content, ...extra });
  for (let t = 0; t < turns; t++) {
    const f = files[t % files.length];
    push("user", [{ type: "text", text: `Turn ${t}: please fix the parser for case ${t}. Never touch Cargo.lock. ${t % 3 === 0 ? "Also keep the public API stable." : ""}` }], t === 5 ? { pinned: true } : {});
    push("assistant", [
      { type: "text", text: `Reading ${f} first.` },
      { type: "tool_use", id: `r${t}`, name: "Read", input: { file_path: f } },
    ]);
    push("user", [{ type: "tool_result", tool_use_id: `r${t}`, content: body(f, Math.floor(t / 8)) }]);
    const calls = [
      { type: "tool_use", id: `e${t}`, name: "Edit", input: { file_path: f, old_string: `case ${t}`, new_string: `case ${t + 1}` } },
      { type: "tool_use", id: `c${t}`, name: "Bash", input: { command: `cargo test -p parser case_${t % 5}` } },
    ];
    if (t % 4 === 1) {
      calls.push({
        type: "tool_use",
        id: `d${t}`,
        name: "TodoWrite",
        input: { todos: [{ content: `Fix case ${t}`, status: "in_progress" }, { content: `Document case ${t}`, status: "pending" }] },
      });
    }
    push("assistant", calls);
    const results = [
      { type: "tool_result", tool_use_id: `e${t}`, content: "The file has been updated." },
      {
        type: "tool_result",
        tool_use_id: `c${t}`,
        content: `running 12 tests\n${"test parse::ok ... ok\n".repeat(30)}${t % 2 ? "error: test failed\nExit code: 101" : "test result: ok. exit code 0"}`,
        is_error: t % 2 === 1,
      },
    ];
    if (t % 4 === 1) results.push({ type: "tool_result", tool_use_id: `d${t}`, content: "Todos updated." });
    push("user", results);
    push("assistant", [{ type: "text", text: `Done with case ${t}: the parser now accepts it.` }]);
  }
  return { format: "context-condenser/conversation@1", system: "You are a careful coding agent.", messages };
}

/** What Cline's chat panel shows, not the conversation: refused, naming the file that is. */
const UI_MESSAGES = "cline-ui_messages.json";

test("Cline's ui_messages.json is refused, naming api_conversation_history.json", () => {
  const text = readFileSync(path.join(repoRoot, "tests/fixtures/sessions", UI_MESSAGES), "utf8");
  const engine = makeEngine();
  assert.throws(() => engine.parseConversation(text), (e) => e.kind === "invalid_input" && /api_conversation_history\.json/.test(e.message));
  assert.throws(() => engine.hold("conversation", "file:///ui_messages.json", text), (e) => e.kind === "invalid_input");
});

const fixtures = [
  ["generated coding chat", JSON.stringify(codingChat(40))],
  ["small session", readFileSync(path.join(repoRoot, "tests/fixtures/small-session.json"), "utf8")],
  ["coding session", readFileSync(path.join(repoRoot, "examples/coding-session.json"), "utf8")],
  // Every session fixture but Cline's ui_messages.json, which the engine refuses (below).
  ...readdirSync(path.join(repoRoot, "tests/fixtures/sessions"))
    .filter((f) => f !== UI_MESSAGES)
    .map((f) => [f, readFileSync(path.join(repoRoot, "tests/fixtures/sessions", f), "utf8")]),
];

/** The calls each conversation is condensed with: every LLM-free provider, with and without a
 *  target, and the ledger off once. */
function calls(tokens) {
  const half = Math.round(tokens / 2);
  return [
    { provider: "lossless" },
    { provider: "mask", targetTokens: half },
    { provider: "mask", config: { keep_results: 1, never_mask: "", keep_per_tool: "", min_tokens: 10, ledger: false } },
    { provider: "truncation", targetTokens: half },
    { provider: "truncation", targetTokens: Math.round(tokens / 5), keepLast: 2 },
    { provider: "smart", targetTokens: Math.round(tokens / 3) },
  ];
}

/** The native CLI, built once. */
let condense;
before(() => {
  execFileSync("cargo", ["build", "--quiet", "-p", "condense-cli"], { cwd: repoRoot, stdio: "inherit" });
  condense = path.join(repoRoot, "target/debug/condense");
});

/** What the native host gives for the conversation `text` and the call: `condense run`'s result
 *  (it exits 1 when the run failed, the result printed all the same). */
function native(text, call) {
  const args = ["run", "--provider", call.provider];
  if (call.targetTokens !== undefined) args.push("--target-tokens", String(call.targetTokens));
  if (call.keepLast !== undefined) args.push("--keep-last", String(call.keepLast));
  const run = spawnSync(condense, [...args, "-"], { input: text, encoding: "utf8", maxBuffer: 1 << 28 });
  assert.ok(run.status === 0 || run.status === 1, `condense ${args.join(" ")}: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

test("condensing a held conversation gives what the native host gives for it", async () => {
  const engine = makeEngine();
  let ran = 0;
  let failed = 0;
  for (const [name, text] of fixtures) {
    const conversation = engine.parseConversation(text);
    const tokens = engine.countTokens(conversation, "gpt-4o").total_tokens;
    // The CLI takes no provider configuration: the calls that set one are held only (below).
    for (const call of calls(tokens).filter((c) => c.config === undefined)) {
      const what = `${name}, ${JSON.stringify(call)}`;
      const whole = { ...native(text, call), system: conversation.system };
      const handle = engine.hold("conversation", `file:///${name}`, text);
      const held = await engine.condense(handle, { ...call, model: "gpt-4o" });
      const { messages, system, tools: _tools, ...figures } = whole;
      const { handle: next, ...heldFigures } = held;
      assert.deepEqual(stable(heldFigures), stable(figures), what);
      if (whole.error) {
        failed++;
        // Nothing changed: the same revision, the same conversation.
        assert.deepEqual(next, handle, what);
        assert.deepEqual(JSON.parse(engine.heldText(next)), conversation, what);
        continue;
      }
      ran++;
      assert.equal(next.id, handle.id, what);
      assert.notEqual(next.revision, handle.revision, what);
      // The engine holds the condensed conversation: the native result's messages, the file's
      // system prompt and tool definitions.
      const kept = JSON.parse(engine.heldText(next));
      assert.deepEqual(kept.messages, messages, what);
      assert.equal(kept.system, system, what);
      assert.deepEqual(kept.tools, conversation.tools, what);
      assert.equal(engine.heldTokens(next, "gpt-4o"), whole.new_context_tokens, what);
      // The handle it was condensed from is gone (a handle names one revision).
      await assert.rejects(engine.condense(handle, call), { kind: "unknown_task" }, what);
    }
  }
  // Both sides of the comparison were exercised.
  assert.ok(ran >= fixtures.length * 2, `${ran} runs applied`);
  assert.ok(failed >= 1, `${failed} runs failed`);
});

test("a held conversation condensed twice equals the whole result condensed again", async () => {
  const engine = makeEngine();
  const text = JSON.stringify(codingChat(30));
  const tokens = engine.heldTokens(engine.hold("conversation", "file:///twice.json", text), "gpt-4o");
  let handle = engine.hold("conversation", "file:///twice.json", text);
  let whole = engine.parseConversation(text);
  for (const call of [{ provider: "mask", targetTokens: Math.round(tokens * 0.7) }, { provider: "truncation", targetTokens: Math.round(tokens * 0.4) }]) {
    const result = await condenseWhole(engine, whole, call);
    const held = await engine.condense(handle, call);
    assert.equal(held.error ?? null, null, JSON.stringify(held.error));
    assert.equal(held.new_context_tokens, result.new_context_tokens);
    assert.deepEqual(stable(held.metrics), stable(result.metrics));
    whole = engine.parseConversation(result);
    handle = held.handle;
    assert.deepEqual(JSON.parse(engine.heldText(handle)), whole);
  }
  // The text is the file: held again, it undoes as the held revision does, and as the whole
  // result held does.
  const condensed = engine.heldText(handle);
  const undone = engine.undo(handle, undefined, Date.now());
  const fromText = engine.undo(engine.hold("conversation", "file:///twice-text.json", condensed), undefined, Date.now());
  const fromWhole = engine.undo(engine.hold("conversation", "file:///twice-whole.json", whole), undefined, Date.now());
  assert.equal(undone.condense_id, "c2");
  for (const other of [fromText, fromWhole]) {
    assert.equal(other.condense_id, undone.condense_id);
    assert.equal(engine.heldText(other.handle), engine.heldText(undone.handle));
  }
  // Undone once more, the first condensation goes too: the file as it was.
  assert.deepEqual(JSON.parse(engine.heldText(engine.undo(undone.handle, undefined, Date.now()).handle)), engine.parseConversation(text));
});

test("condense refuses an unknown handle and a held chat; preview reads a chat's options", async () => {
  const engine = makeEngine();
  await assert.rejects(engine.condense({ id: "nobody", revision: 1 }, { provider: "lossless" }), { kind: "unknown_task" });
  assert.throws(() => engine.heldText({ id: "nobody", revision: 1 }), { kind: "unknown_task" });
  const chat = engine.newChat("chat-x", 1000).handle;
  await assert.rejects(engine.condense(chat, { provider: "lossless" }), { kind: "invalid_input" });
  assert.throws(() => engine.heldText(chat), { kind: "invalid_input" });
  // `undo` names chats and files alike: a new chat has nothing to undo.
  assert.throws(() => engine.undo(chat, undefined, Date.now()), { kind: "nothing_to_undo" });
  // A chat's preview takes a chat's options (its model, the time): a file's are refused.
  await assert.rejects(engine.preview(chat, { provider: "lossless" }), { kind: "invalid_input", message: /llm|nowMs/ });
  // A provider the registry does not know is a bad call, as for `condense`.
  const doc = engine.hold("conversation", "file:///x.json", JSON.stringify(codingChat(3)));
  await assert.rejects(engine.condense(doc, { provider: "nope" }), { kind: "provider_not_found" });
  await assert.rejects(condenseWhole(engine, engine.parseConversation(engine.heldText(doc)), { provider: "nope" }), { kind: "provider_not_found" });
});
