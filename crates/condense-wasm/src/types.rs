//! The TypeScript types of the values that cross the boundary, emitted into the generated
//! `.d.ts`. They mirror the core's serde shapes; the extension's `tsc` checks its use of them,
//! and the Node tests check real values against them.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** What the host lends the engine. */
export interface Host {
  /** Sends a request; the Response-like answer's body is a ReadableStream of bytes. */
  fetch(request: HttpRequest, signal: AbortSignal): Promise<ResponseLike>;
  /** Milliseconds, monotonic. */
  now(): number;
  /** One log line; never given secrets. */
  log(level: "info" | "warn" | "error", message: string): void;
  /** Milliseconds a response may go without a byte (default 60000). */
  readTimeoutMs?: number;
}

export interface HttpRequest {
  method: string;
  url: string;
  /** May hold an API key: never log them. */
  headers: Record<string, string>;
  body: string;
}

export interface ResponseLike {
  status: number;
  headers: Iterable<[string, string]> | Record<string, string>;
  body: ReadableStream<Uint8Array> | null;
}

export type Role = "user" | "assistant";

export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: unknown }
  | { type: "tool_result"; tool_use_id: string; content: string | Array<{ type: "text"; text: string } | { type: "image"; source: unknown }>; is_error?: boolean }
  | { type: "image"; source: { type: "base64"; media_type: string; data: string } | { type: "url"; url: string } };

export interface Message {
  id: string;
  ts?: number;
  role: Role;
  content: ContentBlock[];
  is_summary?: boolean;
  condense_id?: string;
  condense_parent?: string;
  /** Set on an answer cut short: `cancelled` or the error kind. */
  interrupted?: string;
}

export interface Conversation {
  format?: string;
  system?: string;
  messages: Message[];
}

export interface ProviderInfo {
  id: string;
  name: string;
  description: string;
  enabled: boolean;
  priority: number;
}

export interface ProviderConfig {
  enabled: boolean;
  priority: number;
  config: unknown;
}

export interface ProviderConfigUpdate {
  enabled?: boolean;
  priority?: number;
  config?: unknown;
}

/** One field of a provider's configuration form. */
export interface ConfigField {
  key: string;
  label: string;
  description: string;
  kind: "integer" | "boolean" | "text" | "profile";
  min?: number;
  max?: number;
  optional: boolean;
  multiline?: boolean;
  unit?: string;
  default: unknown;
  /** Stored once for every provider that uses it, outside the provider's configuration. */
  shared: boolean;
}

/** A settings-panel card: a registered provider, its registry entry and its form. */
export interface ProviderEntry {
  id: string;
  name: string;
  description: string;
  enabled: boolean;
  priority: number;
  config: Record<string, unknown>;
  schema: ConfigField[];
}

/** A setting about to be saved, for `checkSetting`. */
export type SettingChange =
  | { setting: "default_provider"; value: string }
  | { setting: "provider"; value: { id: string; update: ProviderConfigUpdate } }
  | { setting: "auto_condense"; value: AutoCondense }
  | { setting: "profile"; value: LlmProfile };

/** What Test Connection found. */
export interface ConnectionReport {
  latencyMs: number;
  /** The model the server says answered; the profile's when it did not say. */
  model: string;
  reply: string;
  usage?: Usage;
}

export interface ErrorInfo {
  kind: string;
  message: string;
}

export interface Metrics {
  provider_id: string;
  time_elapsed_ms: number;
  tokens_saved?: number;
  [extra: string]: unknown;
}

export interface CondensationResult {
  messages: Message[];
  summary: string | null;
  cost: number;
  new_context_tokens: number | null;
  error: ErrorInfo | null;
  metrics: Metrics | null;
}

/** A result that is also a conversation: the system prompt is put back. */
export interface CondensationDocument extends CondensationResult {
  system?: string;
}

export interface UndoResult {
  condense_id: string;
  conversation: Conversation;
}

export interface TokenReport {
  model: string;
  encoding: string;
  total_tokens: number;
  messages: Array<{ id: string; tokens: number }>;
}

export interface GenerationParams {
  max_input_tokens?: number | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
}

export type LlmKind = "openai" | "anthropic" | "openai-compatible" | "manual";

/** The numbers the core owns (condense_core::limits::Limits). */
export interface Limits {
  /** The lowest threshold, in percent, globally or per profile. */
  threshold_min: number;
  /** The highest threshold. */
  threshold_max: number;
  /** The threshold when the settings name none. */
  default_threshold_percent: number;
  /** The minimum gain of an automatic condensation, in percent of the window, by default. */
  default_min_gain_percent: number;
  /** The share of the window kept free on top of the longest answer. */
  buffer_percent: number;
  /** Automatic condensations allowed in any minute. */
  max_auto_per_minute: number;
  /** The provider used when the settings name none. */
  default_provider: string;
  /** The longest answer of a profile that names none, in tokens. */
  default_max_output: number;
}

/** One kind of LLM profile: its default base URL, null when a profile must name one or uses no API. */
export interface KindMetadata {
  kind: LlmKind;
  default_base_url: string | null;
}

/** What a host reads and checks its settings with (`engine.hostMetadata()`). */
export interface HostMetadata {
  limits: Limits;
  /** Every kind, in the order a settings panel lists them. */
  kinds: KindMetadata[];
}

export interface LlmProfile {
  id: string;
  kind: LlmKind;
  base_url?: string | null;
  model: string;
  context_window: number;
  max_output?: number;
  price_input_per_mtok?: number;
  price_output_per_mtok?: number;
  api_key_ref?: string | null;
  /** Auto-condense threshold for chats with this profile; -1 or absent: the global one. */
  threshold_percent?: number | null;
  chat?: GenerationParams;
  condense?: GenerationParams;
}

/** An LLM to call: a profile, and the key the host read for it from its secret storage. */
export interface LlmTarget {
  profile: LlmProfile;
  apiKey?: string;
  maxRetries?: number;
}

export interface CondenseOptions {
  /** A provider id; the default provider when absent. */
  provider?: string;
  targetTokens?: number;
  keepLast?: number;
  isAutomatic?: boolean;
  /** The provider's configuration for this call; the registry's when absent. */
  config?: unknown;
  /** The model whose tokenizer counts (default: the LLM's model, else gpt-4o). */
  model?: string;
  /** The LLM that writes summaries, for the providers that need one. */
  llm?: LlmTarget;
}

export interface ChatMessage {
  role: "user" | "assistant";
  content: string;
}

export interface PromptBundle {
  system_context?: string;
  request?: string;
  output_instructions?: string;
  examples?: string[];
  conversation_history?: ChatMessage[];
  generation_params?: GenerationParams | null;
  metadata?: Record<string, unknown>;
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export interface StreamChunk {
  content: string;
  role: string | null;
  finished: boolean;
  error: (ErrorInfo & { partial?: string; status?: number; attempts: number }) | null;
  usage: Usage | null;
  finish_reason: string | null;
  model?: string;
}

export interface Completion {
  content: string;
  usage: Usage | null;
  finish_reason: string | null;
  cost: number;
}

/** The automatic-condensation settings. */
export interface AutoCondense {
  enabled?: boolean;
  /** Global threshold, percent of the context window (default 80). */
  threshold_percent?: number;
  /** An automatic condensation saving less than this share of the window is not applied (default 5). */
  min_gain_percent?: number;
}

export type CondenseReason = "threshold" | "limit" | "overflow" | "manual";

export interface CondensationRecord {
  condense_id: string;
  provider_id: string;
  reason: CondenseReason;
  automatic: boolean;
  tokens_before: number;
  tokens_after: number;
  cost: number;
  time_ms: number;
  summary: string | null;
  at_ms: number;
}

/** A chat: saved by the host as it is, handed back for the next input. */
export interface ChatTask {
  id: string;
  title: string;
  created_ms: number;
  updated_ms: number;
  conversation: Conversation;
  condensations: CondensationRecord[];
  guard?: { auto_at_ms: number[]; last_auto_after: string | null };
  reported?: { through: string; tokens: number };
}

export interface ContextStatus {
  tokens: number;
  window: number;
  percent: number;
  threshold_percent: number | null;
  limit: number;
  source: "reported" | "counted";
}

export type AgentInput =
  | { type: "user"; content: string }
  | { type: "retry" }
  | { type: "condense" }
  | { type: "shutdown" };

export type AgentEvent =
  | { type: "ThinkingStart" }
  | { type: "UserMessage"; message: Message }
  | { type: "MessageStart"; id: string }
  | { type: "MessageContent"; id: string; delta: string }
  | { type: "MessageEnd"; id: string; interrupted: string | null; kept: boolean; usage: Usage | null; finish_reason: string | null; cost: number }
  | { type: "ThinkingEnd" }
  | { type: "Error"; error: ErrorInfo; partial: string; retryable: boolean }
  | { type: "CondenseStart"; reason: CondenseReason; provider: string; tokens: number; automatic: boolean }
  | { type: "CondenseEnd"; condense_id: string | null; summary: string | null; metrics: Metrics | null; record: CondensationRecord | null; error: ErrorInfo | null }
  | { type: "CondenseSkipped"; reason: string; tokens: number }
  | { type: "StatusShutdown" };

export interface ChatOptions {
  /** The chat model. */
  llm: LlmTarget;
  /** The model that writes summaries, when it is not the chat model. */
  condensingLlm?: LlmTarget;
  /** The condensation provider; the default provider when absent. */
  provider?: string;
  auto?: AutoCondense;
  /** The input's wall-clock time, ms since the Unix epoch. */
  nowMs: number;
}

export interface ChatOutcome {
  task: ChatTask;
  context: ContextStatus;
}

export interface ChatUndo {
  task: ChatTask;
  condense_id: string;
}

/** What every failure throws or rejects with. */
export interface CondenseErrorLike extends Error {
  kind: string;
  partial?: string;
  status?: number;
  attempts?: number;
  retryAfterMs?: number;
}
"#;
