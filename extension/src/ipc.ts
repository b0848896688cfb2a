// The messages between the extension and its webviews, typed once and validated on arrival on both
// sides. Core values (messages, chat tasks, agent events) keep the core's snake_case JSON shape;
// the envelopes are camelCase like any JS API.
//
// Both sides call `parseToHost` / `parseToWebview`: an invalid message is never acted on; the
// receiver logs it and answers with an `error` message naming what was wrong.

import { z } from "zod";

// ---- Core values ---------------------------------------------------------------------------

export const ContentBlock = z
  .object({ type: z.enum(["text", "tool_use", "tool_result", "image"]) })
  .passthrough();
export type ContentBlock = z.infer<typeof ContentBlock>;

export const Message = z.object({
  id: z.string(),
  ts: z.number().optional(),
  role: z.enum(["user", "assistant"]),
  content: z.array(ContentBlock),
  is_summary: z.boolean().optional(),
  condense_id: z.string().optional(),
  condense_parent: z.string().optional(),
  /** Set on an answer that was cut short: `cancelled` or the error kind. */
  interrupted: z.string().optional(),
});
export type Message = z.infer<typeof Message>;

export const Usage = z.object({ input_tokens: z.number(), output_tokens: z.number() });

export const ErrorInfo = z.object({ kind: z.string(), message: z.string() });
export type ErrorInfo = z.infer<typeof ErrorInfo>;

export const CondenseReason = z.enum(["threshold", "limit", "overflow", "manual"]);
export type CondenseReason = z.infer<typeof CondenseReason>;

/** One condensation applied to a chat, as its row in the chat shows it. */
export const CondensationRecord = z.object({
  condense_id: z.string(),
  provider_id: z.string(),
  reason: CondenseReason,
  automatic: z.boolean(),
  tokens_before: z.number(),
  tokens_after: z.number(),
  cost: z.number(),
  time_ms: z.number(),
  summary: z.string().nullable().optional(),
  at_ms: z.number(),
});
export type CondensationRecord = z.infer<typeof CondensationRecord>;

export const ChatTask = z.object({
  id: z.string(),
  title: z.string(),
  created_ms: z.number(),
  updated_ms: z.number(),
  conversation: z.object({
    format: z.string().optional(),
    system: z.string().optional(),
    messages: z.array(Message),
  }),
  condensations: z.array(CondensationRecord),
});
export type ChatTask = z.infer<typeof ChatTask>;

/** How full the context is, by the core's count. */
export const ContextStatus = z.object({
  tokens: z.number(),
  window: z.number(),
  percent: z.number(),
  /** The threshold that triggers a condensation; null when auto-condense is off. */
  threshold_percent: z.number().nullable(),
  /** window − max output − 10% buffer. */
  limit: z.number(),
  source: z.enum(["reported", "counted"]),
});
export type ContextStatus = z.infer<typeof ContextStatus>;

const id = z.string();
export const AgentEvent = z.discriminatedUnion("type", [
  z.object({ type: z.literal("ThinkingStart") }),
  z.object({ type: z.literal("UserMessage"), message: Message }),
  z.object({ type: z.literal("MessageStart"), id }),
  z.object({ type: z.literal("MessageContent"), id, delta: z.string() }),
  z.object({
    type: z.literal("MessageEnd"),
    id,
    interrupted: z.string().nullable().optional(),
    kept: z.boolean(),
    usage: Usage.nullable().optional(),
    finish_reason: z.string().nullable().optional(),
    cost: z.number(),
  }),
  z.object({ type: z.literal("ThinkingEnd") }),
  z.object({ type: z.literal("Error"), error: ErrorInfo, partial: z.string(), retryable: z.boolean() }),
  z.object({
    type: z.literal("CondenseStart"),
    reason: CondenseReason,
    provider: z.string(),
    tokens: z.number(),
    automatic: z.boolean(),
  }),
  z.object({
    type: z.literal("CondenseEnd"),
    condense_id: z.string().nullable().optional(),
    summary: z.string().nullable().optional(),
    metrics: z.record(z.string(), z.unknown()).nullable().optional(),
    record: CondensationRecord.nullable().optional(),
    error: ErrorInfo.nullable().optional(),
  }),
  z.object({ type: z.literal("CondenseSkipped"), reason: z.string(), tokens: z.number() }),
  z.object({ type: z.literal("StatusShutdown") }),
]);
export type AgentEvent = z.infer<typeof AgentEvent>;

// ---- Extension → webview -------------------------------------------------------------------

export const ChatSummary = z.object({
  id: z.string(),
  title: z.string(),
  updated_ms: z.number(),
  messages: z.number(),
});
export type ChatSummary = z.infer<typeof ChatSummary>;

export const ProfileOption = z.object({
  id: z.string(),
  model: z.string(),
  context_window: z.number(),
});
export type ProfileOption = z.infer<typeof ProfileOption>;

export const ToWebview = z.discriminatedUnion("type", [
  /** The whole state of the view: sent on `ready`, after every turn and every change. */
  z.object({
    type: z.literal("state"),
    task: ChatTask.nullable(),
    chats: z.array(ChatSummary),
    profiles: z.array(ProfileOption),
    profileId: z.string().nullable(),
    context: ContextStatus.nullable(),
    busy: z.boolean(),
  }),
  /** One agent event of the turn in flight, for streaming. */
  z.object({ type: z.literal("event"), taskId: z.string(), event: AgentEvent }),
  /** A request failed or was invalid. `draft`: the text of a message that could not be sent,
   *  for the input box, so that nothing typed is lost. */
  z.object({ type: z.literal("error"), message: z.string(), draft: z.string().optional() }),
]);
export type ToWebview = z.infer<typeof ToWebview>;

// ---- Webview → extension -------------------------------------------------------------------

export const ToHost = z.discriminatedUnion("type", [
  z.object({ type: z.literal("ready") }),
  z.object({ type: z.literal("send"), text: z.string().min(1).max(1_000_000) }),
  z.object({ type: z.literal("stop") }),
  z.object({ type: z.literal("retry") }),
  z.object({ type: z.literal("condense") }),
  z.object({ type: z.literal("undo"), condenseId: z.string().min(1) }),
  z.object({ type: z.literal("newChat") }),
  z.object({ type: z.literal("openChat"), id: z.string().min(1) }),
  z.object({ type: z.literal("selectProfile"), id: z.string().min(1) }),
  /** The webview got a message it could not accept; the extension logs it. */
  z.object({ type: z.literal("error"), message: z.string() }),
]);
export type ToHost = z.infer<typeof ToHost>;

// ---- The settings panel ----------------------------------------------------------------------
//
// The panel renders from what the core sends: the registry's providers, each with its
// configuration and the schema of its configuration form. Field ids name what a `rejected` message
// is about: `provider.<id>.enabled`, `provider.<id>.priority`, `provider.<id>.config.<key>`,
// `default`, `shared.<key>`, `auto.enabled`, `auto.thresholdPercent`, `auto.minGainPercent`,
// `profile.<id>` (`profile.` + the id being edited, or `profile.new` for an added one),
// `key.<profileId>`.

/** One field of a provider's configuration form, as the core describes it. */
export const ConfigField = z.object({
  /** The key in the provider's configuration (or in `shared` when `shared`). */
  key: z.string(),
  label: z.string(),
  description: z.string(),
  /** integer: a whole number in [min, max]; boolean: a switch; text: a string (`multiline` for a
   *  prompt); profile: the id of an LLM profile, "" for none. */
  kind: z.enum(["integer", "boolean", "text", "profile"]),
  min: z.number().nullable().optional(),
  max: z.number().nullable().optional(),
  /** Whether the field may be left empty (null: the provider's own default applies). */
  optional: z.boolean(),
  multiline: z.boolean().optional(),
  /** A unit shown after a number: "messages", "%", "bytes". */
  unit: z.string().nullable().optional(),
  /** What "reset to default" puts back; for a prompt, the built-in prompt's text. */
  default: z.unknown(),
  /** Stored once for every provider that uses it (in `shared`), not in this provider's config. */
  shared: z.boolean(),
});
export type ConfigField = z.infer<typeof ConfigField>;

/** One card of the panel: a registered provider, its registry entry and its form. */
export const ProviderEntry = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  enabled: z.boolean(),
  priority: z.number(),
  config: z.record(z.string(), z.unknown()),
  schema: z.array(ConfigField),
});
export type ProviderEntry = z.infer<typeof ProviderEntry>;

/** The kinds of LLM profile (the core's `LlmKind`; a test checks they agree). */
export const ProfileKind = z.enum(["openai", "anthropic", "openai-compatible", "manual"]);
export type ProfileKind = z.infer<typeof ProfileKind>;

/** The numbers the core owns (`engine.hostMetadata().limits`): the panel's ranges and defaults. */
export const Limits = z.object({
  threshold_min: z.number(),
  threshold_max: z.number(),
  default_threshold_percent: z.number(),
  default_min_gain_percent: z.number(),
  buffer_percent: z.number(),
  max_auto_per_minute: z.number(),
  default_provider: z.string(),
  default_max_output: z.number(),
});
export type Limits = z.infer<typeof Limits>;

/** A kind of LLM profile and the base URL used when a profile names none (null: it must name one,
 *  or uses no API). From `engine.hostMetadata().kinds`, in the order the panel lists them. */
export const KindMetadata = z.object({ kind: ProfileKind, default_base_url: z.string().nullable() });
export type KindMetadata = z.infer<typeof KindMetadata>;

/** An LLM profile as settings hold it (no key: keys live in the secret storage). */
export const ProfileSettings = z
  .object({
    id: z.string(),
    kind: ProfileKind,
    base_url: z.string().optional(),
    model: z.string(),
    context_window: z.number(),
    max_output: z.number().optional(),
    price_input_per_mtok: z.number().optional(),
    price_output_per_mtok: z.number().optional(),
    /** −1 or absent: the global threshold. */
    threshold_percent: z.number().optional(),
  })
  .strict();
export type ProfileSettings = z.infer<typeof ProfileSettings>;

export const SettingProblem = z.object({ setting: z.string(), message: z.string() });

export const AutoSettings = z.object({
  enabled: z.boolean(),
  thresholdPercent: z.number(),
  minGainPercent: z.number(),
});
export type AutoSettings = z.infer<typeof AutoSettings>;

export const ConnectionReport = z.object({
  latencyMs: z.number(),
  /** The model the server says answered (else the profile's). */
  model: z.string(),
  reply: z.string(),
});
export type ConnectionReport = z.infer<typeof ConnectionReport>;

export const SettingsToWebview = z.discriminatedUnion("type", [
  /** Everything the panel shows: sent on `ready` and after every change, wherever it came from
   *  (the panel or settings.json). */
  z.object({
    type: z.literal("state"),
    providers: z.array(ProviderEntry),
    defaultProvider: z.string(),
    auto: AutoSettings,
    /** Values shared by providers (`custom_prompt`, `condensing_profile`). */
    shared: z.record(z.string(), z.string()),
    profiles: z.array(ProfileSettings),
    chatProfile: z.string(),
    /** Whether each profile has a key in the secret storage. Never the key. */
    keys: z.record(z.string(), z.boolean()),
    /** Settings that settings.json holds but could not be used. */
    problems: z.array(SettingProblem),
    /** The core's ranges and defaults: the page checks what is typed against them. */
    limits: Limits,
    /** The kinds of LLM profile, with their default base URLs. */
    kinds: z.array(KindMetadata),
  }),
  /** A change was refused and not saved: the inline message for the field. */
  z.object({ type: z.literal("rejected"), field: z.string(), message: z.string() }),
  /** A change was saved. */
  z.object({ type: z.literal("accepted"), field: z.string() }),
  z.object({
    type: z.literal("testResult"),
    profileId: z.string(),
    report: ConnectionReport.optional(),
    error: ErrorInfo.optional(),
  }),
  z.object({ type: z.literal("error"), message: z.string() }),
]);
export type SettingsToWebview = z.infer<typeof SettingsToWebview>;

export const SettingsToHost = z.discriminatedUnion("type", [
  z.object({ type: z.literal("ready") }),
  /** Changes a provider's registry entry; `config` holds only the keys that change (null: back
   *  to the provider's default). */
  z.object({
    type: z.literal("updateProvider"),
    id: z.string().min(1),
    enabled: z.boolean().optional(),
    priority: z.number().optional(),
    config: z.record(z.string(), z.unknown()).optional(),
  }),
  z.object({ type: z.literal("setDefault"), id: z.string().min(1) }),
  z.object({ type: z.literal("setShared"), key: z.string().min(1), value: z.string().max(100_000) }),
  z.object({
    type: z.literal("setAuto"),
    enabled: z.boolean().optional(),
    thresholdPercent: z.number().optional(),
    minGainPercent: z.number().optional(),
  }),
  /** Adds a profile (no `originalId`) or replaces the one with `originalId`. */
  z.object({ type: z.literal("saveProfile"), profile: ProfileSettings, originalId: z.string().optional() }),
  z.object({ type: z.literal("removeProfile"), id: z.string().min(1) }),
  /** Stores a key in the secret storage. The panel clears its field at once and never shows it. */
  z.object({ type: z.literal("setKey"), profileId: z.string().min(1), key: z.string().min(1).max(10_000) }),
  z.object({ type: z.literal("clearKey"), profileId: z.string().min(1) }),
  z.object({ type: z.literal("testConnection"), profileId: z.string().min(1) }),
  z.object({ type: z.literal("error"), message: z.string() }),
]);
export type SettingsToHost = z.infer<typeof SettingsToHost>;

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

function parseWith<T>(schema: z.ZodType<T>, raw: unknown): Parsed<T> {
  const r = schema.safeParse(raw);
  if (r.success) return { ok: true, value: r.data };
  const issue = r.error.issues[0];
  const where = issue && issue.path.length ? issue.path.join(".") : "message";
  const type =
    raw && typeof raw === "object" && "type" in raw ? String((raw as { type: unknown }).type) : "?";
  return { ok: false, error: `invalid message (type ${type}): ${where}: ${issue?.message ?? "rejected"}` };
}

/** Checks a message that arrived at the extension. */
export const parseToHost = (raw: unknown): Parsed<ToHost> => parseWith(ToHost, raw);

/** Checks a message that arrived at a webview. */
export const parseToWebview = (raw: unknown): Parsed<ToWebview> => parseWith(ToWebview, raw);

/** Checks a message that arrived at the extension from the settings panel. */
export const parseSettingsToHost = (raw: unknown): Parsed<SettingsToHost> => parseWith(SettingsToHost, raw);

/** Checks a message that arrived at the settings panel. */
export const parseSettingsToWebview = (raw: unknown): Parsed<SettingsToWebview> => parseWith(SettingsToWebview, raw);
