// Builders of the settings panel's contract values for the tests. The providers are made up: the
// panel must render whatever the core describes.

import type {
  ConfigField,
  KindMetadata,
  Limits,
  ProviderEntry,
  SettingsSnapshot,
  SettingsToWebview,
  ToolStatus,
} from "../../src/protocol";

export const BUILT_IN = "Summarize the conversation.\nUse sections.";

export const field = (key: string, kind: ConfigField["kind"], extra: Partial<ConfigField> = {}): ConfigField => ({
  key,
  label: `The ${key} label`,
  description: `What ${key} does.`,
  kind,
  optional: false,
  default: null,
  shared: false,
  ...extra,
});

/** A provider no real registry has, with a field of each kind. */
export const smart = (extra: Partial<ProviderEntry> = {}): ProviderEntry => ({
  id: "smart",
  name: "Smart squeeze",
  description: "Squeezes cleverly.",
  enabled: true,
  priority: 7,
  config: { depth: 4, fast: false, style: "terse", preset: "aggressive" },
  schema: [
    field("depth", "integer", { min: 2, max: 9, unit: "levels", default: 3 }),
    field("fast", "boolean", { default: true }),
    field("style", "text", { default: "plain" }),
    field("custom_prompt", "text", { multiline: true, shared: true, default: BUILT_IN }),
    field("writer", "profile", { shared: true, default: "" }),
    field("spare", "integer", { min: 0, optional: true, default: 5 }),
    field("preset", "choice", { options: ["conservative", "balanced", "aggressive"], default: "balanced" }),
    field("mode", "choice", { options: ["fast", "thorough"], optional: true, default: "fast" }),
  ],
  ...extra,
});

export const plain = (extra: Partial<ProviderEntry> = {}): ProviderEntry => ({
  id: "plain",
  name: "Plain cut",
  description: "Cuts.",
  enabled: true,
  priority: 1,
  config: {},
  schema: [],
  ...extra,
});

/** The core's limits, as the extension sends them (engine.hostMetadata().limits). */
export const LIMITS: Limits = {
  threshold_min: 10,
  threshold_max: 100,
  default_threshold_percent: 80,
  default_min_gain_percent: 5,
  buffer_percent: 10,
  max_auto_per_minute: 3,
  default_provider: "lossless",
  default_max_output: 4096,
  max_conversation_bytes: 256 * 1024 * 1024,
  temperature_min: 0,
  temperature_max: 2,
};

/** The core's kinds of profile (engine.hostMetadata().kinds). */
export const KINDS: KindMetadata[] = [
  { kind: "openai", default_base_url: "https://api.openai.com/v1", default_context_window: 128_000, key: "required" },
  { kind: "anthropic", default_base_url: "https://api.anthropic.com", default_context_window: 200_000, key: "required" },
  { kind: "openai-compatible", default_base_url: null, default_context_window: 8_192, key: "optional" },
  { kind: "cli", default_base_url: null, default_context_window: 200_000, key: "none" },
  { kind: "manual", default_base_url: null, default_context_window: 128_000, key: "none" },
];

/** CLI tools as the extension sends them (engine.tools()): one found, one not. */
export const TOOLS: ToolStatus[] = [
  {
    id: "claude-code",
    name: "Claude Code",
    models: ["sonnet", "opus", "haiku"],
    capabilities: ["chat", "summarize"],
    contextWindow: 200_000,
    origin: "shipped",
    found: "/usr/local/bin/claude",
    searched: ["/home/dev/.claude/local/claude"],
  },
  {
    id: "mytool",
    name: "mytool",
    models: ["small", "large"],
    capabilities: ["summarize"],
    contextWindow: 8_000,
    origin: "/home/dev/tools.yaml",
    found: null,
    searched: ["`mytool` on the PATH"],
  },
];

export function settings(extra: Partial<SettingsSnapshot> = {}): SettingsSnapshot {
  return {
    providers: [smart(), plain()],
    defaultProvider: "smart",
    auto: { enabled: true, thresholdPercent: 80, minGainPercent: 5 },
    shared: { custom_prompt: "", writer: "" },
    profiles: [
      { id: "gpt", kind: "openai", model: "gpt-4o-mini", context_window: 128_000, threshold_percent: -1 },
      {
        id: "local",
        kind: "openai-compatible",
        base_url: "http://127.0.0.1:11434/v1",
        model: "qwen",
        context_window: 32_768,
        threshold_percent: 70,
      },
    ],
    chatProfile: "gpt",
    keys: { gpt: true, local: false },
    problems: [],
    limits: LIMITS,
    kinds: KINDS,
    tools: TOOLS,
    toolErrors: [],
    ...extra,
  };
}

export const settingsState = (s: SettingsSnapshot = settings()): SettingsToWebview => ({ type: "state", ...s });
