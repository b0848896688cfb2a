// The extension ⇄ webview contract, from the protocol package both sides import (generated from
// the Rust types; zod's JIT is off there, as the CSP needs). The webview's components import it
// through this module.

import type { SettingsToWebview, ToWebview } from "@context-condenser/protocol";

export {
  parseToWebview,
  unhandled,
  type AgentEvent,
  type ChatSummary,
  type ChatTask,
  type CondensationRecord,
  type CondensationPreview,
  type PreviewEstimate,
  type PreviewFailure,
  type PreviewMessage,
  type PreviewSource,
  type CondenseReason,
  type ContentBlock,
  type ContextStatus,
  type LocalServer,
  type Message,
  type SetupState,
  type PassMetric,
  type Retention,
  type ProfileOption,
  type ToHost,
  type ChatViewToHost,
  type ToWebview,
  // The gateway view.
  parseGatewayToWebview,
  type GatewayPreview,
  type GatewayReport,
  type GatewaySessionView,
  type GatewayToHost,
  type SessionStats,
  // The settings panel.
  parseSettingsToWebview,
  type AutoSettings,
  type ConfigField,
  type ConnectionReport,
  type ErrorInfo,
  type KindMetadata,
  type Limits,
  type LlmKind as ProfileKind,
  type ProfileSettings,
  type ProviderEntry,
  type SettingsToHost,
  type SettingsToWebview,
  type ToolConfigError,
  type ToolStatus,
} from "@context-condenser/protocol";

/** The `state` message without its tag: everything the view renders from. */
export type Snapshot = Omit<Extract<ToWebview, { type: "state" }>, "type">;

/** The settings panel's `state` message without its tag. */
export type SettingsSnapshot = Omit<Extract<SettingsToWebview, { type: "state" }>, "type">;
