import { describe, expect, it } from "vitest";
import type { HostMetadata } from "@context-condenser/protocol";
import { autoCondense, chatProfile, condensingProfile, providerUpdates, readSettings as read } from "../src/settings/settings";
import { check, meta, newTestEngine } from "./core";

/** The real core's providers, as the engine lists them. */
const entries = newTestEngine().providerEntries();

const from = (values: Record<string, unknown>) => (key: string) => values[key];
/** The settings read with the real core's limits. */
const readSettings = (get: (key: string) => unknown) => read(get, meta, check);
const profile = { id: "gpt", kind: "openai", model: "gpt-4o", context_window: 128000 };

describe("readSettings", () => {
  it("gives the defaults for empty settings", () => {
    const { settings, problems } = readSettings(from({}));
    expect(problems).toEqual([]);
    expect(settings.defaultProvider).toBe("smart");
    expect(settings.autoCondense).toEqual({ enabled: true, thresholdPercent: 80, minGainPercent: 5 });
    expect(settings.profiles).toEqual([]);
  });

  it("keeps good profiles and reports bad ones by index", () => {
    const { settings, problems } = readSettings(
      from({ profiles: [profile, { ...profile, id: "" }, { ...profile, kind: "nope", id: "x" }, profile] }),
    );
    expect(settings.profiles).toEqual([profile]);
    expect(problems.map((p) => p.setting)).toEqual([
      "contextCondenser.profiles[1]",
      "contextCondenser.profiles[2]",
      "contextCondenser.profiles[3]",
    ]);
    expect(problems[2].message).toMatch(/repeats the id/);
  });

  it("refuses a profile that carries an API key, without repeating the key", () => {
    const canary = "sk-canary-settings-0000";
    const { settings, problems } = readSettings(from({ profiles: [{ ...profile, api_key: canary }] }));
    expect(settings.profiles).toEqual([]);
    expect(problems[0].message).toMatch(/API keys are not settings/);
    expect(JSON.stringify(problems)).not.toContain(canary);
  });

  it("reports a threshold out of range and keeps the default", () => {
    const { settings, problems } = readSettings(from({ "autoCondense.thresholdPercent": 5 }));
    expect(settings.autoCondense.thresholdPercent).toBe(80);
    expect(problems).toEqual([
      { setting: "contextCondenser.autoCondense.thresholdPercent", message: "must be a number from 10 to 100" },
    ]);
    expect(readSettings(from({ "autoCondense.thresholdPercent": 10 })).problems).toEqual([]);
    expect(readSettings(from({ "autoCondense.thresholdPercent": 101 })).problems).toHaveLength(1);
  });

  it("takes the ranges, the defaults and the kinds from the core it is given", () => {
    const other: HostMetadata = {
      limits: { ...meta.limits, threshold_min: 20, threshold_max: 90, default_threshold_percent: 70, default_min_gain_percent: 3, default_provider: "truncation" },
      kinds: meta.kinds.filter((k) => k.kind !== "manual"),
    };
    const { settings, problems } = read(
      from({
        "autoCondense.thresholdPercent": 15,
        profiles: [
          { ...profile, id: "low", threshold_percent: 15 },
          { ...profile, id: "by-hand", kind: "manual" },
        ],
      }),
      other,
      check,
    );
    expect(settings.defaultProvider).toBe("truncation");
    expect(settings.autoCondense).toEqual({ enabled: true, thresholdPercent: 70, minGainPercent: 3 });
    // The global threshold by the metadata given; the profiles by the core's own judge.
    expect(problems.map((p) => p.message)).toEqual(["must be a number from 20 to 90"]);
  });

  it("checks the minimum gain and a profile's own threshold, and hands the core its shape", () => {
    const { settings, problems } = readSettings(
      from({
        "autoCondense.minGainPercent": -3,
        profiles: [
          { ...profile, id: "own", threshold_percent: 60 },
          { ...profile, id: "global", threshold_percent: -1 },
          { ...profile, id: "bad", threshold_percent: 150 },
        ],
      }),
    );
    expect(settings.profiles.map((p) => p.id)).toEqual(["own", "global"]);
    expect(problems.map((p) => p.setting)).toEqual([
      "contextCondenser.profiles[2]",
      "contextCondenser.autoCondense.minGainPercent",
    ]);
    expect(problems[0].message).toBe("profile 'bad': threshold_percent must be -1 (the global value) or 10 to 100, got 150");
    expect(autoCondense(settings)).toEqual({ enabled: true, threshold_percent: 80, min_gain_percent: 5 });
  });
});

describe("a profile's generation settings", () => {
  it("keeps valid chat and condense settings for the core", () => {
    const withParams = { ...profile, chat: { temperature: 1.2 }, condense: { max_output_tokens: 4000, temperature: 0, max_input_tokens: 20000 } };
    const { settings, problems } = readSettings(from({ profiles: [withParams] }));
    expect(problems).toEqual([]);
    expect(settings.profiles).toEqual([withParams]);
  });

  it("reports a budget not below the window, a temperature out of range and unknown fields, by index", () => {
    const { settings, problems } = readSettings(
      from({
        profiles: [
          { ...profile, id: "a", chat: { max_output_tokens: 128000 } },
          { ...profile, id: "b", condense: { temperature: -0.1 } },
          { ...profile, id: "c", condense: { top_p: 0.9 } },
          { ...profile, id: "d", chat: 7 },
          { ...profile, id: "e", chat: { max_output_tokens: 1.5 } },
        ],
      }),
    );
    expect(settings.profiles).toEqual([]);
    // The core's judge (LlmProfile::validate and its reading of the value), the words its own.
    const messages = problems.map((p) => p.message);
    expect(messages.slice(0, 2)).toEqual([
      "profile 'a': chat: the output budget (128000) must be below the context window (128000)",
      "profile 'b': condense: the temperature must be a number from 0 to 2",
    ]);
    expect(messages[2]).toMatch(/condense\.top_p: unknown field `top_p`, expected one of `max_input_tokens`, `max_output_tokens`, `temperature`/);
    expect(messages[3]).toMatch(/value\.chat: invalid type: integer `7`/);
    expect(messages[4]).toMatch(/chat\.max_output_tokens: invalid type: floating point `1\.5`/);
  });
});

describe("providerUpdates", () => {
  it("hands the custom prompt to every provider whose form has the shared field, by the core's entries", () => {
    const { settings } = readSettings(from({ customPrompt: "Be brief." }));
    const field = entries.find((e) => e.id === "native")!.schema.find((f) => f.key === "custom_prompt")!;
    const ids = providerUpdates(settings, [{ id: "squeeze", schema: [field] }, { id: "cut", schema: [] }]).map((u) => u.id);
    expect(ids).toEqual(["squeeze"]);
  });

  it("passes provider settings through", () => {
    const { settings } = readSettings(from({ providers: { truncation: { enabled: false } } }));
    expect(providerUpdates(settings, entries)).toEqual([{ id: "truncation", update: { enabled: false } }]);
  });

  it("puts the custom prompt into the summary providers' config", () => {
    const { settings } = readSettings(
      from({ customPrompt: " Summarize tersely. ", providers: { native: { config: { keep_last: 5 } } } }),
    );
    const updates = Object.fromEntries(providerUpdates(settings, entries).map((u) => [u.id, u.update]));
    expect(updates.native).toEqual({ config: { keep_last: 5, custom_prompt: "Summarize tersely." } });
    expect(updates.manual).toEqual({ config: { custom_prompt: "Summarize tersely." } });
    expect(updates.smart).toEqual({ config: { custom_prompt: "Summarize tersely." } });
    // The providers whose form has no custom prompt get none.
    expect(updates.lossless).toBeUndefined();
    expect(updates.truncation).toBeUndefined();
  });
});

describe("profiles", () => {
  it("condenses with the condensing profile, else the chat profile", () => {
    const other = { ...profile, id: "cheap", model: "gpt-4o-mini" };
    const { settings } = readSettings(from({ profiles: [profile, other], chatProfile: "gpt" }));
    expect(chatProfile(settings)?.id).toBe("gpt");
    expect(condensingProfile(settings)?.id).toBe("gpt");
    const { settings: s2 } = readSettings(from({ profiles: [profile, other], chatProfile: "gpt", condensingProfile: "cheap" }));
    expect(condensingProfile(s2)?.id).toBe("cheap");
    expect(condensingProfile(readSettings(from({})).settings)).toBeUndefined();
  });
});
