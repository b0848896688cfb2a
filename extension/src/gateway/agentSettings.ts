// The settings of other agents' VS Code extensions that Copy Gateway Setup… offers to write
// (issue 37): where an official extension takes the gateway's base URL in VS Code's settings,
// the entry is shown, then written to the user's settings only when the person says so.
//
// - Claude Code (`anthropic.claude-code`) starts its Claude process with the environment in
//   `claudeCode.environmentVariables`, a list of `{ "name", "value" }` (code.claude.com/docs/en/
//   vs-code, "Extension settings": `environmentVariables`, default `[]`). The gateway's
//   `ANTHROPIC_BASE_URL` goes there.
// - Codex (`openai.chatgpt`) takes no base URL or environment in VS Code's settings: its provider
//   and base URL live in `~/.codex/config.toml`, shared with the CLI (developers.openai.com/codex/
//   ide/settings), which is where the copied Codex lines go. Nothing is written for it.
// - The Gemini CLI Companion (`google.gemini-cli-vscode-ide-companion`) has one setting, its debug
//   logging; its "Gemini CLI: Run" opens the CLI in an integrated terminal, which
//   `contextCondenser.gateway.terminals` covers. Nothing is written for it either.
//
// No key or token is ever written: the entry carries the gateway's loopback URL alone (the
// extension's gateway has no token of its own), and each agent keeps its own sign-in.

import * as vscode from "vscode";
import * as notify from "../host/notify";

/** The official Claude Code extension's id. */
export const CLAUDE_CODE_EXTENSION = "anthropic.claude-code";
/** Its settings' section, and the setting holding its Claude process's environment. */
export const CLAUDE_CODE_SECTION = "claudeCode";
export const CLAUDE_CODE_ENVIRONMENT = "environmentVariables";

/** One entry of `claudeCode.environmentVariables`. */
export interface EnvironmentEntry {
  name: string;
  value: string;
}

const named = (entry: unknown, name: string): boolean =>
  typeof entry === "object" && entry !== null && (entry as { name?: unknown }).name === name;

/** The list with `entry` in place of the entries of its name (where the first of them was), or
 *  at the end; every other entry kept as it was, in its order. */
export function withEnvironmentEntry(existing: readonly unknown[], entry: EnvironmentEntry): unknown[] {
  const at = existing.findIndex((e) => named(e, entry.name));
  if (at < 0) return [...existing, entry];
  return existing.flatMap((e, i) => (i === at ? [entry] : named(e, entry.name) ? [] : [e]));
}

/** The entry as the person sees it before it is written. */
export const entryText = (entry: EnvironmentEntry): string => JSON.stringify(entry, null, 1).replace(/\n\s*/g, " ");

/** Whether the Claude Code extension is here: installed, or its setting's schema known. */
export function claudeCodeExtensionHere(): boolean {
  if (vscode.extensions.getExtension(CLAUDE_CODE_EXTENSION)) return true;
  const inspected = vscode.workspace.getConfiguration(CLAUDE_CODE_SECTION).inspect(CLAUDE_CODE_ENVIRONMENT);
  return inspected?.defaultValue !== undefined;
}

/** What the user's settings hold: the list (empty when unset), or undefined when the value is
 *  not a list (then it is left alone). */
function userEntries(): unknown[] | undefined {
  const value = vscode.workspace.getConfiguration(CLAUDE_CODE_SECTION).inspect(CLAUDE_CODE_ENVIRONMENT)?.globalValue;
  if (value === undefined) return [];
  return Array.isArray(value) ? value : undefined;
}

/** Whether the user's settings already give the Claude Code extension `entry`. */
export function claudeCodeHas(entry: EnvironmentEntry): boolean {
  return (userEntries() ?? []).some((e) => named(e, entry.name) && (e as { value?: unknown }).value === entry.value);
}

/**
 * Shows the entry that will go into `claudeCode.environmentVariables` in the user's settings (a
 * modal: the window waits), and writes it, merged with the entries there, only on yes. Resolves
 * to whether it was written.
 */
export async function writeClaudeCodeEntry(entry: EnvironmentEntry): Promise<boolean> {
  const setting = `${CLAUDE_CODE_SECTION}.${CLAUDE_CODE_ENVIRONMENT}`;
  const config = vscode.workspace.getConfiguration(CLAUDE_CODE_SECTION);
  const existing = userEntries();
  if (!existing) {
    void notify.warn(`Your user settings' ${setting} is not a list of { "name", "value" } entries, so it was left as it is. Add ${entryText(entry)} to it by hand.`);
    return false;
  }
  const replaces = existing.some((e) => named(e, entry.name));
  const inspected = config.inspect(CLAUDE_CODE_ENVIRONMENT);
  const overridden = inspected?.workspaceValue !== undefined || inspected?.workspaceFolderValue !== undefined;
  const write = "Write to User Settings";
  const answer = await notify.modal(
    "Send the Claude Code extension's sessions through the gateway?",
    [
      `This entry goes into ${setting} in your user settings${replaces ? `, in place of the ${entry.name} entry there` : ""}; the other entries stay as they are:`,
      "",
      entryText(entry),
      "",
      "No key or token is written: Claude Code keeps its own sign-in. Its sessions started from now on use it.",
      ...(overridden ? ["", `This workspace sets ${setting} too; its value takes precedence in this workspace.`] : []),
    ].join("\n"),
    write,
  );
  if (answer !== write) return false;
  await config.update(CLAUDE_CODE_ENVIRONMENT, withEnvironmentEntry(existing, entry), vscode.ConfigurationTarget.Global);
  return true;
}
