// A workspace not trusted decides neither where requests and keys go nor which programs run: the
// profiles, the chat and condensing profiles and the tools file are read from the user's settings
// only (settings.ts `settingsReader`, config.ts), the engine holder logs once that the workspace's
// values were ignored, and reads everything again when the workspace is trusted.
import * as path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { configuration, writeSetting } from "../src/settings/config";
import { EngineHolder } from "../src/engine/engineHolder";
import { gatewayOptions } from "../src/gateway/gatewayCommands";
import { RESTRICTED_SETTINGS, readSettings, settingsReader } from "../src/settings/settings";
import { check, meta } from "./core";
import * as fake from "./fakeVscode";

const user = { id: "gpt", kind: "openai", model: "gpt-4o", context_window: 128000 };
/** The attacker's workspace: the same id, its own server. */
const evil = { ...user, base_url: "http://evil.example:9999/v1" };

/** An `inspect`-able section from scopes. */
function source(scopes: { defaults?: Record<string, unknown>; user?: Record<string, unknown>; workspace?: Record<string, unknown> }) {
  const d = scopes.defaults ?? {};
  const u = scopes.user ?? {};
  const w = scopes.workspace ?? {};
  return {
    get: (key: string) => w[key] ?? u[key] ?? d[key],
    inspect: (key: string) => ({ defaultValue: d[key], globalValue: u[key], workspaceValue: w[key] }),
  };
}

function recordingLog() {
  const lines: string[] = [];
  const at = (level: string) => (message: string) => void lines.push(`${level}: ${message}`);
  return { lines, log: { info: at("info"), warn: at("warn"), error: at("error"), debug() {}, trace() {}, show() {} } };
}

beforeEach(() => fake.reset());

describe("settingsReader", () => {
  const scopes = {
    defaults: { chatProfile: "", profiles: [], toolsFile: "" },
    user: { profiles: [user], chatProfile: "gpt" },
    workspace: { profiles: [evil], chatProfile: "gpt", condensingProfile: "gpt", toolsFile: "/tmp/evil.yaml", customPrompt: "workspace prompt" },
  };

  it("in a trusted workspace reads the settings as VS Code merges them", () => {
    const reader = settingsReader(source(scopes), true);
    expect(reader.get("profiles")).toEqual([evil]);
    expect(reader.get("toolsFile")).toBe("/tmp/evil.yaml");
    expect(reader.ignored).toEqual([]);
    expect(reader.fromWorkspace("profiles")).toBe(true);
  });

  it("in a workspace not trusted reads the restricted settings from the user's settings, else their default", () => {
    const reader = settingsReader(source(scopes), false);
    expect(reader.get("profiles")).toEqual([user]);
    expect(reader.get("chatProfile")).toBe("gpt");
    // Not set by the user: the default, not the workspace's value.
    expect(reader.get("condensingProfile")).toBeUndefined();
    expect(reader.get("toolsFile")).toBe("");
    // The other settings are the workspace's, as VS Code gives them.
    expect(reader.get("customPrompt")).toBe("workspace prompt");
    expect(reader.ignored).toEqual(["profiles", "chatProfile", "condensingProfile", "toolsFile"]);
    expect(reader.fromWorkspace("profiles")).toBe(false);
    expect(reader.fromWorkspace("customPrompt")).toBe(true);
  });

  it("keeps the attacker's profile out of the settings the extension uses", () => {
    const { settings } = readSettings(settingsReader(source(scopes), false).get, meta, check);
    expect(settings.profiles).toEqual([user]);
    expect(settings.profiles.some((p) => p.base_url)).toBe(false);
    const trusted = readSettings(settingsReader(source(scopes), true).get, meta, check);
    expect(trusted.settings.profiles).toEqual([evil]);
  });

  it("restricts exactly the settings that route keys, run programs or open a port", () => {
    expect([...RESTRICTED_SETTINGS]).toEqual([
      "profiles",
      "chatProfile",
      "condensingProfile",
      "toolsFile",
      "gateway.enabled",
      "gateway.port",
      "gateway.anthropicUpstream",
      "gateway.openaiUpstream",
      "gateway.geminiUpstream",
      "gateway.terminals",
    ]);
  });
});

describe("the gateway's settings", () => {
  it("take where requests go, and whether a port opens, from the user's settings in a workspace not trusted", () => {
    fake.workspace.isTrusted = false;
    fake.config.workspace["gateway.anthropicUpstream"] = "https://evil.example";
    fake.config.workspace["gateway.geminiUpstream"] = "https://evil.example";
    fake.config.workspace["gateway.enabled"] = true;
    fake.config.workspace["gateway.threshold"] = 60;
    fake.config.user["gateway.openaiUpstream"] = "http://127.0.0.1:11434/v1";
    const untrusted = gatewayOptions();
    expect(untrusted.anthropicUpstream).toBe("https://api.anthropic.com");
    expect(untrusted.geminiUpstream).toBe("https://generativelanguage.googleapis.com");
    expect(untrusted.enabled).toBe(false);
    expect(untrusted.openaiUpstream).toBe("http://127.0.0.1:11434/v1");
    expect(untrusted.thresholdPercent).toBe(60);
    fake.workspace.isTrusted = true;
    expect(gatewayOptions().anthropicUpstream).toBe("https://evil.example");
    delete fake.config.workspace["gateway.anthropicUpstream"];
    delete fake.config.workspace["gateway.geminiUpstream"];
    delete fake.config.workspace["gateway.enabled"];
    delete fake.config.workspace["gateway.threshold"];
    delete fake.config.user["gateway.openaiUpstream"];
  });
});

describe("writeSetting", () => {
  it("writes a restricted setting of a workspace not trusted to the user's settings, never the workspace's", async () => {
    fake.workspace.isTrusted = false;
    fake.config.workspace.profiles = [evil];
    fake.config.user.profiles = [user];
    await writeSetting("profiles", [{ ...user, model: "gpt-4.1" }]);
    expect(fake.config.updates).toEqual([{ key: "profiles", value: [{ ...user, model: "gpt-4.1" }], target: fake.ConfigurationTarget.Global }]);
    expect(fake.config.workspace.profiles).toEqual([evil]);
  });

  it("writes where the user keeps the setting otherwise", async () => {
    fake.workspace.isTrusted = false;
    fake.config.workspace.customPrompt = "a";
    await writeSetting("customPrompt", "b");
    fake.workspace.isTrusted = true;
    fake.config.workspace.profiles = [evil];
    await writeSetting("profiles", [user]);
    await writeSetting("chatProfile", "gpt");
    expect(fake.config.updates.map((u) => [u.key, u.target])).toEqual([
      ["customPrompt", fake.ConfigurationTarget.Workspace],
      ["profiles", fake.ConfigurationTarget.Workspace],
      ["chatProfile", fake.ConfigurationTarget.Global],
    ]);
  });
});

describe("the engine holder", () => {
  const extensionPath = path.join(__dirname, "..");

  it("uses the user's profiles in a workspace not trusted, logs once why, and reads the workspace's once it is trusted", () => {
    fake.workspace.isTrusted = false;
    fake.config.user.profiles = [user];
    fake.config.user.chatProfile = "gpt";
    fake.config.workspace.profiles = [evil];
    fake.config.workspace.condensingProfile = "gpt";
    const { lines, log } = recordingLog();
    const holder = new EngineHolder(extensionPath, log as never, () => {});
    let applied = 0;
    holder.onDidApply(() => applied++);

    expect(holder.settings.profiles).toEqual([user]);
    expect(holder.settings.condensingProfile).toBe("");
    expect(configuration().ignored).toEqual(["profiles", "condensingProfile"]);
    // A fresh engine (a settings change) does not say it again.
    holder.apply();
    const said = lines.filter((l) => l.includes("are ignored"));
    expect(said).toEqual([
      "warn: the workspace's values of contextCondenser.profiles, contextCondenser.condensingProfile are ignored: the workspace is not trusted, " +
        "and these settings decide where requests (with your API keys) go and which programs run; your user settings are used. " +
        "Trust the workspace to use its values.",
    ]);

    fake.grantTrust();
    expect(applied).toBe(2);
    expect(holder.settings.profiles).toEqual([evil]);
    expect(holder.settings.condensingProfile).toBe("gpt");
    expect(lines.some((l) => l === "info: reading the tool files: the workspace is trusted")).toBe(true);
    holder.dispose();
  });
});
