// The settings panel's decisions with the real core judging every change (the wasm package the
// extension ships, loaded in Node).
import { describe, expect, it } from "vitest";
import type { CondenseEngine } from "../wasm/condense_wasm";
import { parseSettingsToWebview } from "@context-condenser/protocol";
import { panelState, planChange } from "../src/settings/settingsModel";
import { readSettings } from "../src/settings/settings";
import { meta, newTestEngine } from "./core";

const engine: CondenseEngine = newTestEngine();
const check = (c: Parameters<CondenseEngine["checkSetting"]>[0]) => engine.checkSetting(c);

const gpt = { id: "gpt", kind: "openai" as const, model: "gpt-4o", context_window: 128000 };
const local = { id: "local", kind: "openai-compatible" as const, base_url: "http://127.0.0.1:11434/v1", model: "llama3", context_window: 8192, max_output: 1024 };

function world(values: Record<string, unknown>) {
  const get = (key: string) => values[key];
  const { settings } = readSettings(get, meta, check);
  return { settings, get };
}

describe("planChange", () => {
  it("writes a provider's switch and keeps its other settings", () => {
    const { settings, get } = world({ providers: { truncation: { priority: 5, config: { keep_last: 4 } } } });
    const plan = planChange({ type: "updateProvider", id: "truncation", enabled: false }, settings, check, get);
    expect(plan).toEqual({
      ok: true,
      field: "provider.truncation.enabled",
      writes: [{ key: "providers", value: { truncation: { priority: 5, enabled: false, config: { keep_last: 4 } } } }],
    });
  });

  it("merges one config key, null puts back the default, and the core refuses a negative N", () => {
    const { settings, get } = world({ providers: { truncation: { config: { keep_last: 4, target_percent: 30 } } } });
    const plan = planChange({ type: "updateProvider", id: "truncation", config: { target_percent: null } }, settings, check, get);
    expect(plan.ok && plan.writes[0].value).toEqual({ truncation: { config: { keep_last: 4 } } });
    const bad = planChange({ type: "updateProvider", id: "truncation", config: { keep_last: -2 } }, settings, check, get);
    expect(bad).toEqual({
      ok: false,
      field: "provider.truncation.config.keep_last",
      message: expect.stringContaining("keep_last must be a whole number of 0 or more, got -2"),
    });
  });

  it("refuses an unknown provider, as default or as an entry", () => {
    const { settings, get } = world({});
    const a = planChange({ type: "setDefault", id: "smarter" }, settings, check, get);
    expect(a.ok).toBe(false);
    expect(!a.ok && a.message).toMatch(/provider 'smarter' not found; known providers: lossless, manual, mask, native, smart, superseded, truncation/);
    const b = planChange({ type: "updateProvider", id: "smarter", enabled: true }, settings, check, get);
    expect(!b.ok && b.field).toBe("provider.smarter.enabled");
    const ok = planChange({ type: "setDefault", id: "truncation" }, settings, check, get);
    expect(ok).toEqual({ ok: true, field: "default", writes: [{ key: "defaultProvider", value: "truncation" }] });
  });

  it("refuses a threshold of 150 or 2.5, and writes a good one", () => {
    const { settings, get } = world({});
    const high = planChange({ type: "setAuto", thresholdPercent: 150 }, settings, check, get);
    expect(high).toEqual({ ok: false, field: "auto.thresholdPercent", message: "the threshold must be 10 to 100 percent, got 150" });
    expect(planChange({ type: "setAuto", thresholdPercent: 2.5 }, settings, check, get).ok).toBe(false);
    const good = planChange({ type: "setAuto", thresholdPercent: 65 }, settings, check, get);
    expect(good).toEqual({ ok: true, field: "auto.thresholdPercent", writes: [{ key: "autoCondense.thresholdPercent", value: 65 }] });
  });

  it("refuses a malformed base URL and a duplicate id; adds, renames and removes profiles", () => {
    const { settings, get } = world({ profiles: [gpt, local], chatProfile: "local" });
    const bad = planChange({ type: "saveProfile", profile: { ...local, id: "new", base_url: "127.0.0.1:8080" } }, settings, check, get);
    expect(bad).toEqual({ ok: false, field: "profile.new", message: expect.stringMatching(/base_url must start with http:\/\/ or https:\/\//) });
    const dup = planChange({ type: "saveProfile", profile: { ...local, id: "gpt" }, originalId: "local" }, settings, check, get);
    expect(!dup.ok && dup.message).toBe('a profile "gpt" already exists');
    const threshold = planChange({ type: "saveProfile", profile: { ...local, threshold_percent: 5 }, originalId: "local" }, settings, check, get);
    expect(!threshold.ok && threshold.message).toMatch(/threshold_percent must be -1 \(the global value\) or 10 to 100/);

    const renamed = planChange({ type: "saveProfile", profile: { ...local, id: "ollama", threshold_percent: 60 }, originalId: "local" }, settings, check, get);
    expect(renamed).toEqual({
      ok: true,
      field: "profile.local",
      writes: [
        { key: "profiles", value: [gpt, { ...local, id: "ollama", threshold_percent: 60 }] },
        { key: "chatProfile", value: "ollama" },
      ],
      renamed: { from: "local", to: "ollama" },
    });
    const removed = planChange({ type: "removeProfile", id: "local" }, settings, check, get);
    expect(removed).toEqual({
      ok: true,
      field: "profile.local",
      writes: [{ key: "profiles", value: [gpt] }, { key: "chatProfile", value: undefined }],
      removed: "local",
    });
  });

  it("saves a profile's chat and condense generation settings, refusing ones the model cannot take", () => {
    const { settings, get } = world({ profiles: [gpt, local], chatProfile: "local" });
    const params = { chat: { max_output_tokens: 2000, temperature: 0.7 }, condense: { max_output_tokens: 3000, temperature: 0.1 } };
    const saved = planChange({ type: "saveProfile", profile: { ...local, ...params }, originalId: "local" }, settings, check, get);
    expect(saved).toEqual({ ok: true, field: "profile.local", writes: [{ key: "profiles", value: [gpt, { ...local, ...params }] }] });
    // What was written reads back as the profile the core gets, with its phases.
    const { settings: after, problems } = readSettings((k) => (k === "profiles" ? [gpt, { ...local, ...params }] : undefined), meta, check);
    expect(problems).toEqual([]);
    expect(after.profiles[1]).toMatchObject(params);
    engine.checkSetting({ setting: "profile", value: after.profiles[1] });

    const tooLong = planChange(
      { type: "saveProfile", profile: { ...local, condense: { max_output_tokens: 8192 } }, originalId: "local" },
      settings,
      check,
      get,
    );
    expect(tooLong).toEqual({
      ok: false,
      field: "profile.local",
      message: "profile 'local': condense: the output budget (8192) must be below the context window (8192)",
    });
    const hot = planChange({ type: "saveProfile", profile: { ...local, chat: { temperature: 3 } }, originalId: "local" }, settings, check, get);
    expect(!hot.ok && hot.message).toBe("profile 'local': chat: the temperature must be a number from 0 to 2");
  });

  it("never drops a hand-written entry it could not use", () => {
    const broken = { id: "broken", kind: "nope", model: "m", context_window: 1 };
    const { settings, get } = world({ profiles: [gpt, broken] });
    expect(settings.profiles).toEqual([gpt]);
    const plan = planChange({ type: "saveProfile", profile: { ...local } }, settings, check, get);
    expect(plan.ok && plan.writes[0].value).toEqual([gpt, broken, local]);
  });

  it("stores shared values in their own settings; an unknown condensing profile is refused", () => {
    const { settings, get } = world({ profiles: [gpt] });
    expect(planChange({ type: "setShared", key: "custom_prompt", value: "  Be brief.  " }, settings, check, get)).toEqual({
      ok: true,
      field: "shared.custom_prompt",
      writes: [{ key: "customPrompt", value: "Be brief." }],
    });
    expect(planChange({ type: "setShared", key: "custom_prompt", value: "" }, settings, check, get)).toMatchObject({
      writes: [{ key: "customPrompt", value: undefined }],
    });
    expect(planChange({ type: "setShared", key: "condensing_profile", value: "ghost" }, settings, check, get).ok).toBe(false);
    expect(planChange({ type: "updateProvider", id: "native", config: { custom_prompt: "x" } }, settings, check, get).ok).toBe(false);
  });
});

describe("a profile chosen for a use", () => {
  // A tool that can only summarize, from a tools file as a user writes it.
  const tools = newTestEngine();
  const errors = tools.setToolSources([
    {
      origin: "tools.yaml",
      text: "tools:\n  notes:\n    binary: notes\n    command_template: \"{binary} {prompt}\"\n    prompt_via: argument\n    models: [m]\n    capabilities: [summarize]\n    output: { format: text }\n",
    },
  ]);
  const checkTools = (c: Parameters<CondenseEngine["checkSetting"]>[0]) => tools.checkSetting(c);
  const notes = { id: "notes-cli", kind: "cli" as const, tool: "notes", model: "m", context_window: 8192 };

  it("refuses a condensing profile whose tool cannot summarize, and takes one that can", () => {
    expect(errors).toEqual([]);
    const chatOnly = newTestEngine();
    expect(
      chatOnly.setToolSources([
        {
          origin: "tools.yaml",
          text: "tools:\n  notes:\n    binary: notes\n    command_template: \"{binary} {prompt}\"\n    prompt_via: argument\n    models: [m]\n    capabilities: [chat]\n    output: { format: text }\n",
        },
      ]),
    ).toEqual([]);
    const { settings, get } = world({ profiles: [gpt, notes] });
    const refused = planChange({ type: "setShared", key: "condensing_profile", value: "notes-cli" }, settings, (c) => chatOnly.checkSetting(c), get);
    expect(refused).toEqual({
      ok: false,
      field: "shared.condensing_profile",
      message:
        "profile 'notes-cli': tool 'notes' cannot be the condensing model: its entry's capabilities are [chat], without summarize; choose a profile whose tool lists summarize",
    });
    expect(planChange({ type: "setShared", key: "condensing_profile", value: "notes-cli" }, settings, checkTools, get)).toEqual({
      ok: true,
      field: "shared.condensing_profile",
      writes: [{ key: "condensingProfile", value: "notes-cli" }],
    });
    expect(planChange({ type: "setShared", key: "condensing_profile", value: "gpt" }, settings, checkTools, get).ok).toBe(true);
  });

  it("refuses to save the chat profile with a tool that cannot chat", () => {
    const { settings, get } = world({ profiles: [gpt, { ...notes, tool: "claude-code", model: "sonnet" }], chatProfile: "notes-cli" });
    const plan = planChange({ type: "saveProfile", profile: notes, originalId: "notes-cli" }, settings, checkTools, get);
    expect(plan).toMatchObject({ ok: false, field: "profile.notes-cli", message: expect.stringContaining("cannot be the chat model") });
    // Not the chat profile: saved.
    const other = world({ profiles: [gpt, { ...notes, tool: "claude-code", model: "sonnet" }], chatProfile: "gpt" });
    expect(planChange({ type: "saveProfile", profile: notes, originalId: "notes-cli" }, other.settings, checkTools, other.get).ok).toBe(true);
  });

  it("the core says why a cli profile cannot be the chat profile", () => {
    expect(tools.checkSetting({ setting: "profile_use", value: { profile: notes, used: "chat" } })).toMatch(
      /^profile 'notes-cli': tool 'notes' cannot be the chat model/,
    );
    expect(tools.checkSetting({ setting: "profile_use", value: { profile: gpt, used: "chat" } })).toBeUndefined();
  });
});

describe("panelState", () => {
  it("renders from the core's registry and says only whether keys are set", () => {
    const { settings } = world({ profiles: [gpt], customPrompt: "Be brief." });
    const state = panelState({
      settings,
      problems: [],
      entries: engine.providerEntries(),
      defaultProvider: engine.defaultProvider,
      keys: { gpt: true },
      meta: engine.hostMetadata(),
      tools: engine.tools(),
      toolErrors: [{ origin: "/home/u/tools.yaml", line: 3, column: 9, message: "expected string scalar" }],
    });
    expect(state.providers.map((p) => p.id)).toEqual(["native", "lossless", "truncation", "manual", "superseded", "mask", "smart"]);
    expect(state.defaultProvider).toBe("smart");
    expect(state.shared).toEqual({ custom_prompt: "Be brief.", condensing_profile: "" });
    expect(state.keys).toEqual({ gpt: true });
    expect(JSON.stringify(state)).not.toMatch(/apiKey|api_key_ref/);
    // The page checks with the core's limits and shows the core's base URLs.
    expect(state.limits).toEqual(meta.limits);
    expect(state.kinds).toEqual(meta.kinds);
    // The CLI tools the core knows, for the tool list and the cli profile editor.
    expect(state.tools.map((t) => t.id)).toEqual(["claude-code", "codex", "gemini"]);
    expect(state.toolErrors[0].line).toBe(3);
    expect(parseSettingsToWebview(state)).toEqual({ ok: true, value: state });
  });
});
