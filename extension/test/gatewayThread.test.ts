// The extension's gateway in its worker thread (issue 38), as the extension runs it: the worker's
// bundle built here with the build's own options (build.mjs), the shipped wasm package, a real
// fixture LLM server on 127.0.0.1. Requests are condensed there, the state file is written by the
// thread (0600), the figures and controls answer through messages, the summary model comes from
// the main thread, a port in use is a `PortInUse`, and stopping ends the thread and closes the port.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { connects } from "./net";
import { LlmTarget } from "@context-condenser/protocol";
import { PortInUse } from "../src/gateway/gateway";
import { GatewayThread, type RunnerHooks } from "../src/gateway/gatewayRunner";
import { readState } from "../src/gateway/stateFile";
import { toolSession } from "./gatewaySessions";
// @ts-expect-error: plain JavaScript, the build's own options.
import { bundleOptions } from "../bundleOptions.mjs";
// @ts-expect-error: plain JavaScript test helpers, shared with the Node suites.
import { startFixtureLlm } from "../../tests/js/servers.mjs";

const KEY = "sk-ant-gateway-thread-NEVER-STORED";
const MODEL = "tiny-model";
const WASM = path.join(__dirname, "..", "wasm");

interface Fixture {
  origin: string;
  requests(): Promise<{ path: string; headers: Record<string, string>; body: unknown }[]>;
  clearRequests(): Promise<void>;
  stop(): Promise<void>;
}

let dir: string;
let script: string;
let llm: Fixture;

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), "gateway-thread-"));
  script = path.join(dir, "gatewayWorker.js");
  await build({ ...bundleOptions, entryPoints: [path.join(__dirname, "..", "src", "gateway", "gatewayWorker.ts")], outfile: script });
  llm = await startFixtureLlm({ apiKey: KEY });
});

afterAll(async () => {
  await llm?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function hooks(lines: string[], summaryModel: RunnerHooks["summaryModel"] = () => Promise.reject(new Error("no model in this test"))): RunnerHooks & { saves: number } {
  const h = {
    saves: 0,
    log: (line: string) => void lines.push(line),
    saved: () => void h.saves++,
    summaryModel,
    stateDir: path.join(dir, `state-${lines.length}-${Math.random().toString(36).slice(2)}`),
  };
  return h;
}

const options = (extra: object = {}) => ({ port: 0, provider: "smart", thresholdPercent: 80, windows: { [MODEL]: 6000 }, observe: false, anthropicUpstream: llm.origin, openaiUpstream: llm.origin, geminiUpstream: llm.origin, ...extra });

async function post(port: number, body: string): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${port}/anthropic/v1/messages`, { method: "POST", headers: { "content-type": "application/json", "x-api-key": KEY, "anthropic-version": "2023-06-01" }, body });
  await r.text();
  return r.status;
}

/** Polls `ok` until it holds (a hang guard of 60 s, not a claim about speed). */
async function until(ok: () => boolean | Promise<boolean>, ms = 60_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) if (await ok()) return true;
  return ok();
}

describe("the gateway in its worker thread", () => {
  test("condenses a session, writes its state from the thread, answers the figures and controls, and stops", async () => {
    await llm.clearRequests();
    const lines: string[] = [];
    const h = hooks(lines);
    const thread = new GatewayThread(script, WASM, h);
    // VS Code gives settings as proxies, which a message to a thread cannot carry as they are.
    const { port, setAside } = await thread.start(options({ windows: new Proxy({ [MODEL]: 6000 }, {}) }), undefined);
    expect(setAside).toEqual([]);
    expect(thread.port).toBe(port);
    try {
      for (const body of toolSession(16, MODEL)) expect(await post(port, body)).toBe(200);
      const sent = (await llm.requests()).map((r) => JSON.stringify(r.body));
      expect(sent.some((b) => b.includes("[Context Condenser: the earlier conversation, condensed]"))).toBe(true);
      const calls = thread.calls!;
      const report = await calls.report();
      const [name] = Object.keys(report.sessions);
      expect(report.sessions[name].condensations).toBeGreaterThanOrEqual(1);
      const view = await calls.session(name);
      expect(view.condensations.length).toBeGreaterThanOrEqual(1);
      expect((await calls.setup(`http://127.0.0.1:${port}`)).some((s) => s.id === "claude-code")).toBe(true);
      // The core's typed errors keep their kind across the threads.
      await expect(calls.session("no such session")).rejects.toMatchObject({ message: expect.stringMatching(/no session/), kind: expect.any(String) });
      // A large request grows the engine's memory: once it is answered, a fresh instance of the
      // core takes over from the state, and the session replays its condensation as before.
      const big = JSON.stringify({ model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "the quick brown fox ".repeat(900_000) }] });
      expect(await post(port, big)).toBe(200);
      expect(await until(() => lines.some((l) => l.includes("a large request grew the engine's memory; a fresh engine goes on from the state saved last")))).toBe(true);
      const marker = (b: unknown) => JSON.stringify((b as { messages: unknown[] }).messages.find((m) => JSON.stringify(m).includes("[Context Condenser")));
      const before = (await llm.requests()).filter((r) => (r.body as { model?: string }).model === MODEL).at(-2)!;
      expect(await post(port, toolSession(17, MODEL)[16])).toBe(200);
      const after = (await llm.requests()).at(-1)!;
      expect(marker(after.body)).toBe(marker(before.body));
      expect((await calls.report()).sessions[name].condensations).toBeGreaterThanOrEqual(report.sessions[name].condensations);
      await calls.pause(name, true);
      expect((await calls.report()).sessions[name].paused).toBe(true);
      // The thread wrote the state, readable by the user alone, and said so.
      expect(await until(() => h.saves > 0)).toBe(true);
      expect(statSync(path.join(h.stateDir, "state.json")).mode & 0o777).toBe(0o600);
      const saved = readState(h.stateDir)!;
      expect(saved.sessions.length, "a file per session").toBe(2);
      for (const f of saved.sessions) expect(statSync(path.join(h.stateDir, "sessions", f.name)).mode & 0o777).toBe(0o600);
      expect(lines.some((l) => l.includes("condensed now"))).toBe(true);
    } finally {
      await thread.stop();
    }
    expect(thread.port).toBe(0);
    expect(thread.calls).toBeUndefined();
    expect(await connects(port)).toBe(false);
    expect(JSON.stringify(readState(h.stateDir))).not.toContain(KEY);
    expect(lines.some((l) => l.includes(KEY))).toBe(false);
  });

  test("native: the summary model comes from the main thread, and the next request carries the summary", async () => {
    await llm.clearRequests();
    const writer = LlmTarget.parse({ profile: { id: "writer", kind: "anthropic", base_url: llm.origin, model: "claude-haiku-writer", context_window: 200000, max_output: 2000 }, apiKey: KEY });
    let asked = 0;
    const lines: string[] = [];
    const thread = new GatewayThread(
      script,
      WASM,
      hooks(lines, async () => {
        asked++;
        return writer;
      }),
    );
    const { port } = await thread.start(options({ provider: "native" }), undefined);
    try {
      const bodies = toolSession(18, MODEL, "00000000beef");
      let at = 0;
      while (!lines.some((l) => l.includes("condensed now")) && at < 16) expect(await post(port, bodies[at++])).toBe(200);
      expect(await until(() => lines.some((l) => l.includes("summary written")))).toBe(true);
      expect(asked).toBe(1);
      expect(await post(port, bodies[at])).toBe(200);
      const last = (await llm.requests()).filter((r) => (r.body as { model?: string }).model === MODEL).at(-1)!;
      expect(JSON.stringify(last.body)).toContain("Summary of the earlier conversation (written by claude-haiku-writer)");
    } finally {
      await thread.stop();
    }
  });

  test("a port in use is a PortInUse, and the thread is gone", async () => {
    const holder = net.createServer();
    await new Promise<void>((r) => holder.listen(0, "127.0.0.1", () => r()));
    const taken = (holder.address() as net.AddressInfo).port;
    const thread = new GatewayThread(script, WASM, hooks([]));
    try {
      await expect(thread.start(options({ port: taken }), undefined)).rejects.toBeInstanceOf(PortInUse);
      expect(thread.calls).toBeUndefined();
      expect(thread.port).toBe(0);
    } finally {
      holder.close();
    }
  });
});
