// The `contextCondenser.*` settings, read and checked. Pure: no `vscode` import, so vitest runs it.
// The engine validates provider configurations itself; this module only turns settings into the
// calls that hand them over, and finds the LLM profile a call needs. The ranges, defaults and
// profile kinds come from the core (`engine.hostMetadata()`), never from copies here.

import type {
  AutoCondense,
  AutoSettings,
  HostMetadata,
  ProviderConfigUpdateInput,
  ProviderEntry,
  SettingChange,
  SettingProblem,
} from "@context-condenser/protocol";
import { LlmProfile } from "@context-condenser/protocol";

export type { SettingProblem };

export const SECTION = "contextCondenser";

/** Reads one setting under `contextCondenser.` (what `WorkspaceConfiguration.get` does). */
export type Get = (key: string) => unknown;

/**
 * The settings a workspace must not decide until it is trusted: which profile a request goes to
 * and where it points (`profiles`, `chatProfile`, `condensingProfile`: a stored key follows the
 * profile's id, so a workspace redefining a profile would receive the user's key), and which
 * programs run (`toolsFile`). package.json lists them as `restrictedConfigurations` too.
 */
export const RESTRICTED_SETTINGS = [
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
] as const;
const RESTRICTED = new Set<string>(RESTRICTED_SETTINGS);

/** What `WorkspaceConfiguration.inspect` says of a setting (the parts read here). */
export interface Inspected {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** The `contextCondenser` section as VS Code gives it (`getConfiguration(SECTION)`). */
export interface ConfigSource {
  get(key: string): unknown;
  inspect(key: string): Inspected | undefined;
}

export interface SettingsReader {
  /** Reads a setting as the extension may use it. */
  get: Get;
  /** The restricted settings whose workspace values were ignored (empty in a trusted workspace). */
  ignored: string[];
  /** Whether a setting's value is the workspace's (which only a trusted workspace gives). */
  fromWorkspace(key: string): boolean;
}

const setInWorkspace = (i: Inspected | undefined) => i?.workspaceValue !== undefined || i?.workspaceFolderValue !== undefined;

/**
 * The one way the extension reads its settings. In a trusted workspace, as VS Code merges them;
 * in one not trusted, the restricted settings from the user's settings only (else their
 * default), whatever the workspace's `.vscode/settings.json` says — VS Code leaves them out too,
 * but the keys must not depend on that alone.
 */
export function settingsReader(config: ConfigSource, trusted: boolean): SettingsReader {
  const restricted = (key: string) => !trusted && RESTRICTED.has(key);
  return {
    get: (key) => {
      if (!restricted(key)) return config.get(key);
      const i = config.inspect(key);
      return i?.globalValue ?? i?.defaultValue;
    },
    ignored: trusted ? [] : RESTRICTED_SETTINGS.filter((key) => setInWorkspace(config.inspect(key))),
    fromWorkspace: (key) => !restricted(key) && setInWorkspace(config.inspect(key)),
  };
}

export interface Settings {
  defaultProvider: string;
  providers: Record<string, ProviderConfigUpdateInput>;
  autoCondense: AutoSettings;
  customPrompt: string;
  profiles: LlmProfile[];
  chatProfile: string;
  condensingProfile: string;
}

/** The fields a profile may have in settings: the generated schema's, but the key's reference,
 *  which the host sets from SecretStorage and never reads from settings. */
export const PROFILE_KEYS: readonly string[] = Object.keys(LlmProfile.shape).filter((k) => k !== "api_key_ref");
const PROFILE_FIELDS = new Set<string>(PROFILE_KEYS);

/** The core's judge of a setting (the engine's `checkSetting`): why it is refused, or undefined. */
export type Check = (change: SettingChange) => string | undefined;

/** `check`'s verdict, a thrown engine error (an unreadable value) as a message too. */
export function judge(check: Check, change: SettingChange): string | undefined {
  try {
    return check(change) ?? undefined;
  } catch (e) {
    return e instanceof Error || (typeof e === "object" && e !== null && "message" in e)
      ? String((e as { message: unknown }).message)
      : String(e);
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Reads the settings, with the core's ranges and defaults (`meta`, from `engine.hostMetadata()`)
 * and its judge of a profile (`check`, the engine's `checkSetting`). Bad entries are left out and
 * reported; a profile that carries an API key is refused without repeating the key, which belongs
 * in the secret storage.
 */
export function readSettings(get: Get, meta: HostMetadata, check: Check): { settings: Settings; problems: SettingProblem[] } {
  const { limits } = meta;
  const problems: SettingProblem[] = [];
  const str = (key: string, fallback: string): string => {
    const v = get(key);
    if (v === undefined || v === null) return fallback;
    if (typeof v === "string") return v;
    problems.push({ setting: `${SECTION}.${key}`, message: "must be a string" });
    return fallback;
  };

  const providers: Record<string, ProviderConfigUpdateInput> = {};
  const rawProviders = get("providers") ?? {};
  if (isObject(rawProviders)) {
    for (const [id, entry] of Object.entries(rawProviders)) {
      if (isObject(entry)) providers[id] = entry as ProviderConfigUpdateInput;
      else problems.push({ setting: `${SECTION}.providers.${id}`, message: "must be an object" });
    }
  } else {
    problems.push({ setting: `${SECTION}.providers`, message: "must be an object keyed by provider id" });
  }

  const profiles: LlmProfile[] = [];
  const rawProfiles = get("profiles") ?? [];
  if (Array.isArray(rawProfiles)) {
    const seen = new Set<string>();
    rawProfiles.forEach((p, i) => {
      const where = `${SECTION}.profiles[${i}]`;
      const problem = profileProblem(p, seen, check);
      if (problem) problems.push({ setting: where, message: problem });
      else {
        profiles.push(p as LlmProfile);
        seen.add((p as LlmProfile).id);
      }
    });
  } else {
    problems.push({ setting: `${SECTION}.profiles`, message: "must be a list of profiles" });
  }

  const enabled = get("autoCondense.enabled");
  const threshold = get("autoCondense.thresholdPercent");
  const thresholdOk = typeof threshold === "number" && threshold >= limits.threshold_min && threshold <= limits.threshold_max;
  if (threshold !== undefined && !thresholdOk) {
    problems.push({
      setting: `${SECTION}.autoCondense.thresholdPercent`,
      message: `must be a number from ${limits.threshold_min} to ${limits.threshold_max}`,
    });
  }

  const minGain = get("autoCondense.minGainPercent");
  const minGainOk = typeof minGain === "number" && minGain >= 0 && minGain <= 100;
  if (minGain !== undefined && !minGainOk) {
    problems.push({ setting: `${SECTION}.autoCondense.minGainPercent`, message: "must be a number from 0 to 100" });
  }

  return {
    settings: {
      defaultProvider: str("defaultProvider", limits.default_provider),
      providers,
      autoCondense: {
        enabled: enabled !== false,
        thresholdPercent: thresholdOk ? threshold : limits.default_threshold_percent,
        minGainPercent: minGainOk ? minGain : limits.default_min_gain_percent,
      },
      customPrompt: str("customPrompt", ""),
      profiles,
      chatProfile: str("chatProfile", ""),
      condensingProfile: str("condensingProfile", ""),
    },
    problems,
  };
}

function profileProblem(p: unknown, seen: Set<string>, check: Check): string | undefined {
  if (!isObject(p)) return "must be an object";
  // A key in settings is refused before anything else reads the profile, without repeating it.
  for (const key of Object.keys(p)) {
    if (/key|secret|token$|password/i.test(key) && !PROFILE_FIELDS.has(key)) {
      return `has a field "${key}": API keys are not settings. Remove it and use "Context Condenser: Set API Key…"`;
    }
  }
  if (typeof p.id === "string" && seen.has(p.id)) return `repeats the id "${p.id}"`;
  // Everything else the core decides, as it does for the settings panel.
  return judge(check, { setting: "profile", value: p as LlmProfile });
}

/**
 * What the engine's registry should hold: each provider's settings, with the custom prompt put
 * into the configuration of the providers whose form has the shared `custom_prompt` field (those
 * that write summaries, by the core's `entries`) when the user gave one.
 */
export function providerUpdates(
  settings: Settings,
  entries: readonly Pick<ProviderEntry, "id" | "schema">[],
): Array<{ id: string; update: ProviderConfigUpdateInput }> {
  const ids = new Set(Object.keys(settings.providers));
  const prompt = settings.customPrompt.trim();
  const summarizers = new Set(
    entries.filter((e) => e.schema.some((f) => f.shared && f.key === "custom_prompt")).map((e) => e.id),
  );
  if (prompt) summarizers.forEach((id) => ids.add(id));
  return [...ids].map((id) => {
    const update: ProviderConfigUpdateInput = { ...settings.providers[id] };
    if (prompt && summarizers.has(id)) {
      const config = isObject(update.config) ? update.config : {};
      update.config = { ...config, custom_prompt: prompt };
    }
    return { id, update };
  });
}

/** The profile that writes summaries: the condensing profile, else the chat profile. */
export function condensingProfile(settings: Settings): LlmProfile | undefined {
  const id = settings.condensingProfile || settings.chatProfile;
  return settings.profiles.find((p) => p.id === id);
}

/** The automatic-condensation settings in the core's shape. */
export function autoCondense(settings: Settings): AutoCondense {
  const a = settings.autoCondense;
  return { enabled: a.enabled, threshold_percent: a.thresholdPercent, min_gain_percent: a.minGainPercent };
}

/** The profile chats use. */
export function chatProfile(settings: Settings): LlmProfile | undefined {
  return settings.profiles.find((p) => p.id === settings.chatProfile);
}
