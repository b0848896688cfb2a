import type { SettingsToHost } from "../../protocol";

/** What the panel's components do: post to the host, and record the page's own checks. */
export interface Actions {
  post(message: SettingsToHost): void;
  /** The message of a field the page checked, or null when its value is fine. */
  checked(field: string, error: string | null): void;
}
