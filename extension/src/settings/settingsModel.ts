// The settings panel's decisions, pure (no `vscode` import, so vitest runs it): what the panel
// shows, and what a change from the panel writes to `contextCondenser.*`. Every change is judged by
// the core (`check`, the engine's `checkSetting`) before anything is written; a refused change
// writes nothing and comes back as the message for its field.

import type {
  HostMetadata,
  LlmProfile,
  ProfileSettings,
  ProviderConfigUpdateInput,
  ProviderEntry,
  SettingsToHost,
  SettingsToWebview,
  ToolConfigError,
  ToolStatus,
} from "@context-condenser/protocol";
import { type Check, type Get, judge, PROFILE_KEYS, type SettingProblem, type Settings } from "./settings";

/** Values a provider's form marks `shared`, and the setting each lives in. */
export const SHARED_SETTINGS: Readonly<Record<string, "customPrompt" | "condensingProfile">> = {
  custom_prompt: "customPrompt",
  condensing_profile: "condensingProfile",
};

/** One write under `contextCondenser.`; `undefined` removes the setting. */
export interface Write {
  key: string;
  value: unknown;
}

export type Plan =
  | {
      ok: true;
      field: string;
      writes: Write[];
      /** A profile's id changed: its key moves with it. */
      renamed?: { from: string; to: string };
      /** A profile went: its key goes too. */
      removed?: string;
    }
  | { ok: false; field: string; message: string };

export type { Check };

type Change = Exclude<SettingsToHost, { type: "ready" | "setKey" | "clearKey" | "testConnection" | "error" }>;

/** A profile as the panel shows it: the settings' fields only. */
export function profileSettings(p: LlmProfile): ProfileSettings {
  const out: Record<string, unknown> = {};
  for (const k of PROFILE_KEYS) {
    const v = (p as unknown as Record<string, unknown>)[k];
    if (v !== undefined && v !== null) out[k] = v;
  }
  return out as ProfileSettings;
}

/** The panel's `state` message. */
export function panelState(input: {
  settings: Settings;
  problems: SettingProblem[];
  entries: ProviderEntry[];
  defaultProvider: string;
  keys: Record<string, boolean>;
  /** The core's limits and kinds (`engine.hostMetadata()`). */
  meta: HostMetadata;
  /** The CLI tools and where each was found (`engine.tools()`). */
  tools: ToolStatus[];
  /** The tool files that could not be used. */
  toolErrors: ToolConfigError[];
}): Extract<SettingsToWebview, { type: "state" }> {
  const { settings } = input;
  return {
    type: "state",
    providers: input.entries,
    defaultProvider: input.defaultProvider,
    auto: { ...settings.autoCondense },
    shared: { custom_prompt: settings.customPrompt, condensing_profile: settings.condensingProfile },
    profiles: settings.profiles.map(profileSettings),
    chatProfile: settings.chatProfile,
    keys: input.keys,
    problems: input.problems,
    limits: input.meta.limits,
    kinds: input.meta.kinds,
    tools: input.tools,
    toolErrors: input.toolErrors,
  };
}

const refuse = (field: string, message: string): Plan => ({ ok: false, field, message });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const idOf = (p: unknown) => (isObject(p) ? p.id : undefined);

/**
 * What a change from the panel writes, once the core has accepted it. `get` reads the settings as
 * stored: entries the extension could not use (shown as problems) are written back untouched, so
 * a change in the panel never drops what the user wrote by hand.
 */
export function planChange(change: Change, settings: Settings, check: Check, get: Get): Plan {
  const rawProviders = isObject(get("providers")) ? (get("providers") as Record<string, unknown>) : {};
  const rawProfiles: unknown[] = Array.isArray(get("profiles")) ? (get("profiles") as unknown[]) : [];
  const exists = (id: string) => rawProfiles.some((p) => idOf(p) === id);
  switch (change.type) {
    case "updateProvider": {
      const { id } = change;
      const current: ProviderConfigUpdateInput = isObject(rawProviders[id]) ? (rawProviders[id] as ProviderConfigUpdateInput) : {};
      const next: ProviderConfigUpdateInput = { ...current };
      let field = `provider.${id}`;
      if (change.enabled !== undefined) {
        next.enabled = change.enabled;
        field = `provider.${id}.enabled`;
      }
      if (change.priority !== undefined) {
        if (!Number.isInteger(change.priority)) return refuse(`provider.${id}.priority`, "priority must be a whole number");
        next.priority = change.priority;
        field = `provider.${id}.priority`;
      }
      if (change.config !== undefined) {
        const keys = Object.keys(change.config);
        const shared = keys.find((k) => k in SHARED_SETTINGS);
        if (shared) return refuse(`provider.${id}.config.${shared}`, `${shared} is shared: it is saved once for every provider`);
        const config: Record<string, unknown> = {
          ...(typeof current.config === "object" && current.config !== null ? (current.config as Record<string, unknown>) : {}),
        };
        for (const [k, v] of Object.entries(change.config)) {
          if (v === null || v === undefined) delete config[k];
          else config[k] = v;
        }
        next.config = config;
        if (keys.length === 1) field = `provider.${id}.config.${keys[0]}`;
      }
      const problem = judge(check, { setting: "provider", value: { id, update: next } });
      if (problem) return refuse(field, problem);
      return { ok: true, field, writes: [{ key: "providers", value: { ...rawProviders, [id]: next } }] };
    }
    case "setDefault": {
      const problem = judge(check, { setting: "default_provider", value: change.id });
      if (problem) return refuse("default", problem);
      return { ok: true, field: "default", writes: [{ key: "defaultProvider", value: change.id }] };
    }
    case "setShared": {
      const setting = SHARED_SETTINGS[change.key];
      const field = `shared.${change.key}`;
      if (!setting) return refuse(field, `there is no shared setting "${change.key}"`);
      const value = setting === "customPrompt" ? change.value.trim() : change.value;
      if (setting === "condensingProfile" && value !== "") {
        const profile = rawProfiles.find((p) => idOf(p) === value);
        if (profile === undefined) return refuse(field, `there is no LLM profile "${value}"`);
        // The core judges the choice: a `cli` profile's tool must be able to summarize.
        const problem = judge(check, { setting: "profile_use", value: { profile: profile as LlmProfile, used: "summarize" } });
        if (problem) return refuse(field, problem);
      }
      return { ok: true, field, writes: [{ key: setting, value: value === "" ? undefined : value }] };
    }
    case "setAuto": {
      const a = settings.autoCondense;
      const next = {
        enabled: change.enabled ?? a.enabled,
        threshold_percent: change.thresholdPercent ?? a.thresholdPercent,
        min_gain_percent: change.minGainPercent ?? a.minGainPercent,
      };
      const field =
        change.thresholdPercent !== undefined
          ? "auto.thresholdPercent"
          : change.minGainPercent !== undefined
            ? "auto.minGainPercent"
            : "auto.enabled";
      if (change.thresholdPercent !== undefined && !Number.isInteger(change.thresholdPercent)) {
        return refuse(field, `the threshold must be a whole number of percent, got ${change.thresholdPercent}`);
      }
      const problem = judge(check, { setting: "auto_condense", value: next });
      if (problem) return refuse(field, problem);
      const writes: Write[] = [];
      if (change.enabled !== undefined) writes.push({ key: "autoCondense.enabled", value: change.enabled });
      if (change.thresholdPercent !== undefined) writes.push({ key: "autoCondense.thresholdPercent", value: change.thresholdPercent });
      if (change.minGainPercent !== undefined) writes.push({ key: "autoCondense.minGainPercent", value: change.minGainPercent });
      return { ok: true, field, writes };
    }
    case "saveProfile": {
      const { profile, originalId } = change;
      const field = `profile.${originalId ?? "new"}`;
      if (originalId !== undefined && !exists(originalId)) {
        return refuse(field, `there is no LLM profile "${originalId}" any more`);
      }
      if (profile.id !== originalId && exists(profile.id)) {
        return refuse(field, `a profile "${profile.id}" already exists`);
      }
      const problem = judge(check, { setting: "profile", value: profile as LlmProfile });
      if (problem) return refuse(field, problem);
      // A profile in use must still serve its use (its tool changed to one that cannot).
      const id = originalId ?? profile.id;
      const uses = [settings.chatProfile === id && "chat", settings.condensingProfile === id && "summarize"] as const;
      for (const used of uses) {
        if (!used) continue;
        const wrong = judge(check, { setting: "profile_use", value: { profile: profile as LlmProfile, used } });
        if (wrong) return refuse(field, wrong);
      }
      const clean = profileSettings(profile as LlmProfile);
      const profiles = originalId === undefined ? [...rawProfiles, clean] : rawProfiles.map((p) => (idOf(p) === originalId ? clean : p));
      const writes: Write[] = [{ key: "profiles", value: profiles }];
      const renamed = originalId !== undefined && originalId !== profile.id ? { from: originalId, to: profile.id } : undefined;
      if (renamed) {
        if (settings.chatProfile === renamed.from) writes.push({ key: "chatProfile", value: renamed.to });
        if (settings.condensingProfile === renamed.from) writes.push({ key: "condensingProfile", value: renamed.to });
      }
      return { ok: true, field, writes, renamed };
    }
    case "removeProfile": {
      const field = `profile.${change.id}`;
      if (!exists(change.id)) return refuse(field, `there is no LLM profile "${change.id}"`);
      const writes: Write[] = [{ key: "profiles", value: rawProfiles.filter((p) => idOf(p) !== change.id) }];
      if (settings.chatProfile === change.id) writes.push({ key: "chatProfile", value: undefined });
      if (settings.condensingProfile === change.id) writes.push({ key: "condensingProfile", value: undefined });
      return { ok: true, field, writes, removed: change.id };
    }
  }
}
