// Where the YAML of CLI tools comes from, after the entries the core ships: the user's file (the
// `contextCondenser.toolsFile` setting, `~` expanded), then the workspace's
// `.vscode/context-condenser.tools.yaml`, which is read only in a trusted workspace because its
// entries run programs. Pure: no `vscode` import, so vitest runs it; the engine holder reads the
// files when the extension starts, when the setting or the trust changes, and when a file changes.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { ToolConfigError, ToolSource } from "@context-condenser/protocol";

/** The workspace's tool file, from its first folder. */
export const WORKSPACE_TOOLS_FILE = path.join(".vscode", "context-condenser.tools.yaml");

/** `~` and `~/…` become the home directory; anything else is kept as it is. */
export function expandHome(file: string, home: string = os.homedir()): string {
  if (file === "~") return home;
  if (file.startsWith("~/") || file.startsWith("~\\")) return path.join(home, file.slice(2));
  return file;
}

export interface ToolFileInputs {
  /** The `contextCondenser.toolsFile` setting. */
  toolsFile: unknown;
  /** The first workspace folder's path, when there is one. */
  workspaceFolder: string | undefined;
  /** `vscode.workspace.isTrusted`. */
  trusted: boolean;
  home?: string;
}

/** The files to read, in order (a later entry replaces an earlier one with the same id). */
export function toolFiles({ toolsFile, workspaceFolder, trusted, home }: ToolFileInputs): string[] {
  const files: string[] = [];
  if (typeof toolsFile === "string" && toolsFile.trim() !== "") files.push(expandHome(toolsFile.trim(), home));
  if (workspaceFolder && trusted) files.push(path.join(workspaceFolder, WORKSPACE_TOOLS_FILE));
  return files;
}

/**
 * Reads the files: a missing workspace file is simply not there; a missing or unreadable user
 * file is an error (line 0) like a file that does not parse.
 */
export function readToolSources(files: string[], workspaceFolder: string | undefined): {
  sources: ToolSource[];
  errors: ToolConfigError[];
} {
  const sources: ToolSource[] = [];
  const errors: ToolConfigError[] = [];
  const workspaceFile = workspaceFolder ? path.join(workspaceFolder, WORKSPACE_TOOLS_FILE) : undefined;
  for (const file of files) {
    try {
      sources.push({ origin: file, text: fs.readFileSync(file, "utf8") });
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT" && file === workspaceFile) continue;
      const message = code === "ENOENT" ? "the file does not exist" : `cannot read it: ${String(e)}`;
      errors.push({ origin: file, line: 0, column: 0, message });
    }
  }
  return { sources, errors };
}

/** `file:line:column: message`, as compilers print it (no position when it is unknown). */
export function describeToolError(e: ToolConfigError): string {
  const at = e.line > 0 ? `${e.origin}:${e.line}:${e.column}` : e.origin;
  return `${at}: ${e.message}`;
}
