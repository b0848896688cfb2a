// The `contextCondenser.*` settings as VS Code holds them, read and written in one place: reads go
// through `settingsReader` (settings.ts), so that a workspace not trusted decides neither where a
// request and its key go nor which programs run; writes go where the user keeps the setting, and
// never into such a workspace's settings when the setting is a restricted one.

import * as vscode from "vscode";
import { RESTRICTED_SETTINGS, SECTION, type SettingsReader, settingsReader } from "./settings";

/** The settings as the extension may use them now (the workspace's trust as it is now). */
export function configuration(): SettingsReader {
  return settingsReader(vscode.workspace.getConfiguration(SECTION), vscode.workspace.isTrusted);
}

/** Why the workspace's values of `ignored` were not read, for the log. */
export const ignoredReason = (ignored: readonly string[]): string =>
  `the workspace's values of ${ignored.map((k) => `${SECTION}.${k}`).join(", ")} are ignored: the workspace is not trusted, ` +
  "and these settings decide where requests (with your API keys) go and which programs run; your user settings are used. " +
  "Trust the workspace to use its values.";

/** Writes a setting where the user keeps it: the workspace (folder) when it is set there, else the
 *  user's settings. A restricted setting of a workspace not trusted goes to the user's settings:
 *  the value was read from there, and the workspace's is not the user's. */
export async function writeSetting(key: string, value: unknown): Promise<void> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const where = config.inspect(key);
  const restricted = !vscode.workspace.isTrusted && (RESTRICTED_SETTINGS as readonly string[]).includes(key);
  const target = restricted
    ? vscode.ConfigurationTarget.Global
    : where?.workspaceFolderValue !== undefined
      ? vscode.ConfigurationTarget.WorkspaceFolder
      : where?.workspaceValue !== undefined
        ? vscode.ConfigurationTarget.Workspace
        : vscode.ConfigurationTarget.Global;
  await config.update(key, value, target);
}
