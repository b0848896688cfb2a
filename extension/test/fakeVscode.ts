// The part of the `vscode` API the chat view and the file commands use, for vitest (the config
// aliases `vscode` to this file): documents are files on disk, the file system is Node's, dialogs
// answer what a test scripted in `dialogs`, and what the extension shows is recorded in `shown`.
// Nothing here decides anything the extension decides: it only stands where VS Code stands.

import * as fs from "node:fs";
import * as path from "node:path";

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}

  static file(p: string): Uri {
    return new Uri("file", path.resolve(p));
  }

  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, path.join(base.fsPath, ...parts));
  }

  get path(): string {
    return this.fsPath;
  }

  toString(): string {
    return `${this.scheme}://${this.fsPath}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
}

/** A text document: a file on disk, read as it is now. */
export interface FakeDocument {
  uri: Uri;
  fileName: string;
  languageId: string;
  isUntitled: boolean;
  getText(): string;
  positionAt(offset: number): Position;
}

export function documentOf(uri: Uri): FakeDocument {
  const ext = path.extname(uri.fsPath);
  return {
    uri,
    fileName: uri.fsPath,
    languageId: ext === ".json" ? "json" : ext === ".jsonl" ? "jsonl" : "plaintext",
    isUntitled: false,
    getText: () => fs.readFileSync(uri.fsPath, "utf8"),
    positionAt: (offset) => new Position(0, offset),
  };
}

/** What the extension showed, and what the user answers to its dialogs (by the dialog's text). */
export const shown: {
  info: string[];
  warnings: string[];
  errors: string[];
  opened: string[];
  /** The modal warnings (also in `warnings`), with their detail and buttons. */
  modals: Array<{ message: string; detail?: string; buttons: string[] }>;
  /** The progress notifications' titles. */
  progress: string[];
} = { info: [], warnings: [], errors: [], opened: [], modals: [], progress: [] };
export const dialogs: { warning: (message: string) => string | undefined; info: (message: string) => string | undefined } = {
  warning: () => undefined,
  info: () => undefined,
};

export function reset(): void {
  shown.info.length = 0;
  shown.warnings.length = 0;
  shown.errors.length = 0;
  shown.opened.length = 0;
  shown.modals.length = 0;
  shown.progress.length = 0;
  dialogs.warning = () => undefined;
  dialogs.info = () => undefined;
  window.activeTextEditor = undefined;
  workspace.isTrusted = true;
  workspace.workspaceFolders = undefined;
  for (const scope of [config.defaults, config.user, config.workspace, config.folder]) {
    for (const key of Object.keys(scope)) delete scope[key];
  }
  config.updates.length = 0;
  trustListeners.length = 0;
  env.clipboard.text = "";
  extensions.installed.clear();
}

export const window: {
  activeTextEditor: { document: FakeDocument } | undefined;
  [name: string]: unknown;
} = {
  activeTextEditor: undefined,
  async showTextDocument(target: Uri | FakeDocument) {
    const document = target instanceof Uri ? documentOf(target) : target;
    shown.opened.push(document.fileName);
    window.activeTextEditor = { document };
    return window.activeTextEditor;
  },
  async showInformationMessage(message: string) {
    shown.info.push(message);
    return dialogs.info(message);
  },
  async showWarningMessage(message: string, ...rest: unknown[]) {
    shown.warnings.push(message);
    const options = rest[0];
    if (typeof options === "object" && options !== null && (options as { modal?: boolean }).modal) {
      shown.modals.push({ message, detail: (options as { detail?: string }).detail, buttons: rest.slice(1) as string[] });
    }
    return dialogs.warning(message);
  },
  async showErrorMessage(message: string) {
    shown.errors.push(message);
    return undefined;
  },
  createStatusBarItem() {
    return { text: "", tooltip: "", name: "", command: "", show() {}, hide() {}, dispose() {} };
  },
  async withProgress<T>(options: { title?: string }, task: (progress: unknown, token: unknown) => Promise<T>): Promise<T> {
    shown.progress.push(options.title ?? "");
    return task({ report() {} }, { onCancellationRequested() {} });
  },
};

export const workspace = {
  fs: {
    readFile: async (uri: Uri) => new Uint8Array(fs.readFileSync(uri.fsPath)),
    writeFile: async (uri: Uri, data: Uint8Array) => fs.writeFileSync(uri.fsPath, data),
    stat: async (uri: Uri) => {
      const s = fs.statSync(uri.fsPath);
      return { size: s.size, mtime: s.mtimeMs };
    },
  },
  asRelativePath: (target: Uri | string) => path.basename(typeof target === "string" ? target : target.fsPath),
  /** `isTrusted`: a test sets it, and `grantTrust()` fires the trust event. */
  isTrusted: true,
  workspaceFolders: undefined as Array<{ uri: Uri }> | undefined,
  /** The `contextCondenser` settings by scope, as a test writes them (keys without the section;
   *  another extension's section's keys with theirs, as `claudeCode.environmentVariables`).
   *  `get` merges them as VS Code does for values that are not objects: the workspace folder's,
   *  else the workspace's, else the user's, else the default. It does not leave out restricted
   *  settings in a workspace not trusted (VS Code does): the extension must do it itself. */
  getConfiguration(section?: string) {
    const full = (key: string) => (section && section !== "contextCondenser" ? `${section}.${key}` : key);
    const inspect = (key: string) => ({
      defaultValue: config.defaults[full(key)],
      globalValue: config.user[full(key)],
      workspaceValue: config.workspace[full(key)],
      workspaceFolderValue: config.folder[full(key)],
    });
    return {
      get: (key: string) => config.folder[full(key)] ?? config.workspace[full(key)] ?? config.user[full(key)] ?? config.defaults[full(key)],
      inspect,
      async update(key: string, value: unknown, target: ConfigurationTarget) {
        config.updates.push({ key: full(key), value, target });
        const scope = target === ConfigurationTarget.Global ? config.user : target === ConfigurationTarget.Workspace ? config.workspace : config.folder;
        if (value === undefined) delete scope[full(key)];
        else scope[full(key)] = value;
      },
    };
  },
  onDidGrantWorkspaceTrust: (listener: () => void) => listen(trustListeners, listener),
  onDidChangeWorkspaceFolders: (_listener: () => void) => ({ dispose() {} }),
  createFileSystemWatcher: () => ({
    onDidCreate: () => ({ dispose() {} }),
    onDidChange: () => ({ dispose() {} }),
    onDidDelete: () => ({ dispose() {} }),
    dispose() {},
  }),
};

/** The settings `workspace.getConfiguration` reads, by scope, and every `update` made. */
export const config: {
  defaults: Record<string, unknown>;
  user: Record<string, unknown>;
  workspace: Record<string, unknown>;
  folder: Record<string, unknown>;
  updates: Array<{ key: string; value: unknown; target: ConfigurationTarget }>;
} = { defaults: {}, user: {}, workspace: {}, folder: {}, updates: [] };

const trustListeners: Array<() => void> = [];

function listen(listeners: Array<() => void>, listener: () => void) {
  listeners.push(listener);
  return { dispose: () => void listeners.splice(listeners.indexOf(listener), 1) };
}

/** The user trusts the workspace: `isTrusted` becomes true and the event fires. */
export function grantTrust(): void {
  workspace.isTrusted = true;
  for (const listener of [...trustListeners]) listener();
}

/** A secret storage in memory (`ExtensionContext.secrets`). */
export class SecretStorage {
  readonly values = new Map<string, string>();
  async get(name: string) {
    return this.values.get(name);
  }
  async store(name: string, value: string) {
    this.values.set(name, value);
  }
  async delete(name: string) {
    this.values.delete(name);
  }
}

export class EventEmitter<T> {
  private listeners: Array<(value: T) => void> = [];
  readonly event = (listener: (value: T) => void) => {
    this.listeners.push(listener);
    return { dispose: () => void this.listeners.splice(this.listeners.indexOf(listener), 1) };
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class RelativePattern {
  constructor(
    readonly base: Uri,
    readonly pattern: string,
  ) {}
}

export const commands = {
  executed: [] as string[],
  async executeCommand(command: string) {
    commands.executed.push(command);
    return undefined;
  },
};

export const env = {
  async openExternal() {
    return true;
  },
  /** What the extension copied last. */
  clipboard: {
    text: "",
    async writeText(text: string) {
      env.clipboard.text = text;
    },
  },
};

/** The other extensions installed, by id (lower case), as a test lists them. */
export const extensions = {
  installed: new Set<string>(),
  getExtension(id: string) {
    return extensions.installed.has(id.toLowerCase()) ? { id } : undefined;
  },
};

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ProgressLocation {
  Notification = 15,
}

export enum ConfigurationTarget {
  Global = 1,
  Workspace = 2,
  WorkspaceFolder = 3,
}

export enum ViewColumn {
  Active = -1,
  Beside = -2,
}
