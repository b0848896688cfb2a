// The gateway's controller (gatewayCommands.ts) with the real core and the fake vscode: how it
// follows the settings, and how `native` asks for its summary model at the start.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LlmTarget } from "@context-condenser/protocol";
import { EngineHolder } from "../src/engine/engineHolder";
import { GatewayController } from "../src/gateway/gatewayCommands";
import * as fake from "./fakeVscode";

const log = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, show() {} };
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
});
