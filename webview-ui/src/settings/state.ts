// The settings panel's state: the last `state` message from the extension, and what the page
// adds to it: inline messages by field, connection tests, the open profile editor, notices. Pure:
// `reduce` is the only way the state changes. Never holds an API key.

import type {
  ConfigField,
  ConnectionReport,
  ErrorInfo,
  ProfileSettings,
  SettingsSnapshot,
  SettingsToWebview,
} from "../protocol";

/** The field ids of the contract (extension/src/ipc.ts): what a `rejected` message is about. */
export const fieldId = {
  autoEnabled: "auto.enabled",
  autoThreshold: "auto.thresholdPercent",
  autoMinGain: "auto.minGainPercent",
  default: "default",
  /** A change to several of a provider's entries at once. */
  provider: (id: string) => `provider.${id}`,
  providerEnabled: (id: string) => `provider.${id}.enabled`,
  providerPriority: (id: string) => `provider.${id}.priority`,
  /** A form field: the shared value's id when the field is shared. */
  config: (providerId: string, field: Pick<ConfigField, "key" | "shared">) =>
    field.shared ? `shared.${field.key}` : `provider.${providerId}.config.${field.key}`,
  /** The profile being edited, or `profile.new` for one being added. */
  profile: (originalId: string | null) => `profile.${originalId ?? "new"}`,
  key: (profileId: string) => `key.${profileId}`,
};

export type TestStatus =
  | { state: "testing" }
  | { state: "passed"; report: ConnectionReport }
  | { state: "failed"; error: ErrorInfo };

export interface Editor {
  /** The id of the profile being edited; null for a new one. */
  originalId: string | null;
  /** The profile posted by Save, while the host has not answered. */
  saving: ProfileSettings | null;
}

export interface Notice {
  id: number;
  text: string;
}

export interface SettingsView {
  snapshot: SettingsSnapshot | null;
  /** Inline messages by field id: the page's own checks and the host's rejections. */
  errors: Readonly<Record<string, string>>;
  /** The last connection test of each profile. */
  tests: Readonly<Record<string, TestStatus>>;
  editor: Editor | null;
  /** Messages about no field on the page: the host's errors, messages the page could not read. */
  notices: readonly Notice[];
  nextNotice: number;
}

export type SettingsAction =
  | { type: "received"; message: SettingsToWebview }
  /** A message from the host that did not pass the contract's check. */
  | { type: "unreadable"; error: string }
  /** The page checked a field: its message, or null when the value is fine (or was posted). */
  | { type: "checked"; field: string; error: string | null }
  | { type: "testing"; profileId: string }
  /** Opens the profile editor: on a profile, or on a new one (null). */
  | { type: "edit"; originalId: string | null }
  | { type: "saving"; profile: ProfileSettings }
  | { type: "closeEditor" }
  | { type: "dismiss"; id: number };

export const initialSettings: SettingsView = {
  snapshot: null,
  errors: {},
  tests: {},
  editor: null,
  notices: [],
  nextNotice: 1,
};

export function reduceSettings(view: SettingsView, action: SettingsAction): SettingsView {
  switch (action.type) {
    case "received":
      return receive(view, action.message);
    case "unreadable":
      return addNotice(view, `The extension sent a message the panel could not read: ${action.error}`);
    case "checked":
      return action.error === null ? clearError(view, action.field) : setError(view, action.field, action.error);
    case "testing":
      return { ...view, tests: { ...view.tests, [action.profileId]: { state: "testing" } } };
    case "edit": {
      const closed = view.editor ? clearError(view, fieldId.profile(view.editor.originalId)) : view;
      return clearError({ ...closed, editor: { originalId: action.originalId, saving: null } }, fieldId.profile(action.originalId));
    }
    case "saving":
      return view.editor ? { ...clearError(view, editorField(view)!), editor: { ...view.editor, saving: action.profile } } : view;
    case "closeEditor":
      return closeEditor(view);
    case "dismiss":
      return { ...view, notices: view.notices.filter((n) => n.id !== action.id) };
  }
}

function receive(view: SettingsView, message: SettingsToWebview): SettingsView {
  switch (message.type) {
    case "state": {
      const { type: _, ...snapshot } = message;
      const next = { ...view, snapshot };
      // The state holds what the editor saved: the save went through. Or the profile being
      // edited is gone (removed, or renamed by this save).
      const editor = view.editor;
      const saved = editor?.saving && snapshot.profiles.some((p) => sameProfile(p, editor.saving!));
      const gone = editor && editor.originalId !== null && !snapshot.profiles.some((p) => p.id === editor.originalId);
      return saved || gone ? closeEditor(next) : next;
    }
    case "rejected": {
      let next = setError(view, message.field, message.message);
      if (next.editor && message.field === editorField(next)) next = { ...next, editor: { ...next.editor, saving: null } };
      // A message about a field the page does not show would be lost: it is a notice too.
      return isShown(next, message.field) ? next : addNotice(next, `${message.field}: ${message.message}`);
    }
    case "accepted": {
      const next = clearError(view, message.field);
      return next.editor && message.field === editorField(next) ? closeEditor(next) : next;
    }
    case "testResult": {
      const status: TestStatus = message.report
        ? { state: "passed", report: message.report }
        : { state: "failed", error: message.error ?? { kind: "internal", message: "no result" } };
      return { ...view, tests: { ...view.tests, [message.profileId]: status } };
    }
    case "error":
      return addNotice(view, message.message);
  }
}

const editorField = (view: SettingsView): string | null =>
  view.editor ? fieldId.profile(view.editor.originalId) : null;

function closeEditor(view: SettingsView): SettingsView {
  const field = editorField(view);
  return field === null ? view : { ...clearError(view, field), editor: null };
}

function setError(view: SettingsView, field: string, message: string): SettingsView {
  return view.errors[field] === message ? view : { ...view, errors: { ...view.errors, [field]: message } };
}

function clearError(view: SettingsView, field: string): SettingsView {
  if (!(field in view.errors)) return view;
  const { [field]: _, ...errors } = view.errors;
  return { ...view, errors };
}

function addNotice(view: SettingsView, text: string): SettingsView {
  return { ...view, notices: [...view.notices, { id: view.nextNotice, text }], nextNotice: view.nextNotice + 1 };
}

/** Whether the page shows the inline message of a field id. */
export function isShown(view: SettingsView, field: string): boolean {
  const s = view.snapshot;
  if (field === fieldId.autoEnabled || field === fieldId.autoThreshold || field === fieldId.autoMinGain) return true;
  if (field === fieldId.default) return true;
  if (view.editor && field === editorField(view)) return true;
  if (!s) return false;
  for (const p of s.providers) {
    if ([fieldId.provider(p.id), fieldId.providerEnabled(p.id), fieldId.providerPriority(p.id)].includes(field)) return true;
    if (p.schema.some((f) => field === fieldId.config(p.id, f))) return true;
  }
  // A profile's row shows its messages (and its key's) while its editor is closed.
  return s.profiles.some((p) => field === fieldId.profile(p.id) || field === fieldId.key(p.id));
}

/** JSON with every object's keys sorted and undefined left out. */
const sorted = (v: unknown): unknown =>
  typeof v === "object" && v !== null && !Array.isArray(v)
    ? Object.fromEntries(
        Object.entries(v)
          .filter(([, x]) => x !== undefined)
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([k, x]) => [k, sorted(x)]),
      )
    : v;
const canonical = (p: ProfileSettings): string => JSON.stringify(sorted(p));

/** The same profile, whatever the order of its fields (nested ones too). */
export const sameProfile = (a: ProfileSettings, b: ProfileSettings): boolean => canonical(a) === canonical(b);
