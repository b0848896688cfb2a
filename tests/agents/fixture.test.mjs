// The fixture server's own parts the agent tests rely on, without any client: the Responses API,
// the scripted agent's refusals, the prompt-cache usage and the raw request bytes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startFixtureLlm } from "../js/servers.mjs";

let llm;
let dir;
before(async () => {
  llm = await startFixtureLlm({ apiKey: "k" });
  dir = mkdtempSync(path.join(os.tmpdir(), "fixture-agent-"));
});
after(async () => {
  await llm.stop();
  rmSync(dir, { recursive: true, force: true });
});

const post = (p, body, headers = { authorization: "Bearer k" }) =>
  fetch(llm.origin + p, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });

function sse(text) {
  return text
    .split("\n\n")
    .filter((e) => e.trim())
    .map((e) => ({ event: /^event: (.*)$/m.exec(e)?.[1], data: JSON.parse(/^data: (.*)$/m.exec(e)[1]) }));
}

test("Responses: a stream of the documented events, usage with cached tokens from the session's previous prompt", async () => {
  const body = { model: "fixture", input: [{ role: "user", content: [{ type: "input_text", text: "hello" }] }], stream: true, prompt_cache_key: "s1" };
  await (await post("/v1/responses", body)).text();
  const events = sse(await (await post("/v1/responses", body)).text());
  const types = events.map((e) => e.event);
  assert.deepEqual(types.slice(0, 4), ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]);
  assert.ok(types.includes("response.output_text.delta"));
  assert.deepEqual(types.slice(-3), ["response.content_part.done", "response.output_item.done", "response.completed"]);
  for (const e of events) assert.equal(e.data.type, e.event);
  assert.deepEqual(events.map((e) => e.data.sequence_number), events.map((_, i) => i));
  const text = events.filter((e) => e.event === "response.output_text.delta").map((e) => e.data.delta).join("");
  const done = events.at(-1).data.response;
  assert.equal(done.output[0].content[0].text, text);
  assert.equal(done.status, "completed");
  assert.ok(done.usage.input_tokens > 0);
  assert.equal(done.usage.input_tokens_details.cached_tokens, done.usage.input_tokens, "the same prompt again: all of it cached");
  const json = await (await post("/responses", { ...body, stream: false })).json();
  assert.equal(json.object, "response");
  assert.equal(json.output[0].content[0].text, text);
  assert.equal((await post("/v1/responses", body, {})).status, 401);
});

test("scripted agent: a function call in the Responses shape, then the final answer; a clear 400 when no tool fits", async () => {
  const file = path.join(dir, "f.txt");
  writeFileSync(file, "MARKER: m-123\n");
  const tools = [{ type: "function", name: "exec_command", parameters: { type: "object", properties: { cmd: { type: "string" } }, required: ["cmd"] } }];
  const input = [{ role: "user", content: [{ type: "input_text", text: `Read ${file}.` }] }];
  const first = await (await post("/v1/responses", { model: "script-agent-1", input, tools })).json();
  const call = first.output.find((o) => o.type === "function_call");
  assert.equal(call.name, "exec_command");
  assert.match(JSON.parse(call.arguments).cmd, /^sed -n '1,500p' /);
  const output = "MARKER: m-123";
  const second = await (
    await post("/v1/responses", { model: "script-agent-1", tools, input: [...input, call, { type: "function_call_output", call_id: call.call_id, output }] })
  ).json();
  assert.match(second.output[0].content[0].text, /done after 1 tool rounds.*Markers seen: m-123/);

  const none = await post("/v1/chat/completions", { model: "script-agent", messages: [{ role: "user", content: `Read ${file}` }], tools: [{ type: "function", function: { name: "paint", parameters: {} } }] });
  assert.equal(none.status, 400);
  assert.match((await none.json()).error.message, /no read or shell tool among the declared tools \(paint\)/);
  const nofile = await post("/v1/messages", { model: "script-agent", max_tokens: 10, messages: [{ role: "user", content: "Read nothing" }], tools: [{ name: "Read", input_schema: {} }] }, { "x-api-key": "k", "anthropic-version": "2023-06-01" });
  assert.equal(nofile.status, 400);
  assert.match((await nofile.json()).error.message, /no absolute path of an existing file/);
});

test("scripted agent, recall variant: once a request names a recall file, one read of it, then the rounds go on", async () => {
  const file = path.join(dir, "task.txt");
  writeFileSync(file, "MARKER: m-456\n");
  const recall = path.join(dir, "recall", "r1.md");
  const tools = [{ name: "Read", input_schema: { type: "object", properties: { file_path: { type: "string" }, offset: { type: "number" }, limit: { type: "number" } }, required: ["file_path"] } }, { name: "Bash", input_schema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] } }];
  const headers = { "x-api-key": "k", "anthropic-version": "2023-06-01" };
  const ask = async (messages) => (await post("/v1/messages", { model: "script-agent-2-recall", max_tokens: 100, tools, messages }, headers)).json();
  const task = { role: "user", content: `Read ${file}.` };
  const first = (await ask([task])).content.find((b) => b.type === "tool_use");
  assert.equal(first.input.file_path, file, "no recall line yet: round 0");
  const result = (id) => ({ role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "MARKER: m-456" }] });
  const condensed = { role: "user", content: [{ type: "text", text: `[Context Condenser: the earlier conversation, condensed]\nThe hidden messages are in ${recall}; read that file with your file tool if you need them.` }] };
  const history = [task, condensed, { role: "assistant", content: [first] }, result(first.id)];
  const second = (await ask(history)).content.find((b) => b.type === "tool_use");
  assert.deepEqual(second.input, { file_path: recall, offset: 1, limit: 40 });
  assert.notEqual(second.id, first.id);
  const third = (await ask([...history, { role: "assistant", content: [second] }, result(second.id)])).content.find((b) => b.type === "tool_use");
  assert.match(third.input.command, /^grep -n MARKER /, "read once; round 1 (the grep) next");
  assert.notEqual(third.id, second.id);
});

test("every request's exact bytes are kept", async () => {
  await llm.clearRequests();
  const raw = '{"model":"fixture",  "input":"x\\u00e9"}';
  await (await post("/v1/responses", raw)).text();
  const [req] = await llm.requests();
  assert.equal(req.bytes, Buffer.byteLength(raw));
  assert.equal(req.url, "/v1/responses");
  const back = Buffer.from(await (await fetch(`${llm.origin}/requests/0/raw`)).arrayBuffer());
  assert.equal(back.toString("utf8"), raw);
  assert.equal((await fetch(`${llm.origin}/requests/1/raw`)).status, 404);
});

// Anthropic's prompt cache as the fixture bills it (its module documentation): what the
// gateway's books are checked against in `crates/condense-cli/tests/gateway.rs`.
const anthropic = (body, now) =>
  post("/v1/messages", { max_tokens: 16, ...body }, { "x-api-key": "k", "anthropic-version": "2023-06-01", ...(now === undefined ? {} : { "x-fixture-now-ms": String(now) }) }).then((r) => r.json()).then((m) => m.usage);
const block = (text, ttl) => ({ type: "text", text, ...(ttl ? { cache_control: ttl === "1h" ? { type: "ephemeral", ttl: "1h" } : { type: "ephemeral" } } : {}) });
const words = (n, tag) => Array.from({ length: n }, (_, i) => `${tag}${i}`).join(" ");

test("Anthropic cache: a breakpoint writes its prefix, the next request reads it, the 1-hour part at its own count", async () => {
  const system = [block(words(1500, "s"), "1h")];
  const first = await anthropic({ model: "claude-sonnet-4-5", system, messages: [{ role: "user", content: [block(words(400, "a"), "5m")] }] }, 1_000_000);
  assert.equal(first.cache_read_input_tokens, 0);
  assert.ok(first.cache_creation.ephemeral_1h_input_tokens > 1024, JSON.stringify(first));
  assert.ok(first.cache_creation.ephemeral_5m_input_tokens > 0);
  assert.equal(first.cache_creation_input_tokens, first.cache_creation.ephemeral_1h_input_tokens + first.cache_creation.ephemeral_5m_input_tokens);
  const messages = [{ role: "user", content: [block(words(400, "a"))] }, { role: "assistant", content: "ok" }, { role: "user", content: [block("next", "5m")] }];
  const second = await anthropic({ model: "claude-sonnet-4-5", system, messages }, 1_060_000);
  assert.equal(second.cache_read_input_tokens, first.cache_creation_input_tokens, JSON.stringify(second));
  // Ten minutes on, only the 1-hour prefix is alive.
  const later = await anthropic({ model: "claude-sonnet-4-5", system, messages }, 1_660_000);
  assert.equal(later.cache_read_input_tokens, first.cache_creation.ephemeral_1h_input_tokens, JSON.stringify(later));
});

test("Anthropic cache: no read beyond 20 blocks back from a breakpoint, nothing cached below the model's minimum", async () => {
  const head = [{ role: "user", content: [block(words(1200, "h"), "5m")] }];
  await anthropic({ model: "claude-sonnet-4-5", messages: head }, 2_000_000);
  const many = Array.from({ length: 25 }, (_, i) => ({ role: i % 2 ? "user" : "assistant", content: [block(`turn ${i}`)] }));
  many.at(-1).content[0].cache_control = { type: "ephemeral" };
  const far = await anthropic({ model: "claude-sonnet-4-5", messages: [{ role: "user", content: [block(words(1200, "h"))] }, ...many] }, 2_001_000);
  assert.equal(far.cache_read_input_tokens, 0, "the written prefix is 25 blocks before the only breakpoint");
  const small = [{ role: "user", content: [block(words(300, "m"), "5m")] }];
  const a = await anthropic({ model: "claude-opus-4-6", messages: small }, 3_000_000);
  const b = await anthropic({ model: "claude-opus-4-6", messages: small }, 3_001_000);
  assert.deepEqual([a.cache_creation_input_tokens, b.cache_read_input_tokens], [0, 0], "below Opus 4.6's 4,096 tokens");
  assert.ok(b.input_tokens > 0);
});
