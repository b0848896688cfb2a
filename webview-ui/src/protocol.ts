// The extension ⇄ webview contract, shared with the extension (extension/src/ipc.ts). The webview
// imports it only through this module, which turns zod's JIT off before the schemas are built.

import "./zod-jitless";
import type { SettingsToWebview, ToWebview } from "@ipc";

export {
  parseToWebview,
  type AgentEvent,
  type ChatSummary,
  type ChatTask,
  type CondensationRecord,
  type CondenseReason,
  type ContentBlock,
  type ContextStatus,
  type Message,
  type ProfileOption,
  type ToHost,
  type ToWebview,
  // The settings panel.
  parseSettingsToWebview,
  type AutoSettings,
  type ConfigField,
  type ConnectionReport,
  type ErrorInfo,
  type KindMetadata,
  type Limits,
  type ProfileKind,
  type ProfileSettings,
  type ProviderEntry,
  type SettingsToHost,
  type SettingsToWebview,
} from "@ipc";

/** The `state` message without its tag: everything the view renders from. */
export type Snapshot = Omit<Extract<ToWebview, { type: "state" }>, "type">;

/** The settings panel's `state` message without its tag. */
export type SettingsSnapshot = Omit<Extract<SettingsToWebview, { type: "state" }>, "type">;
