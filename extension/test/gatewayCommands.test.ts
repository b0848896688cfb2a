// The gateway's controller (gatewayCommands.ts) with the real core and the fake vscode: how it
// follows the settings, and how `native` asks for its summary model at the start.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LlmTarget } from "@context-condenser/protocol";
import { EngineHolder } from "../src/engine/engineHolder";
import { GatewayController, type TerminalHost } from "../src/gateway/gatewayCommands";
import * as fake from "./fakeVscode";

const log = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, show() {} };

/** The extension's environment variable collection and global state, as VS Code keeps them. */
function terminalHost(): TerminalHost & { variables: Record<string, string>; kept: Map<string, unknown> } {
  const variables: Record<string, string> = {};
  const kept = new Map<string, unknown>();
  return {
    variables,
    kept,
    collection: {
      description: undefined,
      persistent: true,
      replace: (name: string, value: string) => void (variables[name] = value),
      clear: () => Object.keys(variables).forEach((k) => delete variables[k]),
    },
    memento: {
      get: <T>(key: string) => kept.get(key) as T,
      update: async (key: string, value: unknown) => void kept.set(key, value),
    } as TerminalHost["memento"],
  };
}

/** Polls `ok` until it holds (a hang guard of 10 s, not a claim about speed). */
async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(ok()).toBe(true);
}
const WRITER = LlmTarget.parse({ profile: { id: "writer", kind: "openai", model: "gpt-4o-mini", context_window: 128000 }, apiKey: "sk-test" });

describe("the gateway's controller", () => {
  let dir: string;
  let holder: EngineHolder;
  let gateway: GatewayController;
  let model: () => Promise<LlmTarget>;
  beforeEach(async () => {
    fake.reset();
    fake.config.user["gateway.port"] = 0;
    fake.config.user["gateway.anthropicUpstream"] = "http://127.0.0.1:9";
    dir = await mkdtemp(path.join(tmpdir(), "gateway-commands-"));
    holder = new EngineHolder(path.join(__dirname, ".."), log as never, () => {});
    model = () => Promise.resolve(WRITER);
    gateway = new GatewayController(() => holder.gatewayEngine(), holder.onDidCrash, () => model(), dir, log as never);
  });
  afterEach(async () => {
    await gateway.stop();
    gateway.dispose();
    holder.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it("restarts a running gateway with a changed setting, leaves a stopped one stopped, and follows gateway.enabled", async () => {
    await gateway.settingsChanged(false);
    expect(gateway.running, "a stopped gateway stays stopped").toBeUndefined();
    expect(await gateway.start()).toBe(true);
    const first = gateway.running!.gateway;
    expect(first.report().config.threshold).toBeCloseTo(0.8);

    fake.config.user["gateway.threshold"] = 60;
    await gateway.settingsChanged(false);
    expect(gateway.running, "still running").toBeDefined();
    expect(gateway.running!.gateway.report().config.threshold).toBeCloseTo(0.6);
    // The gateway stopped by the restart is done with: its calls fail with a typed error.
    let stopped: unknown;
    try {
      first.report();
    } catch (e) {
      stopped = e;
    }
    expect(stopped).toMatchObject({ kind: "gateway_stopped" });

    // gateway.enabled turned off stops it; on starts it.
    await gateway.settingsChanged(true);
    expect(gateway.running).toBeUndefined();
    fake.config.user["gateway.enabled"] = true;
    await gateway.settingsChanged(true);
    expect(gateway.running).toBeDefined();
  });

  it("starts native only with a model to write the summaries, and says why not", async () => {
    fake.config.user["gateway.provider"] = "native";
    model = () => Promise.reject(new Error("no condensing model: choose one in the settings panel"));
    expect(await gateway.start()).toBe(false);
    expect(gateway.running).toBeUndefined();
    expect(fake.shown.errors.at(-1)).toMatch(/did not start: the native provider needs a model to write its summaries: no condensing model/);

    model = () => Promise.resolve(WRITER);
    expect(await gateway.start()).toBe(true);
    expect(gateway.running!.gateway.report().config.provider).toBe("native");
  });

  it("gives new terminals ANTHROPIC_BASE_URL and GOOGLE_GEMINI_BASE_URL while it runs with gateway.terminals on (offered once), and takes them out", async () => {
    const host = terminalHost();
    gateway.dispose();
    gateway = new GatewayController(() => holder.gatewayEngine(), holder.onDidCrash, () => model(), dir, log as never, host);
    expect(host.collection.persistent, "never kept across a restart").toBe(false);
    const offer = /new terminals through it/;
    fake.dialogs.info = (m) => (offer.test(m) ? "Set Up Terminals" : undefined);
    expect(await gateway.start()).toBe(true);
    expect(host.variables, "off until the person says yes").toEqual({});
    await until(() => fake.config.updates.some((u) => u.key === "gateway.terminals"));
    expect(fake.config.updates).toContainEqual({ key: "gateway.terminals", value: true, target: fake.ConfigurationTarget.Global });
    gateway.applyTerminals(); // What the change of the setting calls.
    const base = `http://127.0.0.1:${gateway.running!.port}`;
    expect(host.variables).toEqual({ ANTHROPIC_BASE_URL: `${base}/anthropic`, GOOGLE_GEMINI_BASE_URL: `${base}/gemini` });
    expect(host.variables, "a ChatGPT sign-in of Codex would break").not.toHaveProperty("OPENAI_BASE_URL");
    expect(host.collection.description).toBe(
      `Context Condenser's gateway at ${base}: ANTHROPIC_BASE_URL for Claude Code and Anthropic SDK clients; GOOGLE_GEMINI_BASE_URL for Gemini CLI with a Gemini API key`,
    );

    await gateway.stop();
    expect(host.variables, "a stopped gateway's port is closed").toEqual({});
    expect(host.collection.description).toBeUndefined();
    expect(await gateway.start()).toBe(true);
    expect(host.variables.ANTHROPIC_BASE_URL).toBe(`http://127.0.0.1:${gateway.running!.port}/anthropic`);
    expect(fake.shown.info.filter((m) => offer.test(m)), "offered once").toHaveLength(1);

    fake.config.user["gateway.terminals"] = false;
    gateway.applyTerminals();
    expect(host.variables).toEqual({});
    // Not asked again, and not set, when the person said no.
    await gateway.stop();
    expect(await gateway.start()).toBe(true);
    expect(host.variables).toEqual({});
    expect(fake.shown.info.filter((m) => offer.test(m))).toHaveLength(1);
  });

  it("keeps a saved state it cannot use aside (a newer version's), never saving over it, and starts afresh", async () => {
    const stateDir = path.join(dir, "gateway");
    mkdirSync(stateDir, { recursive: true });
    const newer = JSON.stringify({ version: 99, sessions: [{ kept: "as written" }] });
    writeFileSync(path.join(stateDir, "state.json"), newer);
    expect(await gateway.start()).toBe(true);
    const aside = path.join(stateDir, "state.set-aside.1.json");
    expect(readFileSync(aside, "utf8")).toBe(newer);
    expect(statSync(aside).mode & 0o077, "readable by the user alone").toBe(0);
    expect(fake.shown.warnings.at(-1)).toMatch(/started afresh: its saved state could not be used \(.*99.*\); it was kept aside as state\.set-aside\.1\.json/);
    await gateway.stop();
    // The state saved since is this version's; started again, nothing more is set aside.
    expect(JSON.parse(readFileSync(path.join(stateDir, "state.json"), "utf8")).version).not.toBe(99);
    expect(await gateway.start()).toBe(true);
    expect(existsSync(path.join(stateDir, "state.set-aside.2.json"))).toBe(false);
    expect(readFileSync(aside, "utf8")).toBe(newer);
  });
});
