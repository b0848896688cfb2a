// The wasm engine (as the extension loads it) against the hostile modes of the fixture server on
// 127.0.0.1: an echoed key, an endless stream, a drip, a 500 whose body drips, a server that never
// sends its headers, an endless line, malformed JSON in the stream (carrying the key), a huge error
// body, an HTML page; the echo and the endless stream over the Anthropic wire too. Each ends
// typed and bounded (the call settles, and for the modes that would go on for ever the server saw
// the connection closed), and the key is nowhere in what the engine hands back or logs.
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

for (const [model, extra, kind, says, endless, wire = "openai"] of cases) {
  test(`${wire} ${model}: ${kind}, bounded, no key`, async () => {
    const logs = [];
    const chunks = [];
    const heapBefore = process.memoryUsage().rss;
    const profileKind = wire === "anthropic" ? "anthropic" : "openai-compatible";
    const error = await engine(logs)
      .stream(target(model, extra, profileKind), bundle, (c) => chunks.push(c))
      .then(() => assert.fail("the call should fail"), (e) => e);
    assert.equal(error.kind, kind, error.message);
    assert.match(error.message, says);
    const everything = JSON.stringify({ message: error.message, partial: error.partial, chunks, logs });
    assert.ok(!everything.includes(KEY), `${model} leaked the key`);
    // Bounded: far below what an unbounded read of these servers reaches (hundreds of MB).
    assert.ok(process.memoryUsage().rss - heapBefore < 200 * 1024 * 1024, "memory grew past 200 MB");
    if (endless) await serverSawItClosed(model, wire);
  });
}

test("malformed JSON in the stream ends typed, with the text before it kept", async () => {
  const chunks = [];
  const error = await engine([])
    .stream(target("hostile-malformed"), bundle, (c) => chunks.push(c.content ?? ""))
    .then(() => assert.fail("the call should fail"), (e) => e);
  assert.equal(error.kind, "llm_malformed_stream");
  assert.equal(error.partial, "Partial answer");
  assert.equal(chunks.join(""), "Partial answer");
});

test("the text of an echoing stream arrives with the key redacted", async () => {
  const chunks = [];
  await engine([])
    .stream(target("hostile-echo-stream"), bundle, (c) => chunks.push(c.content))
    .catch(() => {});
  assert.equal(chunks.join(""), "You sent the key [redacted], and nothing else.");
});
