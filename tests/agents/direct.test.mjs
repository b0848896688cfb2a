// The real agent CLIs, fully offline, against the fixture LLM server's scripted agent
// (tests/servers/fixture_llm.py, model `script-agent-N`): Claude Code (`claude -p`, Anthropic
// Messages), Codex (`codex exec`, OpenAI Responses), Cline (`cline --json`, OpenAI Chat
// Completions) and Gemini CLI (`gemini -p`, the Gemini API's streamGenerateContent) each run N
// rounds of tool calls they really execute (reading a 216 KB file in slices, running grep/wc in a
// shell) and then print the server's final answer, which names the marker the file read
// revealed. No gateway yet: this is the direct path a gateway will sit in.
//
// The CLIs come from scripts/setup-agents (pinned npm versions, cached); CONDENSE_AGENTS_BIN may
// name their folder instead. Each runs as clients.mjs runs it (the same runs gateway.test.mjs puts
// the gateway in): a temporary HOME and workspace, its own process group, every proxy variable
// pointing at a closed local port so anything besides 127.0.0.1 fails at once.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { startFixtureLlm } from "../js/servers.mjs";
import { agentsBin, closedPort, explain, runClaude, runCline, runCodex, runGemini, workspace } from "./clients.mjs";

const ROUNDS = 4;
const MODEL = `script-agent-${ROUNDS}`;
const KEY = "sk-agent-test-key";
const PROMPT = (w) => `Read the file ${w.file} and tell me its marker.`;

let bin;
let deadProxy;
const scratch = [];

before(async () => {
  bin = agentsBin();
  deadProxy = `http://127.0.0.1:${await closedPort()}`;
});

after(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** Texts of the tool results a request carries, per wire format. */
function toolResults(req) {
  const b = req.body;
  const text = (c) => (typeof c === "string" ? c : Array.isArray(c) ? c.map(text).join("\n") : c && typeof c === "object" ? (typeof c.text === "string" ? c.text : text(c.content ?? c.output ?? "")) : "");
  if (Array.isArray(b.input)) return b.input.filter((i) => i.type === "function_call_output").map((i) => text(i.output));
  // Gemini: functionResponse parts, their response {output} (or {error}).
  if (Array.isArray(b.contents)) return b.contents.flatMap((c) => c.parts ?? []).filter((p) => p.functionResponse).map((p) => text(p.functionResponse.response) || JSON.stringify(p.functionResponse.response));
  const out = [];
  for (const m of b.messages ?? []) {
    if (m.role === "tool") out.push(text(m.content));
    if (m.role === "user" && Array.isArray(m.content)) for (const c of m.content) if (c.type === "tool_result") out.push(text(c.content));
  }
  return out;
}

function toolNames(req) {
  return (req.body.tools ?? []).flatMap((t) => (t.functionDeclarations ? t.functionDeclarations.map((f) => f.name) : [t.name ?? t.function?.name ?? t.type]));
}

/** The model a request asks for: its body's `model`, else (Gemini) the one in its path. */
function modelOf(req) {
  return req.body?.model ?? /\/models\/([^/:]+):/.exec(req.path)?.[1];
}

/** Checks the rounds the server saw and reports the request sizes. */
function checkRounds(t, requests, { path: wirePath, marker, file }) {
  const turns = requests.filter((r) => r.path === wirePath && modelOf(r) === MODEL);
  assert.ok(turns.length >= ROUNDS + 1, `expected ≥ ${ROUNDS + 1} ${wirePath} requests, saw ${turns.length}`);
  const last = turns.at(-1);
  const results = toolResults(last);
  assert.ok(results.length >= ROUNDS, `the last request carries ${results.length} tool results, expected ≥ ${ROUNDS}`);
  const all = results.join("\n");
  assert.ok(all.includes(`MARKER: ${marker}`), "a tool result holds the marker line: the client really read the file");
  const wc = new RegExp(`\\d+ ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`);
  assert.ok(wc.test(all), "a tool result holds wc's output: the client really ran the command");
  t.diagnostic(`${turns.length} requests to ${wirePath}, bytes: ${turns.map((r) => r.bytes).join(", ")}`);
  t.diagnostic(`tools declared (${toolNames(turns[0]).length}): ${toolNames(turns[0]).join(", ")}`);
  const others = requests.filter((r) => !turns.includes(r));
  if (others.length) t.diagnostic(`other requests: ${others.map((r) => `${r.url} (${r.bytes} B)`).join(", ")}`);
  return turns;
}

test("Claude Code (claude -p) runs its tool loop offline against the scripted agent", async (t) => {
  const w = workspace(scratch, "claude");
  const llm = await startFixtureLlm({ apiKey: KEY });
  try {
    const { result } = await runClaude({ bin, deadProxy, w, baseUrl: llm.origin, key: KEY, model: MODEL, prompt: PROMPT(w) });
    assert.equal(result.code, 0, explain(result));
    assert.match(result.stdout, new RegExp(`Scripted agent done after ${ROUNDS} tool rounds.*Markers seen: ${w.marker}`), explain(result));
    const requests = await llm.requests();
    const turns = checkRounds(t, requests, { path: "/v1/messages", marker: w.marker, file: w.file });
    assert.equal(turns[0].url, "/v1/messages?beta=true");
    const session = turns[0].headers["x-claude-code-session-id"];
    assert.ok(session, "Claude Code names its session in x-claude-code-session-id");
    assert.equal(JSON.parse(turns[0].body.metadata.user_id).session_id, session, "and inside metadata.user_id");
    for (const r of turns) assert.equal(r.headers["x-claude-code-session-id"], session, "one session for the whole run");
    assert.ok(toolNames(turns[0]).includes("Read") && toolNames(turns[0]).includes("Bash"));
    t.diagnostic(`claude: ${result.ms} ms; session ${session} (header and metadata.user_id)`);
  } finally {
    await llm.stop();
  }
});

test("Codex (codex exec) runs its tool loop offline against the scripted agent (Responses API)", async (t) => {
  const w = workspace(scratch, "codex");
  const llm = await startFixtureLlm({ apiKey: KEY });
  try {
    const { result } = await runCodex({ bin, deadProxy, w, baseUrl: `${llm.origin}/v1`, key: KEY, model: MODEL, prompt: PROMPT(w) });
    assert.equal(result.code, 0, explain(result));
    assert.match(result.stdout, new RegExp(`Scripted agent done after ${ROUNDS} tool rounds.*Markers seen: ${w.marker}`), explain(result));
    const requests = await llm.requests();
    const turns = checkRounds(t, requests, { path: "/v1/responses", marker: w.marker, file: w.file });
    const key = turns[0].body.prompt_cache_key;
    assert.ok(key, "Codex sends its session id as prompt_cache_key");
    for (const r of turns) assert.equal(r.body.prompt_cache_key, key, "one prompt_cache_key for the whole run");
    assert.equal(turns[0].headers["session-id"], key, "and the same id in the session-id header");
    assert.ok(toolNames(turns[0]).includes("exec_command"));
    t.diagnostic(`codex: ${result.ms} ms; prompt_cache_key ${key}`);
  } finally {
    await llm.stop();
  }
});

test("Cline (cline --json) runs its tool loop offline against the scripted agent (Chat Completions)", async (t) => {
  const w = workspace(scratch, "cline");
  const llm = await startFixtureLlm({ apiKey: KEY });
  try {
    // `auth`, then the run; the answer is the run_result event's `finishReason: text`.
    const { result, answer } = await runCline({ bin, deadProxy, w, baseUrl: `${llm.origin}/v1`, key: KEY, model: MODEL, prompt: PROMPT(w) });
    assert.equal(result.code, 0, explain(result));
    assert.match(answer, new RegExp(`^completed: Scripted agent done after ${ROUNDS} tool rounds.*Markers seen: ${w.marker}`), explain(result));
    const requests = await llm.requests();
    const turns = checkRounds(t, requests, { path: "/v1/chat/completions", marker: w.marker, file: w.file });
    assert.ok(toolNames(turns[0]).includes("read_files") && toolNames(turns[0]).includes("run_commands"));
    assert.equal(turns[0].headers.authorization, `Bearer ${KEY}`);
    t.diagnostic(`cline: auth and run ${result.ms} ms; session id in the body: ${turns[0].body.prompt_cache_key ?? turns[0].body.user ?? "none"}`);
  } finally {
    await llm.stop();
  }
});

test("Gemini CLI (gemini -p) runs its tool loop offline against the scripted agent (Gemini API)", async (t) => {
  const w = workspace(scratch, "gemini");
  const llm = await startFixtureLlm({ apiKey: KEY });
  try {
    // The origin: the CLI adds /v1beta/models/MODEL:streamGenerateContent?alt=sse.
    const { result } = await runGemini({ bin, deadProxy, w, baseUrl: llm.origin, key: KEY, model: MODEL, prompt: PROMPT(w) });
    assert.equal(result.code, 0, explain(result));
    assert.match(result.stdout, new RegExp(`Scripted agent done after ${ROUNDS} tool rounds.*Markers seen: ${w.marker}`), explain(result));
    assert.ok(!result.stdout.includes(KEY) && !result.stderr.includes(KEY), "the key never appears in the CLI's output");
    const requests = await llm.requests();
    const wirePath = `/v1beta/models/${MODEL}:streamGenerateContent`;
    const turns = checkRounds(t, requests, { path: wirePath, marker: w.marker, file: w.file });
    assert.equal(turns[0].url, `${wirePath}?alt=sse`);
    assert.equal(turns[0].body.model, undefined, "the model is in the path only");
    for (const r of turns) assert.equal(r.headers["x-goog-api-key"], KEY);
    assert.ok(toolNames(turns[0]).includes("read_file") && toolNames(turns[0]).includes("run_shell_command"));
    // Each call goes back with the CLI's id and the thoughtSignature the server gave it.
    const calls = turns.at(-1).body.contents.flatMap((c) => c.parts).filter((p) => p.functionCall);
    assert.equal(calls.length, ROUNDS);
    for (const c of calls) assert.ok(c.thoughtSignature && c.functionCall.id, JSON.stringify(c));
    t.diagnostic(`gemini: ${result.ms} ms; calls: ${calls.map((c) => `${c.functionCall.name} ${JSON.stringify(c.functionCall.args)}`).join("; ")}`);
  } finally {
    await llm.stop();
  }
});
