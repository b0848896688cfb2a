// The wasm engine (as the extension loads it) against the hostile modes of the fixture server on
// 127.0.0.1: an echoed key, an endless stream, a drip, an endless line, a huge error body, an HTML
// page. Each ends typed, in bounded time, and the key is nowhere in what the engine hands back or
// logs. Run: node --test crates/condense-wasm/tests-js/
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

const target = (model, extra = {}) => ({
  profile: {
    id: "hostile",
    kind: "openai-compatible",
    base_url: `${llm.origin}/v1`,
    model,
    context_window: 32000,
    max_output: 200,
    ...extra,
  },
  apiKey: KEY,
  maxRetries: 0,
});

const bundle = { request: "hello?" };

const cases = [
  ["hostile-echo-key", {}, "llm_auth", /Incorrect API key provided: \[redacted\]/],
  ["hostile-echo-stream", {}, "llm_server", /\[redacted\] is revoked/],
  ["hostile-endless", {}, "llm_response_too_large", /200 tokens asked for/],
  ["hostile-drip", { deadline_secs: 2 }, "llm_timeout", /deadline of 2 s/],
  ["hostile-endless-line", {}, "llm_response_too_large", /without an end/],
  ["hostile-huge-error", {}, "llm_server", /eeee/],
  ["hostile-html", {}, "llm_malformed_stream", /HTML page, not an event stream/],
];

for (const [model, extra, kind, says] of cases) {
  test(`${model}: ${kind}, bounded, no key`, async () => {
    const logs = [];
    const chunks = [];
    const heapBefore = process.memoryUsage().rss;
    const error = await engine(logs)
      .stream(target(model, extra), bundle, (c) => chunks.push(c))
      .then(() => assert.fail("the call should fail"), (e) => e);
    assert.equal(error.kind, kind, error.message);
    assert.match(error.message, says);
    const everything = JSON.stringify({ message: error.message, partial: error.partial, chunks, logs });
    assert.ok(!everything.includes(KEY), `${model} leaked the key`);
    // Bounded: far below what an unbounded read of these servers reaches (hundreds of MB).
    assert.ok(process.memoryUsage().rss - heapBefore < 200 * 1024 * 1024, "memory grew past 200 MB");
  });
}

test("the text of an echoing stream arrives with the key redacted", async () => {
  const chunks = [];
  await engine([])
    .stream(target("hostile-echo-stream"), bundle, (c) => chunks.push(c.content))
    .catch(() => {});
  assert.equal(chunks.join(""), "You sent the key [redacted], and nothing else.");
});
