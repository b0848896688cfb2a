// The extension's gateway (issue 28) with the real core (wasm) and real servers on 127.0.0.1:
// Node's `http` server of gateway.ts in front of the fixture LLM server, and `condense gateway`
// (the CLI host) beside it for the golden test: the same recorded request sequences, sent through
// each host, reach the upstream as the same bytes.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { connects } from "./net";
import { LlmTarget } from "@context-condenser/protocol";
import { Core, newEngine } from "../src/engine/engine";
import { GatewayServer, PortInUse, SAVE_DELAY_MS } from "../src/gateway/gateway";
import { PANIC_MARKER, type Trap, guardedEngine, newTestEngine, panicCore } from "./core";
import { SavedStates } from "./gatewaySessions";
// @ts-expect-error: plain JavaScript test helpers, shared with the Node suites.
import { startFixtureLlm } from "../../tests/js/servers.mjs";
// @ts-expect-error: as above.
import { condenseBin, startGateway } from "../../tests/agents/clients.mjs";

const KEY = "sk-ant-gateway-vitest-NEVER-STORED";
const TASK = "Fix the failing test in src/parse.rs and keep the public API unchanged.";
const SMALL = "tiny-model";

interface Fixture {
  origin: string;
  requests(): Promise<{ path: string; headers: Record<string, string>; body: unknown }[]>;
  clearRequests(): Promise<void>;
  stop(): Promise<void>;
}

/** The raw bytes of every request the fixture received, in order. */
async function rawRequests(llm: Fixture): Promise<string[]> {
  const all = await llm.requests();
  return Promise.all(all.map(async (_, i) => (await fetch(`${llm.origin}/requests/${i}/raw`)).text()));
}

function file(round: number): string {
  let text = "";
  for (let i = 0; i < 20; i++) text += `${String(i).padStart(6)}\tlet value_${round}_${i} = compute(&input, ${i}); // step ${i} of module ${round}\n`;
  return text;
}

/** Claude Code–shaped Anthropic bodies of 1..rounds tool rounds, for model `model`. */
function anthropicSession(rounds: number, model = SMALL): string[] {
  const messages: unknown[] = [{ role: "user", content: [{ type: "text", text: TASK, cache_control: { type: "ephemeral" } }] }];
  const bodies: string[] = [];
  for (let k = 0; k < rounds; k++) {
    const id = `toolu_${String(k).padStart(4, "0")}`;
    messages.push({ role: "assistant", content: [{ type: "tool_use", id, name: "Read", input: { file_path: `/repo/src/module_${k}.rs` } }] });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: id, content: file(k) }] });
    bodies.push(JSON.stringify({ model, max_tokens: 64, stream: true, system: [{ type: "text", text: "You are a coding agent." }], messages, metadata: { user_id: "user_x_account__session_5e551011-aaaa-bbbb-cccc-000000000001" } }));
  }
  return bodies;
}

/** Codex-shaped Responses bodies. */
function responsesSession(rounds: number): string[] {
  const input: unknown[] = [{ type: "message", role: "user", content: [{ type: "input_text", text: TASK }] }];
  const bodies: string[] = [];
  for (let k = 0; k < rounds; k++) {
    input.push({ type: "reasoning", summary: [], content: null, encrypted_content: `gAAAA${k}==` });
    input.push({ type: "function_call", name: "shell", arguments: JSON.stringify({ command: ["cat", `src/module_${k}.rs`] }), call_id: `call_${k}` });
    input.push({ type: "function_call_output", call_id: `call_${k}`, output: file(k) });
    bodies.push(JSON.stringify({ model: SMALL, instructions: "You are Codex.", input, stream: true, store: false, prompt_cache_key: "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" }));
  }
  return bodies;
}

/** Cline-shaped Chat Completions bodies. */
function chatSession(rounds: number): string[] {
  const messages: unknown[] = [
    { role: "system", content: "You are Cline." },
    { role: "user", content: `<task>\n${TASK}\n</task>` },
  ];
  const bodies: string[] = [];
  for (let k = 0; k < rounds; k++) {
    messages.push({ role: "assistant", content: null, tool_calls: [{ id: `call_${k}`, type: "function", function: { name: "read_files", arguments: JSON.stringify({ paths: [`src/module_${k}.rs`] }) } }] });
    messages.push({ role: "tool", tool_call_id: `call_${k}`, content: file(k) });
    bodies.push(JSON.stringify({ model: SMALL, messages, stream: true, stream_options: { include_usage: true } }));
  }
  return bodies;
}

/** Gemini CLI-shaped Gemini API bodies (the model is in the path): its session context and the
 *  task, then per round a model turn calling read_file (a thought signature beside it) and the
 *  user turn answering with a functionResponse. */
function geminiSession(rounds: number): string[] {
  const contents: unknown[] = [{ role: "user", parts: [{ text: "<session_context>\nThis is the Gemini CLI.\n</session_context>" }, { text: TASK }] }];
  const bodies: string[] = [];
  for (let k = 0; k < rounds; k++) {
    contents.push({ role: "model", parts: [{ functionCall: { name: "read_file", args: { file_path: `src/module_${k}.rs` } }, thoughtSignature: `CiQB${k}SIG==` }] });
    contents.push({ role: "user", parts: [{ functionResponse: { name: "read_file", response: { output: file(k) } } }] });
    bodies.push(JSON.stringify({ contents, systemInstruction: { parts: [{ text: "You are Gemini CLI." }] }, tools: [{ functionDeclarations: [{ name: "read_file" }] }] }));
  }
  return bodies;
}

const SEQUENCES: { name: string; path: string; headers: Record<string, string>; bodies: string[] }[] = [
  { name: "Anthropic Messages", path: "/anthropic/v1/messages?beta=true", headers: { "x-api-key": KEY, "anthropic-version": "2023-06-01", "user-agent": "claude-cli/2.1.332 (external, cli)" }, bodies: anthropicSession(24) },
  { name: "OpenAI Responses", path: "/openai/v1/responses", headers: { authorization: `Bearer ${KEY}`, "user-agent": "codex_exec/0.169.0" }, bodies: responsesSession(16) },
  { name: "OpenAI Chat Completions", path: "/openai/v1/chat/completions", headers: { authorization: `Bearer ${KEY}`, "x-context-condenser-session": "cline-1" }, bodies: chatSession(24) },
  { name: "Gemini API", path: `/gemini/v1beta/models/${SMALL}:streamGenerateContent?alt=sse`, headers: { "x-goog-api-key": KEY, "user-agent": "GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64)" }, bodies: geminiSession(24) },
];

async function post(origin: string, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
  const r = await fetch(`${origin}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  return { status: r.status, text: await r.text() };
}

/** A request with a Host header of our choosing (fetch sets its own). */
function getWithHost(port: number, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

/** Polls `ok` until it holds (a hang guard of 60 s, not a claim about speed). */
async function until(ok: () => boolean, ms = 60_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) if (ok()) return true;
  return ok();
}

const logs: string[] = [];
const saved = new SavedStates();

function nodeGateway() {
  return new GatewayServer(newTestEngine, { log: (l) => logs.push(l), save: saved.save });
}

function options(llm: Fixture, window = 6000) {
  return { port: 0, provider: "smart", thresholdPercent: 80, windows: { [SMALL]: window }, observe: false, anthropicUpstream: llm.origin, openaiUpstream: llm.origin, geminiUpstream: llm.origin };
}

describe("the extension's gateway", () => {
  let llm: Fixture;
  beforeAll(async () => {
    llm = await startFixtureLlm({ apiKey: KEY });
  });
  afterAll(async () => {
    await llm?.stop();
  });

  test("answers health and statistics, and refuses a Host that is not its own", async () => {
    const gw = nodeGateway();
    const { port } = await gw.start(options(llm));
    try {
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(await health.json()).toEqual({ status: "ok" });
      const stats = await (await fetch(`http://127.0.0.1:${port}/stats`)).json();
      expect(stats.config.provider).toBe("smart");
      expect(await getWithHost(port, "/healthz", "rebound.example:80")).toBe(403);
      expect(await getWithHost(port, "/healthz", `localhost:${port}`)).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/nowhere`)).status).toBe(404);
    } finally {
      await gw.stop();
    }
  });

  test("a path with dot segments is refused with 400 before routing, and a client's values cannot forge a log line", async () => {
    await llm.clearRequests();
    const gw = nodeGateway();
    const { port } = await gw.start(options(llm));
    const origin = `http://127.0.0.1:${port}`;
    try {
      // Node's `new URL()` would resolve these: `/anthropic/../../etc/passwd` reached the upstream
      // as `GET /etc/passwd` with the client's key. http.request sends the path as it is.
      for (const bad of ["/anthropic/../../etc/passwd", "/openai/v1/%2e%2e/%2E%2E/team-b", "/anthropic/v1/..%2f..%2fetc"]) {
        expect(await getWithHost(port, bad, `127.0.0.1:${port}`), bad).toBe(400);
      }
      expect(await rawRequests(llm)).toHaveLength(0);
      const before = logs.length;
      const forged = "user_x_account_y_session_probe\r\ngateway: POST /forged → 200";
      const body = JSON.stringify({ model: SMALL, max_tokens: 8, metadata: { user_id: forged + "z".repeat(100_000) }, messages: [{ role: "user", content: "hi" }] });
      const r = await post(origin, "/anthropic/v1/messages", { "x-api-key": KEY, "anthropic-version": "2023-06-01" }, body);
      expect(r.status, r.text).toBe(200);
      const lines = logs.slice(before);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        expect(line).not.toMatch(/[\r\n]/);
        expect(line.length).toBeLessThan(1_000);
      }
    } finally {
      await gw.stop();
    }
  });

  test("forwards a session, streams its answers back, condenses it, counts its usage, and keeps no key", async () => {
    await llm.clearRequests();
    const gw = nodeGateway();
    const { port } = await gw.start(options(llm));
    const origin = `http://127.0.0.1:${port}`;
    try {
      const seq = SEQUENCES[0];
      for (const body of seq.bodies.slice(0, 16)) {
        const r = await post(origin, seq.path, seq.headers, body);
        expect(r.status, r.text).toBe(200);
        expect(r.text).toContain("event: message_stop");
      }
      const raw = await rawRequests(llm);
      expect(raw).toHaveLength(16);
      expect(raw[0]).toBe(seq.bodies[0]);
      const condensed = raw.findIndex((r) => r.includes("[Context Condenser: the earlier conversation, condensed]"));
      expect(condensed).toBeGreaterThan(0);
      expect(raw.every((r) => r.includes(TASK))).toBe(true);
      const recorded = await llm.requests();
      expect(recorded[0].headers["x-api-key"]).toBe(KEY);
      const report = await (await fetch(`${origin}/stats`)).json();
      const [name, session] = Object.entries(report.sessions)[0] as [string, Record<string, number | string>];
      expect(name.startsWith("claude-code:")).toBe(true);
      expect(session.client).toBe("Claude Code");
      expect(session.condensations).toBeGreaterThanOrEqual(1);
      expect(Number(session.tokens_forwarded)).toBeLessThan(Number(session.tokens_client));
      expect((session.usage as unknown as { output: number }).output).toBeGreaterThan(0);
    } finally {
      await gw.stop();
    }
    expect(saved.all.length).toBeGreaterThan(0);
    expect(saved.all.some((s) => JSON.stringify(s).includes(KEY))).toBe(false);
    expect(logs.some((l) => l.includes(KEY))).toBe(false);
    expect(logs.some((l) => l.includes("condensed now"))).toBe(true);
  });

  test("the books: each answer's bill goes back to the core, and /stats says what condensing really saved or lost", async () => {
    // A Sonnet session (a published price) with breakpoints where Claude Code puts them, through
    // this host to the shared fixture and directly to a fixture of its own: both bill by
    // Anthropic's cache rules. It condenses at the threshold and ends three requests later.
    const direct: Fixture = await startFixtureLlm({ apiKey: KEY });
    const gw = nodeGateway();
    const { port } = await gw.start({ ...options(llm), policy: "threshold", windows: { "claude-sonnet-4-5": 12000 } });
    const origin = `http://127.0.0.1:${port}`;
    const rules = "Rule: read before editing, keep changes small, run the tests after each. ".repeat(80);
    const price = (u: { input_tokens: number; cache_creation_input_tokens: number; cache_read_input_tokens: number }) =>
      (u.input_tokens * 3 + u.cache_creation_input_tokens * 3.75 + u.cache_read_input_tokens * 0.3) / 1e6;
    const usageOf = (sse: string) => JSON.parse(/event: message_start\ndata: (.*)/.exec(sse)![1]).message.usage;
    let [paidDirect, paidThrough, left] = [0, 0, -1];
    try {
      const messages: { role: string; content: { type: string; [k: string]: unknown }[] }[] = [{ role: "user", content: [{ type: "text", text: TASK }] }];
      for (let k = 0; left !== 0 && k < 60; k++) {
        const id = `toolu_m${k}`;
        messages.push({ role: "assistant", content: [{ type: "tool_use", id, name: "Read", input: { file_path: `/repo/src/module_${k}.rs` } }] });
        messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: id, content: file(k) + file(k + 100) }] });
        const marked = structuredClone(messages);
        marked.at(-1)!.content.at(-1)!.cache_control = { type: "ephemeral" };
        const body = JSON.stringify({ model: "claude-sonnet-4-5-20250929", max_tokens: 64, stream: true, system: [{ type: "text", text: rules, cache_control: { type: "ephemeral" } }], messages: marked, metadata: { user_id: "user_x_account__session_5e551011-aaaa-bbbb-cccc-00000000b00c" } });
        const headers = { "x-api-key": KEY, "anthropic-version": "2023-06-01" };
        paidDirect += price(usageOf((await post(direct.origin, "/v1/messages", headers, body)).text));
        paidThrough += price(usageOf((await post(origin, "/anthropic/v1/messages", headers, body)).text));
        const report = await (await fetch(`${origin}/stats`)).json();
        if (left < 0 && report.totals.condensations > 0) left = 3;
        else if (left > 0) left--;
      }
      expect(left, "the session condensed").toBe(0);
      const session = Object.values((await (await fetch(`${origin}/stats`)).json()).sessions)[0] as { cost_saved_usd: number; payback_requests?: number };
      const real = paidDirect - paidThrough;
      expect(real, `${paidDirect} direct, ${paidThrough} through`).toBeLessThan(0);
      expect(Math.abs(session.cost_saved_usd - real), `shown ${session.cost_saved_usd}, really ${real}`).toBeLessThanOrEqual(0.01 * Math.abs(real));
      expect(session.payback_requests).toBeGreaterThan(0);
    } finally {
      await gw.stop();
      await direct.stop();
    }
  });

  test("a saved state comes back: the restarted gateway replays the same condensation", async () => {
    await llm.clearRequests();
    const seq = SEQUENCES[0];
    const first = nodeGateway();
    const a = await first.start(options(llm));
    for (const body of seq.bodies.slice(0, 14)) await post(`http://127.0.0.1:${a.port}`, seq.path, seq.headers, body);
    await first.stop();
    const state = saved.now();
    expect(state.sessions.length).toBeGreaterThan(0);
    expect(JSON.parse(state.index!).sessions, "the index holds no session").toEqual([]);
    const second = nodeGateway();
    const b = await second.start(options(llm), state);
    expect(b.stateRefused).toBeUndefined();
    await post(`http://127.0.0.1:${b.port}`, seq.path, seq.headers, seq.bodies[14]);
    await second.stop();
    const raw = await rawRequests(llm);
    const marker = (r: string) => JSON.parse(r).messages.filter((m: unknown) => JSON.stringify(m).includes("[Context Condenser")).map((m: unknown) => JSON.stringify(m));
    expect(marker(raw[14]).length).toBeGreaterThan(0);
    expect(marker(raw[14])).toEqual(marker(raw[13]));
    const refused = nodeGateway();
    const c = await refused.start(options(llm), { index: state.index!.slice(0, state.index!.length / 2), sessions: [] });
    expect(c.stateRefused).toMatch(/not readable/);
    expect(c.setAside).toEqual([]);
    await refused.stop();
    // A newer version's state, with its session files: refused, and its files neither removed
    // nor gone on from by the saves of the gateway that started afresh.
    const newerSaves = new SavedStates();
    const newer = new GatewayServer(newTestEngine, { log: () => {}, save: newerSaves.save });
    const n = await newer.start(options(llm), { index: JSON.stringify({ version: 99 }), sessions: state.sessions });
    expect(n.stateRefused).toMatch(/version 99/);
    expect(Object.keys(newer.gateway!.report().sessions)).toEqual([]);
    await newer.stop();
    expect(newerSaves.all.length).toBeGreaterThan(0);
    expect(newerSaves.removed).toEqual([]);
    // One session's file broken, the others whole: the whole ones are read, the broken one comes
    // back as it was saved, named, to be kept aside.
    const broken = { bogus: true };
    const partly = nodeGateway();
    const d = await partly.start(options(llm), { index: state.index, sessions: [...state.sessions, { name: "0000000000000bad.json", text: JSON.stringify(broken) }] });
    expect(d.stateRefused).toBeUndefined();
    expect(d.setAside.map((s) => [s.index, s.file, JSON.parse(s.raw)])).toEqual([[state.sessions.length, "0000000000000bad.json", broken]]);
    expect(d.setAside[0].why.length).toBeGreaterThan(0);
    expect(Object.keys(partly.gateway!.report().sessions).length).toBe(state.sessions.length);
    await partly.stop();
  });

  test("pause forwards the client's bytes; undo forwards the next request uncondensed", async () => {
    await llm.clearRequests();
    const engine = newTestEngine();
    const gw = new GatewayServer(() => engine, { log: () => {}, save: () => [] });
    const { port } = await gw.start(options(llm));
    const origin = `http://127.0.0.1:${port}`;
    const seq = SEQUENCES[0];
    try {
      for (const body of seq.bodies.slice(0, 14)) await post(origin, seq.path, seq.headers, body);
      const name = Object.keys(gw.gateway!.report().sessions)[0];
      expect(gw.gateway!.session(name).condensations.length).toBeGreaterThan(0);
      const undone = [];
      while (gw.gateway!.session(name).condensations.length) undone.push(gw.gateway!.undo(name));
      expect(undone.length).toBeGreaterThan(0);
      await post(origin, seq.path, seq.headers, seq.bodies[14]);
      gw.gateway!.pause(name, true);
      await post(origin, seq.path, seq.headers, seq.bodies[15]);
      const raw = await rawRequests(llm);
      expect(raw[14]).toBe(seq.bodies[14]);
      expect(raw[15]).toBe(seq.bodies[15]);
      expect(gw.gateway!.report().sessions[name].paused).toBe(true);
    } finally {
      await gw.stop();
    }
  });

  test("a trap of the engine: the request goes out as sent, and a fresh engine goes on from the saved state", async () => {
    // The test build of the wasm package panics on a gateway request whose body is its marker
    // (scripts/build-wasm --test-panic), with the gateway's state borrowed, as a real bug would.
    const core = panicCore();
    const traps: Trap[] = [];
    // As the engine holder guards the gateway's engine: a trap drops the instance.
    const fresh = () => guardedEngine(core, traps).engine;
    const lines: string[] = [];
    const states = new SavedStates();
    const uncaught: unknown[] = [];
    const collect = (e: unknown) => void uncaught.push(e);
    process.on("uncaughtException", collect);
    await llm.clearRequests();
    const gw = new GatewayServer(fresh, { log: (l) => lines.push(l), save: states.save });
    const { port } = await gw.start(options(llm));
    const origin = `http://127.0.0.1:${port}`;
    const seq = SEQUENCES[0];
    try {
      for (const body of seq.bodies.slice(0, 14)) expect((await post(origin, seq.path, seq.headers, body)).status).toBe(200);
      const before = gw.engine;
      const name = Object.keys(gw.gateway!.report().sessions)[0];
      const condensations = gw.gateway!.session(name).condensations.length;
      expect(condensations).toBeGreaterThan(0);
      // The state is saved a moment after the last answer.
      await new Promise((r) => setTimeout(r, SAVE_DELAY_MS + 300));
      expect(states.all.length).toBeGreaterThan(0);

      const trapped = await post(origin, seq.path, seq.headers, PANIC_MARKER);
      expect(traps.map((t) => t.what)).toEqual(["request"]);
      let raw = await rawRequests(llm);
      expect(raw.at(-1), "the request met by the trap went out as the client sent it").toBe(PANIC_MARKER);
      expect(trapped.status).toBe(400);
      expect(gw.engine).not.toBe(before);
      expect(lines.some((l) => l.includes("a fresh engine goes on from the state saved last"))).toBe(true);

      // The next request of the session: the same condensation, replayed by the fresh engine.
      const next = await post(origin, seq.path, seq.headers, seq.bodies[14]);
      expect(next.status, next.text).toBe(200);
      expect(next.text).toContain("event: message_stop");
      raw = await rawRequests(llm);
      const marker = (r: string) => JSON.parse(r).messages.filter((m: unknown) => JSON.stringify(m).includes("[Context Condenser")).map((m: unknown) => JSON.stringify(m));
      expect(marker(raw.at(-1)!).length).toBeGreaterThan(0);
      expect(marker(raw.at(-1)!)).toEqual(marker(raw[13]));
      const session = gw.gateway!.session(name);
      expect(session.condensations.length).toBe(condensations);
      expect(gw.gateway!.report().sessions[name].requests).toBe(15);
      expect(traps.map((t) => t.what)).toEqual(["request"]);
      // Whatever reached Node from the trap was the trap itself, not a failure of this host.
      for (const e of uncaught) expect(String(e)).toMatch(/unreachable|panic/i);
    } finally {
      await gw.stop();
      gw.free();
      process.off("uncaughtException", collect);
    }
  });

  test("native: the ledger at once, the summary written in the background by the summary model, carried by the next request", async () => {
    await llm.clearRequests();
    // The shipped package with the host's real fetch, as the extension builds the gateway's engine.
    const core = new Core(path.join(__dirname, "..", "wasm"));
    const quiet = { info: () => {}, warn: () => {}, error: () => {} };
    const writer = LlmTarget.parse({ profile: { id: "writer", kind: "anthropic", base_url: llm.origin, model: "claude-haiku-writer", context_window: 200000, max_output: 2000 }, apiKey: KEY });
    const lines: string[] = [];
    let asked = 0;
    const gw = new GatewayServer(() => newEngine(core, quiet), {
      log: (l) => lines.push(l),
      save: () => [],
      summaryModel: async () => {
        asked++;
        return writer;
      },
    });
    const { port } = await gw.start({ ...options(llm), provider: "native" });
    const origin = `http://127.0.0.1:${port}`;
    const seq = SEQUENCES[0];
    const isSummaryCall = (r: string) => r.includes('"model":"claude-haiku-writer"');
    try {
      let at = 0;
      while (!lines.some((l) => l.includes("condensed now")) && at < 16) {
        const r = await post(origin, seq.path, seq.headers, seq.bodies[at++]);
        expect(r.status, r.text).toBe(200);
      }
      const crossed = (await rawRequests(llm)).filter((r) => !isSummaryCall(r)).at(-1)!;
      expect(crossed).toContain("[Context Condenser: the earlier conversation, condensed]");
      expect(crossed, "the request that crossed the threshold waited for no summary").not.toContain("Summary of the earlier conversation");
      expect(await until(() => lines.some((l) => l.includes("summary written")))).toBe(true);
      expect(asked).toBe(1);
      const calls = (await llm.requests()).filter((r) => (r.body as { model?: string })?.model === "claude-haiku-writer");
      expect(calls.length).toBeGreaterThan(0);
      expect(calls.every((c) => c.headers["x-api-key"] === KEY), "with the summary model's key").toBe(true);
      expect(lines.find((l) => l.includes("summary written"))).toMatch(/; the next request carries it$/);

      const next = await post(origin, seq.path, seq.headers, seq.bodies[at]);
      expect(next.status, next.text).toBe(200);
      const carried = (await rawRequests(llm)).filter((r) => !isSummaryCall(r)).at(-1)!;
      expect(carried).toContain("Summary of the earlier conversation (written by claude-haiku-writer)");
      expect(carried).toContain(TASK);
      const name = Object.keys(gw.gateway!.report().sessions)[0];
      const session = gw.gateway!.report().sessions[name];
      expect(session.summaries).toBe(1);
      expect(gw.gateway!.report().summaries_pending).toBe(0);
    } finally {
      await gw.stop();
      gw.free();
    }
    expect(lines.some((l) => l.includes(KEY))).toBe(false);
  });

  test("native without a model to write: the job is given up, the ledger stays, and the log says why", async () => {
    await llm.clearRequests();
    const lines: string[] = [];
    const gw = new GatewayServer(newTestEngine, {
      log: (l) => lines.push(l),
      save: () => [],
      summaryModel: () => Promise.reject(new Error("no condensing model: choose one in the settings panel")),
    });
    const { port } = await gw.start({ ...options(llm), provider: "native" });
    const seq = SEQUENCES[0];
    try {
      let at = 0;
      while (!lines.some((l) => l.includes("condensed now")) && at < 16) await post(`http://127.0.0.1:${port}`, seq.path, seq.headers, seq.bodies[at++]);
      expect(await until(() => lines.some((l) => l.includes("summary failed")))).toBe(true);
      expect(lines.find((l) => l.includes("summary failed"))).toMatch(/no condensing model: choose one in the settings panel; the ledger stays$/);
      const report = gw.gateway!.report();
      const session = Object.values(report.sessions)[0];
      expect(session.summaries).toBe(0);
      expect(session.summary_note).toContain("no condensing model");
      expect(report.summaries_pending).toBe(0);
    } finally {
      await gw.stop();
    }
  });

  test("a condensation names a recall file of what it hid, written 0600 before the request naming it is sent", async () => {
    // An upstream that looks for the named file the moment a request arrives.
    const seen: { path: string; text?: string; mode?: number }[] = [];
    const upstream = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const named = /The hidden messages are in (.+?); read that file/.exec(body);
        if (named) {
          const at = JSON.parse(`"${named[1]}"`) as string;
          seen.push(existsSync(at) ? { path: at, text: readFileSync(at, "utf8"), mode: statSync(at).mode & 0o777 } : { path: at });
        }
        const answer = JSON.stringify({ id: "msg", type: "message", role: "assistant", content: [{ type: "text", text: "ok" }], usage: { input_tokens: 7, output_tokens: 2 } });
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) });
        res.end(answer);
      });
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
    const origin = `http://127.0.0.1:${(upstream.address() as net.AddressInfo).port}`;
    const dir = mkdtempSync(path.join(os.tmpdir(), "gw-recall-"));
    const recallDir = path.join(dir, "recall");
    const gw = nodeGateway();
    const { port } = await gw.start({ ...options(llm), anthropicUpstream: origin, recallDir });
    const seq = SEQUENCES[0];
    try {
      for (const body of seq.bodies.slice(0, 16)) expect((await post(`http://127.0.0.1:${port}`, seq.path, seq.headers, body)).status).toBe(200);
      expect(seen.length).toBeGreaterThan(0);
      const first = seen[0];
      expect(first.path.startsWith(recallDir + path.sep)).toBe(true);
      expect(first.text, "on disk when the request naming it arrived").toBeDefined();
      if (process.platform !== "win32") expect(first.mode).toBe(0o600);
      expect(first.text).toContain("let value_0_5 = compute(&input, 5);");
      expect(first.text).toContain("Tool call Read (toolu_0000):");
      expect(first.text).not.toContain(KEY);
      const session = Object.values(gw.gateway!.report().sessions)[0];
      expect(session.recall_files).toBeGreaterThanOrEqual(1);
      expect(session.recall_bytes).toBeGreaterThanOrEqual(Buffer.byteLength(first.text!));
      const claude = gw.gateway!.setup(`http://127.0.0.1:${port}`).find((c) => c.id === "claude-code")!;
      expect(claude.lines).toContain(`--allowedTools "Read(/${recallDir}/**)"`);
    } finally {
      await gw.stop();
      upstream.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("prompt too long: condensed further and retried once", async () => {
    await llm.clearRequests();
    const gw = nodeGateway();
    const { port } = await gw.start(options(llm, 1_000_000));
    try {
      const bodies = anthropicSession(12, "fault-overflow-above-6000");
      const r = await post(`http://127.0.0.1:${port}`, "/anthropic/v1/messages", SEQUENCES[0].headers, bodies[11]);
      expect(r.status, r.text).toBe(200);
      const raw = await rawRequests(llm);
      expect(raw).toHaveLength(2);
      expect(raw[0]).toBe(bodies[11]);
      expect(raw[1].length).toBeLessThan(raw[0].length);
      expect(raw[1]).toContain(TASK);
    } finally {
      await gw.stop();
    }
  });

  test("a body above the core's limit is refused with 413; an upstream that is down is a 502", async () => {
    const gw = nodeGateway();
    const { port } = await gw.start({ ...options(llm), anthropicUpstream: "http://127.0.0.1:9" });
    try {
      // A body declared above the limit is refused before it is read.
      const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request({ host: "127.0.0.1", port, path: "/anthropic/v1/messages", method: "POST", headers: { "content-length": String(300 << 20) } }, (res) => {
          let body = "";
          res.on("data", (c) => (body += c));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on("error", reject);
        req.write("{");
      });
      expect(refused.status).toBe(413);
      expect(JSON.parse(refused.body).error.type).toBe("request_too_large");
      const down = await post(`http://127.0.0.1:${port}`, "/anthropic/v1/messages", SEQUENCES[0].headers, SEQUENCES[0].bodies[0]);
      expect(down.status).toBe(502);
      expect(JSON.parse(down.text).error.message).toContain("cannot be reached");
    } finally {
      await gw.stop();
    }
  });

  test("stopping closes the port, and a port in use says so", async () => {
    const gw = nodeGateway();
    const { port } = await gw.start(options(llm));
    expect(await connects(port)).toBe(true);
    await gw.stop();
    expect(await connects(port)).toBe(false);
    const holder = net.createServer();
    await new Promise<void>((r) => holder.listen(0, "127.0.0.1", () => r()));
    const taken = (holder.address() as net.AddressInfo).port;
    await expect(nodeGateway().start({ ...options(llm), port: taken })).rejects.toBeInstanceOf(PortInUse);
    holder.close();
  });

  test("golden: the Node host and condense gateway forward the same bytes for the same requests", async () => {
    const bin = condenseBin();
    for (const seq of SEQUENCES) {
      const forwarded: string[][] = [];
      // One state folder for both hosts: their condensations name the same recall files.
      const dir = mkdtempSync(path.join(os.tmpdir(), "gw-golden-"));
      for (const host of ["node", "cli"]) {
        await llm.clearRequests();
        let origin: string;
        let stop: () => Promise<unknown>;
        if (host === "node") {
          const gw = nodeGateway();
          origin = `http://127.0.0.1:${(await gw.start({ ...options(llm), recallDir: path.join(dir, "recall") })).port}`;
          stop = () => gw.stop();
        } else {
          const gw = await startGateway(bin, ["--anthropic-upstream", llm.origin, "--openai-upstream", llm.origin, "--gemini-upstream", llm.origin, "--window", `${SMALL}=6000`, "--state-dir", dir]);
          origin = gw.origin;
          stop = () => gw.stop();
        }
        try {
          for (const body of seq.bodies) {
            const r = await post(origin, seq.path, seq.headers, body);
            expect(r.status, `${host} ${seq.name}: ${r.text}`).toBe(200);
          }
        } finally {
          await stop();
        }
        forwarded.push(await rawRequests(llm));
      }
      const [node, cli] = forwarded;
      expect(node.length, seq.name).toBe(seq.bodies.length);
      expect(node.some((r) => r.includes("[Context Condenser")), `${seq.name} condensed`).toBe(true);
      expect(node.some((r) => r.includes(`The hidden messages are in ${path.join(dir, "recall")}`)), `${seq.name} names a recall file`).toBe(true);
      expect(node, seq.name).toEqual(cli);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

