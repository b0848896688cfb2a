// The gateway's controller (gatewayCommands.ts) with the real core and the fake vscode: how it
// follows the settings, and how `native` asks for its summary model at the start.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LlmTarget } from "@context-condenser/protocol";
import { EngineHolder } from "../src/engine/engineHolder";
import { GatewayController, type TerminalHost } from "../src/gateway/gatewayCommands";
import { entryText, withEnvironmentEntry } from "../src/gateway/agentSettings";
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
/** Lets what was started without being awaited (the offers after a start) run its course. */
const settle = () => new Promise((r) => setTimeout(r, 20));

/** The quick picks shown (title and labels), each answered by `answer` (the label to pick, or
 *  undefined to dismiss it). */
function scriptQuickPicks(answer: (title: string) => string | undefined): Array<{ title: string; labels: string[] }> {
  const shown: Array<{ title: string; labels: string[] }> = [];
  fake.window.showQuickPick = async <T extends { label: string }>(items: T[], options: { title?: string }) => {
    const title = options.title ?? "";
    shown.push({ title, labels: items.map((i) => i.label) });
    const label = answer(title);
    return items.find((i) => i.label === label);
  };
  return shown;
}

const WELCOME = "Condense the Agent You Already Use";
const TERMINALS_OFFER = /new terminals through it/;

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
    expect((await first.report()).config.threshold).toBeCloseTo(0.8);

    fake.config.user["gateway.threshold"] = 60;
    await gateway.settingsChanged(false);
    expect(gateway.running, "still running").toBeDefined();
    expect((await gateway.running!.gateway.report()).config.threshold).toBeCloseTo(0.6);
    // The gateway stopped by the restart is done with: its calls fail with a typed error.
    await expect(first.report()).rejects.toMatchObject({ kind: "gateway_stopped" });

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
    expect((await gateway.running!.gateway.report()).config.provider).toBe("native");
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
    await gateway.applyTerminals(); // What the change of the setting calls.
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
    await gateway.applyTerminals();
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

  it("a newer version's session file refuses the state: its sessions go aside as a folder, and a bad session file alone is kept aside", async () => {
    const stateDir = path.join(dir, "gateway");
    const sessions = path.join(stateDir, "sessions");
    mkdirSync(sessions, { recursive: true });
    const newer = JSON.stringify({ version: 99, used: 1, session: { kept: "as written" } });
    writeFileSync(path.join(sessions, "00000000000000aa.json"), newer);
    expect(await gateway.start()).toBe(true);
    expect(readFileSync(path.join(stateDir, "sessions.set-aside.1", "00000000000000aa.json"), "utf8")).toBe(newer);
    await gateway.stop();
    expect(existsSync(path.join(sessions, "00000000000000aa.json"))).toBe(false);

    // This version's state, one session's file broken: kept aside, the gateway starts from the rest.
    const broken = JSON.stringify({ version: 3, used: 2, session: { not: "a session" } });
    mkdirSync(sessions, { recursive: true });
    writeFileSync(path.join(sessions, "00000000000000bb.json"), broken);
    expect(await gateway.start()).toBe(true);
    const kept = readdirSync(stateDir).filter((n) => n.startsWith("state.set-aside."));
    expect(kept.map((n) => readFileSync(path.join(stateDir, n), "utf8"))).toContain(broken);
    expect(existsSync(path.join(sessions, "00000000000000bb.json")), "out of the folder read at start").toBe(false);
    await gateway.stop();
  });

  describe("the terminals, asked once in all by the welcome or Start Gateway", () => {
    let host: ReturnType<typeof terminalHost>;
    beforeEach(() => {
      host = terminalHost();
      gateway.dispose();
      gateway = new GatewayController(() => holder.gatewayEngine(), holder.onDidCrash, () => model(), dir, log as never, host);
    });
    const terminalUpdates = () => fake.config.updates.filter((u) => u.key === "gateway.terminals");

    it("the welcome's yes starts the gateway with them on (user settings), and Start Gateway does not ask again", async () => {
      const picks = scriptQuickPicks((title) => (title === WELCOME ? "Start the Gateway and Set Up Terminals" : undefined));
      await gateway.useFor(["Claude Code"]);
      expect(picks.map((p) => p.title), "one question, then the agents' setup").toEqual([WELCOME, "Copy Gateway Setup"]);
      expect(picks[0]!.labels).toEqual(["Start the Gateway", "Start the Gateway and Set Up Terminals"]);
      expect(gateway.running).toBeDefined();
      expect(terminalUpdates()).toEqual([{ key: "gateway.terminals", value: true, target: fake.ConfigurationTarget.Global }]);
      expect(host.variables.ANTHROPIC_BASE_URL).toBe(`http://127.0.0.1:${gateway.running!.port}/anthropic`);
      await settle();
      await gateway.stop();
      expect(await gateway.start()).toBe(true);
      await settle();
      expect(fake.shown.info.filter((m) => TERMINALS_OFFER.test(m)), "Start Gateway did not ask").toEqual([]);
    });

    it("the welcome's no leaves them off, and neither the welcome nor Start Gateway asks again", async () => {
      const picks = scriptQuickPicks((title) => (title === WELCOME ? "Start the Gateway" : undefined));
      await gateway.useFor([]);
      expect(gateway.running).toBeDefined();
      expect(terminalUpdates(), "off until the person says yes").toEqual([]);
      expect(host.variables).toEqual({});
      await gateway.stop();
      expect(await gateway.start()).toBe(true);
      await settle();
      expect(fake.shown.info.filter((m) => TERMINALS_OFFER.test(m))).toEqual([]);
      await gateway.stop();
      await gateway.useFor([]);
      expect(picks.filter((p) => p.title === WELCOME), "asked once").toHaveLength(1);
      expect(terminalUpdates()).toEqual([]);
    });

    it("a welcome question dismissed starts nothing and stays to be asked", async () => {
      const picks = scriptQuickPicks(() => undefined);
      await gateway.useFor([]);
      expect(gateway.running).toBeUndefined();
      expect(picks.map((p) => p.title)).toEqual([WELCOME]);
      // Start Gateway then asks (and the person says no): the welcome does not ask after it.
      expect(await gateway.start()).toBe(true);
      await until(() => fake.shown.info.some((m) => TERMINALS_OFFER.test(m)));
      await gateway.stop();
      await gateway.useFor([]);
      expect(picks.filter((p) => p.title === WELCOME)).toHaveLength(1);
      expect(gateway.running).toBeDefined();
      expect(terminalUpdates()).toEqual([]);
    });

    it("after Start Gateway asked, the welcome starts the gateway without asking", async () => {
      fake.dialogs.info = (m) => (TERMINALS_OFFER.test(m) ? "Set Up Terminals" : undefined);
      expect(await gateway.start()).toBe(true);
      await until(() => terminalUpdates().length > 0);
      await gateway.stop();
      const picks = scriptQuickPicks(() => undefined);
      await gateway.useFor(["Claude Code"]);
      expect(picks.map((p) => p.title)).toEqual(["Copy Gateway Setup"]);
      expect(gateway.running).toBeDefined();
      expect(host.variables.ANTHROPIC_BASE_URL).toBe(`http://127.0.0.1:${gateway.running!.port}/anthropic`);
      expect(terminalUpdates()).toHaveLength(1);
    });
  });

  describe("Copy Gateway Setup… and the Claude Code extension's settings", () => {
    const SETTING = "claudeCode.environmentVariables";
    const OFFER = "Set Up the Claude Code Extension…";
    const WRITE = "Write to User Settings";
    const settingUpdates = () => fake.config.updates.filter((u) => u.key === SETTING);
    /** Copies the setup for `agent`, answering the offer with `offer` and the modal with `write`. */
    async function copy(agent: string, offer?: string, write?: string): Promise<void> {
      scriptQuickPicks((title) => (title === "Copy Gateway Setup" ? agent : undefined));
      fake.dialogs.info = (m) => (m.startsWith(`Copied the setup for ${agent}.`) ? offer : undefined);
      fake.dialogs.warning = () => {
        // Shown before anything is written.
        expect(settingUpdates()).toEqual([]);
        return write;
      };
      await gateway.copySetup();
    }
    beforeEach(async () => {
      fake.extensions.installed.add("anthropic.claude-code");
      expect(await gateway.start()).toBe(true);
    });
    const url = () => `http://127.0.0.1:${gateway.running!.port}/anthropic`;

    it("shows the entry, then writes it to the user's settings, in place of an earlier one, keeping the others", async () => {
      fake.config.user[SETTING] = [
        { name: "CLAUDE_CODE_USE_BEDROCK", value: "0" },
        { name: "ANTHROPIC_BASE_URL", value: "https://old.example" },
        { name: "DISABLE_TELEMETRY", value: "1" },
      ];
      fake.config.workspace[SETTING] = [{ name: "OTHER", value: "x" }];
      await copy("Claude Code", OFFER, WRITE);
      expect(fake.env.clipboard.text).toMatch(/ANTHROPIC_BASE_URL/);
      const entry = { name: "ANTHROPIC_BASE_URL", value: url() };
      expect(fake.shown.modals).toHaveLength(1);
      const modal = fake.shown.modals[0]!;
      expect(modal.buttons).toEqual([WRITE]);
      expect(modal.detail).toContain(`{ "name": "ANTHROPIC_BASE_URL", "value": "${url()}" }`);
      expect(modal.detail).toMatch(/in your user settings, in place of the ANTHROPIC_BASE_URL entry there/);
      expect(modal.detail).toMatch(/No key or token is written/);
      expect(modal.detail, "the workspace's value wins there: said").toMatch(/This workspace sets claudeCode\.environmentVariables too/);
      expect(settingUpdates()).toEqual([
        {
          key: SETTING,
          value: [{ name: "CLAUDE_CODE_USE_BEDROCK", value: "0" }, entry, { name: "DISABLE_TELEMETRY", value: "1" }],
          target: fake.ConfigurationTarget.Global,
        },
      ]);
      expect(fake.config.workspace[SETTING], "the workspace's settings untouched").toEqual([{ name: "OTHER", value: "x" }]);
      expect(fake.shown.info.at(-1)).toMatch(/new sessions go through the gateway/);

      // Copied again: nothing to write, and said so.
      fake.shown.modals.length = 0;
      await copy("Claude Code", OFFER, WRITE);
      expect(fake.shown.modals).toEqual([]);
      expect(fake.shown.info.at(-1)).toMatch(/point at the gateway already/);
      expect(settingUpdates()).toHaveLength(1);
    });

    it("writes the URL alone, never a key or token, to an unset setting", async () => {
      await copy("Claude Code", OFFER, WRITE);
      expect(settingUpdates()).toEqual([{ key: SETTING, value: [{ name: "ANTHROPIC_BASE_URL", value: url() }], target: fake.ConfigurationTarget.Global }]);
      expect(JSON.stringify(settingUpdates()[0]!.value)).not.toMatch(/key|token|auth|secret/i);
      expect(fake.shown.modals[0]!.detail).not.toMatch(/in place of/);
    });

    it("writes nothing when the person declines, at either step", async () => {
      fake.config.user[SETTING] = [{ name: "ANTHROPIC_BASE_URL", value: "https://old.example" }];
      await copy("Claude Code", OFFER, undefined);
      expect(fake.shown.modals).toHaveLength(1);
      await copy("Claude Code", undefined, WRITE);
      expect(fake.shown.modals, "no button pressed: no modal").toHaveLength(1);
      expect(settingUpdates()).toEqual([]);
      expect(fake.config.user[SETTING]).toEqual([{ name: "ANTHROPIC_BASE_URL", value: "https://old.example" }]);
    });

    it("offers nothing without the Claude Code extension, nor for another agent, nor over a value that is not a list", async () => {
      fake.extensions.installed.clear();
      await copy("Claude Code", OFFER, WRITE);
      expect(fake.shown.info.at(-1)).toBe("Copied the setup for Claude Code.");
      // The extension's setting known (its schema's default) counts as the extension being here.
      fake.config.defaults[SETTING] = [];
      await copy("Codex", OFFER, WRITE);
      expect(fake.shown.info.at(-1)).toBe("Copied the setup for Codex.");
      fake.config.user[SETTING] = { ANTHROPIC_BASE_URL: "https://old.example" };
      await copy("Claude Code", OFFER, WRITE);
      expect(fake.shown.warnings.at(-1)).toMatch(/not a list .* left as it is/);
      expect(fake.shown.modals).toEqual([]);
      expect(settingUpdates()).toEqual([]);
    });
  });
});

describe("an entry of claudeCode.environmentVariables", () => {
  const entry = { name: "ANTHROPIC_BASE_URL", value: "http://127.0.0.1:4141/anthropic" };
  it("replaces the entries of its name where the first was, keeps every other (even malformed), or goes last", () => {
    expect(withEnvironmentEntry([{ name: "A", value: "1" }, "odd", { name: "ANTHROPIC_BASE_URL", value: "x" }, { name: "ANTHROPIC_BASE_URL", value: "y" }, { name: "B" }], entry)).toEqual([
      { name: "A", value: "1" },
      "odd",
      entry,
      { name: "B" },
    ]);
    expect(withEnvironmentEntry([{ name: "A", value: "1" }], entry)).toEqual([{ name: "A", value: "1" }, entry]);
    expect(entryText(entry)).toBe('{ "name": "ANTHROPIC_BASE_URL", "value": "http://127.0.0.1:4141/anthropic" }');
  });
});
