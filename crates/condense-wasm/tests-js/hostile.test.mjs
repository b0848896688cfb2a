// The wasm engine (as the extension loads it) against the hostile modes of the fixture server on
// 127.0.0.1: an echoed key, an endless stream, a drip, a 500 whose body drips, a server that never
// sends its headers, an endless line, malformed JSON in the stream (carrying the key), a huge error
// body, an HTML page; the echo and the endless stream over the Anthropic wire too. Each ends
// typed and bounded (the call settles, and for the modes that would go on for ever the server saw
// the connection closed), and the key is nowhere in what the engine hands back or logs. Every
// case runs twice: as a chat turn (the text streamed as events, the failure an `Error` event)
// and as Test Connection (a rejection with the typed error), the two ways an LLM call is made.
// Run: node --test crates/condense-wasm/tests-js/
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import path from "node:path";
import { repoRoot, startFixtureLlm } from "../../../tests/js/servers.mjs";

const require = createRequire(import.meta.url);
const { CondenseEngine } = require(path.join(repoRoot, "extension/wasm/condense_wasm.js"));
const KEY = "sk-hostile-node-canary-0123456789";

let llm;
before(async () => {
  llm = await startFixtureLlm({ apiKey: KEY });
});
after(async () => {
  await llm?.stop();
});

function engine(logs) {
  return new CondenseEngine({
    fetch: (req, signal) => fetch(req.url, { method: req.method, headers: req.headers, body: req.body, signal }),
    now: () => performance.now(),
    log: (level, message) => logs.push(`${level} ${message}`),
    readTimeoutMs: 5000,
  });
}

const target = (model, extra = {}, kind = "openai-compatible") => ({
  profile: {
    id: "hostile",
    kind,
    base_url: kind === "anthropic" ? llm.origin : `${llm.origin}/v1`,
    model,
    context_window: 32000,
    max_output: 200,
    ...extra,
  },
  apiKey: KEY,
  maxRetries: 0,
});

const bundle = { request: "hello?" };

/** Waits until the server saw the client close its last `mode` request over `wire` (GET
 *  /hostile). A hang guard, not a timing claim: a client that never closes fails here. */
async function serverSawItClosed(mode, wire) {
  let last;
  for (let i = 0; i < 1200; i++) {
    const all = await (await fetch(`${llm.origin}/hostile`)).json();
    last = all.findLast((e) => e.mode === mode && e.wire === wire);
    if (last?.closed) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`hang guard: the server never saw the ${wire} ${mode} request closed (last: ${JSON.stringify(last)})`);
}

// [model, profile fields, kind, what the message says, whether the server must see the client
// close (the modes that would go on for ever), the wire]
const cases = [
  ["hostile-echo-key", {}, "llm_auth", /Incorrect API key provided: \[redacted\]/, false],
  ["hostile-echo-stream", {}, "llm_server", /\[redacted\] is revoked/, false],
  ["hostile-endless", {}, "llm_response_too_large", /200 tokens asked for/, true],
  ["hostile-drip", { deadline_secs: 2 }, "llm_timeout", /deadline of 2 s/, true],
  // The read timeout (5 s) would not end these: the body's bytes keep coming, and fetch waits for
  // headers far longer. The deadline (2 s) does.
  ["hostile-drip-error", { deadline_secs: 2 }, "llm_timeout", /deadline of 2 s: stopped while reading the body of the server's 500 error/, true],
  ["hostile-stall-headers", { deadline_secs: 2 }, "llm_timeout", /deadline of 2 s: stopped while waiting for the server to answer/, true],
  ["hostile-endless-line", {}, "llm_response_too_large", /without an end/, true],
  ["hostile-malformed", {}, "llm_malformed_stream", /\[redacted\]/, false],
  ["hostile-huge-error", {}, "llm_server", /eeee/, true],
  ["hostile-html", {}, "llm_malformed_stream", /HTML page, not an event stream/, false],
  ["hostile-echo-key", {}, "llm_auth", /invalid x-api-key: \[redacted\]/, false, "anthropic"],
  ["hostile-endless", {}, "llm_response_too_large", /200 tokens asked for/, true, "anthropic"],
];

/** Runs `model` the two ways an LLM call can be asked for: a chat turn (its text streamed as
 *  `MessageContent` events, its failure an `Error` event with the partial text, the partial
 *  answer kept in the chat) and Test Connection (rejects with the typed error and `partial`).
 *  Resolves with the error, the partial text, the streamed text and everything the engine handed
 *  back, for the key check. */
async function run(how, logs, llmTarget) {
  const e = engine(logs);
  if (how === "testConnection") {
    const error = await e.testConnection(llmTarget).then(() => assert.fail("the call should fail"), (x) => x);
    return { kind: error.kind, message: error.message, partial: error.partial, streamed: "", everything: [error.message, error.partial, error] };
  }
  const events = [];
  const { handle } = e.newChat("hostile-chat", 0);
  const step = await e.chat(handle, { type: "user", content: bundle.request }, { llm: llmTarget, nowMs: 1 }, (x) => events.push(x));
  const error = events.find((x) => x.type === "Error");
  assert.ok(error, `an Error event: ${JSON.stringify(events).slice(0, 500)}`);
  const streamed = events.filter((x) => x.type === "MessageContent").map((x) => x.delta).join("");
  return { kind: error.error.kind, message: error.error.message, partial: error.partial, streamed, everything: [events, step] };
}

for (const how of ["chat", "testConnection"]) {
  for (const [model, extra, kind, says, endless, wire = "openai"] of cases) {
    test(`${how}: ${wire} ${model}: ${kind}, bounded, no key`, async () => {
      const logs = [];
      const heapBefore = process.memoryUsage().rss;
      const profileKind = wire === "anthropic" ? "anthropic" : "openai-compatible";
      const out = await run(how, logs, target(model, extra, profileKind));
      assert.equal(out.kind, kind, out.message);
      // A chat turn asks for the profile's max_output (200); Test Connection's probe for 8.
      assert.match(out.message, new RegExp(says.source.replace("200 tokens", how === "chat" ? "200 tokens" : "8 tokens")));
      const everything = JSON.stringify({ everything: out.everything, logs });
      assert.ok(!everything.includes(KEY), `${model} leaked the key`);
      // Bounded: far below what an unbounded read of these servers reaches (hundreds of MB).
      assert.ok(process.memoryUsage().rss - heapBefore < 200 * 1024 * 1024, "memory grew past 200 MB");
      if (endless) await serverSawItClosed(model, wire);
    });
  }
}

test("malformed JSON in the stream ends typed, with the text before it kept", async () => {
  const chat = await run("chat", [], target("hostile-malformed"));
  assert.equal(chat.kind, "llm_malformed_stream");
  assert.equal(chat.partial, "Partial answer");
  assert.equal(chat.streamed, "Partial answer");
  // The chat keeps the partial answer, marked with the error's kind.
  const [, step] = chat.everything;
  const answer = step.change.messages.at(-1);
  assert.deepEqual([answer.role, answer.interrupted, answer.content[0].text], ["assistant", "llm_malformed_stream", "Partial answer"]);
  const probe = await run("testConnection", [], target("hostile-malformed"));
  assert.equal(probe.kind, "llm_malformed_stream");
  assert.equal(probe.partial, "Partial answer");
});

test("the text of an echoing stream arrives with the key redacted", async () => {
  const chat = await run("chat", [], target("hostile-echo-stream"));
  assert.equal(chat.streamed, "You sent the key [redacted], and nothing else.");
  assert.equal(chat.partial, chat.streamed);
  const probe = await run("testConnection", [], target("hostile-echo-stream"));
  assert.equal(probe.partial, "You sent the key [redacted], and nothing else.");
});
