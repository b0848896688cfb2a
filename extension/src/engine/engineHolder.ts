// The one holder of the current engine and settings. It builds a fresh engine from the
// `contextCondenser.*` settings (provider updates, the default provider), collects what could not be
// used and says so (a log line each, one warning with "Open Settings" / "Show Log"), and tells the
// features that follow the settings (the meter, the chat, the settings panel) through `onDidApply`.
// It also holds the YAML of the CLI tools (toolSources.ts): read again when the `toolsFile`
// setting, the workspace's trust or either file changes, handed to every engine, and its errors
// reported as `file:line:column` with an "Open File" action. Settings are read through
// `configuration()` (config.ts): in a workspace not trusted, the profiles and the tools file are
// the user's only (logged once); trust granted, everything is read again.
// Lazy: nothing is loaded at activation. The wasm package is instantiated, and the settings read
// with its metadata, the first time a feature asks for the engine or the settings; after a
// settings change or a trap, a fresh engine is built at once only if one was built before.

import * as path from "node:path";
import * as vscode from "vscode";
import type { ToolConfigError, ToolSource } from "@context-condenser/protocol";
import type { CondenseEngine } from "../../wasm/condense_wasm";
import { Core, guardEngine, newEngine } from "./engine";
import { asFailure } from "./errors";
import { configuration, ignoredReason } from "../settings/config";
import { SECTION, type SettingProblem, type Settings, providerUpdates, readSettings } from "../settings/settings";
import { WORKSPACE_TOOLS_FILE, describeToolError, readToolSources, toolFiles } from "../settings/toolSources";
import * as notify from "../host/notify";

/** The first workspace folder: where tools run and where the workspace's tool file is. */
const workspaceFolder = () => vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;

export class EngineHolder implements vscode.Disposable {
  /** Undefined until the first use (and never built when nothing needs the engine). */
  private current: { engine: CondenseEngine; settings: Settings } | undefined;
  private currentProblems: SettingProblem[] = [];
  private toolSources: ToolSource[] = [];
  private currentToolErrors: ToolConfigError[] = [];
  private readonly watchers: vscode.Disposable[] = [];
  private readonly applied = new vscode.EventEmitter<void>();
  /** Fires after each fresh engine is in place, in the order of subscription. */
  readonly onDidApply = this.applied.event;
  private readonly crashedEmitter = new vscode.EventEmitter<void>();
  /** Fires once per trap of the core's instance, after the chat's engine was replaced: every
   *  other engine on that instance (the gateway's) must be replaced too. */
  readonly onDidCrash = this.crashedEmitter.event;

  /** The wasm package, instantiated on first use and again after a trap. */
  private readonly core: Core;
  /** The last trap, so that every call it failed gets the same error and it is logged once. */
  private crash: { generation: number; error: Error } | undefined;

  /** Reads the tool files now; builds the engine on first use. `openSettings` is the warning's
   *  "Open Settings" button. */
  constructor(
    extensionPath: string,
    private readonly log: vscode.LogOutputChannel,
    private readonly openSettings: () => void,
  ) {
    this.core = new Core(path.join(extensionPath, "wasm"));
    this.readTools();
    this.watchers.push(
      // Trusted now: the workspace's tool file, and its values of the restricted settings, count.
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        this.rereadTools("the workspace is trusted");
        this.apply();
      }),
      vscode.workspace.onDidChangeWorkspaceFolders(() => this.reloadTools("the workspace folders changed")),
    );
    this.watchTools();
  }

  dispose(): void {
    this.applied.dispose();
    this.crashedEmitter.dispose();
    this.watchers.forEach((w) => w.dispose());
    this.fileWatchers.forEach((w) => w.dispose());
  }

  /** The tool files that could not be used. */
  get toolErrors(): ToolConfigError[] {
    return this.currentToolErrors;
  }

  private fileWatchers: vscode.Disposable[] = [];

  /** Watches the user's tool file and the workspace's (created, changed or deleted). */
  private watchTools(): void {
    this.fileWatchers.forEach((w) => w.dispose());
    this.fileWatchers = [];
    const files = toolFiles({
      toolsFile: configuration().get("toolsFile"),
      workspaceFolder: workspaceFolder(),
      trusted: vscode.workspace.isTrusted,
    });
    for (const file of files) {
      const pattern = new vscode.RelativePattern(vscode.Uri.file(path.dirname(file)), path.basename(file));
      const watcher = vscode.workspace.createFileSystemWatcher(pattern);
      const changed = () => this.reloadTools(`${file} changed`);
      this.fileWatchers.push(watcher, watcher.onDidCreate(changed), watcher.onDidChange(changed), watcher.onDidDelete(changed));
    }
  }

  /** Reads the tool files again and hands them to the engine. */
  reloadTools(why: string): void {
    this.rereadTools(why);
    if (!this.current) return; // The first engine will get them.
    this.setTools(this.current.engine);
    this.applied.fire();
  }

  /** Reads the tool files again (and watches the files the settings now name); the next engine gets them. */
  rereadTools(why: string): void {
    this.log.info(`reading the tool files: ${why}`);
    this.readTools();
    this.watchTools();
  }

  /** Reads the user's and (in a trusted workspace) the workspace's tool files. */
  private readTools(): void {
    const folder = workspaceFolder();
    const files = toolFiles({
      toolsFile: configuration().get("toolsFile"),
      workspaceFolder: folder,
      trusted: vscode.workspace.isTrusted,
    });
    if (folder && !vscode.workspace.isTrusted) {
      this.log.info(`${path.join(folder, WORKSPACE_TOOLS_FILE)} is not read: the workspace is not trusted`);
    }
    const { sources, errors } = readToolSources(files, folder);
    this.toolSources = sources;
    this.readErrors = errors;
  }

  private readErrors: ToolConfigError[] = [];

  /** Gives the engine the tool files; reports those that cannot be used. */
  private setTools(engine: CondenseEngine): void {
    let errors: ToolConfigError[];
    try {
      errors = [...this.readErrors, ...engine.setToolSources(this.toolSources)];
    } catch (e) {
      errors = [...this.readErrors, { origin: "tool files", line: 0, column: 0, message: asFailure(e).message }];
    }
    const before = JSON.stringify(this.currentToolErrors);
    this.currentToolErrors = errors;
    for (const e of errors) this.log.warn(`tool file ignored: ${describeToolError(e)}`);
    // A notification for each new set of errors, not for every fresh engine.
    if (errors.length > 0 && JSON.stringify(errors) !== before) {
      const first = errors[0];
      const more = errors.length > 1 ? ` (and ${errors.length - 1} more, see the log)` : "";
      void notify
        .warn(`Context Condenser: a tool file cannot be used: ${describeToolError(first)}${more}`, "Open File", "Show Log")
        .then(async (choice) => {
          if (choice === "Show Log") this.log.show();
          if (choice === "Open File") {
            const at = new vscode.Position(Math.max(first.line - 1, 0), Math.max(first.column - 1, 0));
            await vscode.window.showTextDocument(vscode.Uri.file(first.origin), { selection: new vscode.Range(at, at) });
          }
        });
    }
  }

  /** The engine with the current settings, built now if this is the first use. */
  get engine(): CondenseEngine {
    return this.ensure().engine;
  }

  /** An engine of its own for the gateway, on the same core: it holds the gateway's sessions
   *  apart from the chat's, and a settings change does not replace it. Behind the same guard as
   *  the chat's: a trap drops the instance, replaces the chat's engine and fires `onDidCrash`. */
  gatewayEngine(): CondenseEngine {
    const instance = this.core.current();
    return guardEngine(newEngine(this.core, this.log), instance, (e, what) => this.crashed(e, what, instance.generation));
  }

  /** The settings as read (with the engine's metadata: the first use builds the engine). */
  get settings(): Settings {
    return this.ensure().settings;
  }

  /** Whether the engine was built: features that only show what is already known ask this
   *  rather than forcing the load. */
  get loaded(): boolean {
    return this.current !== undefined;
  }

  private ensure(): { engine: CondenseEngine; settings: Settings } {
    if (!this.current) this.build();
    return this.current!;
  }

  /** What of the settings could not be used. */
  get problems(): SettingProblem[] {
    this.ensure();
    return this.currentProblems;
  }

  /** A fresh engine with the current settings (a setting removed goes back to its default), and
   *  the features told; nothing when no engine was built yet: the first use reads the settings. */
  apply(): void {
    if (!this.current) return;
    this.build();
    this.applied.fire();
  }

  /** Builds an engine with the current settings and reports what could not be used. */
  private build(): void {
    // The engine first: the settings are read with its limits and defaults.
    const instance = this.core.current();
    const engine = newEngine(this.core, this.log, { defaultCwd: workspaceFolder });
    this.setTools(engine);
    const config = configuration();
    this.logIgnored(config.ignored);
    const { settings, problems } = readSettings(config.get, engine.hostMetadata(), (c) => engine.checkSetting(c) ?? undefined);
    for (const { id, update } of providerUpdates(settings, engine.providerEntries())) {
      try {
        engine.updateProviderConfig(id, update);
      } catch (e) {
        problems.push({ setting: `${SECTION}.providers.${id}`, message: asFailure(e).message });
      }
    }
    try {
      engine.setDefaultProvider(settings.defaultProvider);
    } catch (e) {
      problems.push({ setting: `${SECTION}.defaultProvider`, message: asFailure(e).message });
    }
    // The old engine is not freed here: a condensation in flight may still hold it. The bindings
    // are built with weak references, so the GC frees it once nothing does.
    this.current = { engine: guardEngine(engine, instance, (e, what) => this.crashed(e, what, instance.generation)), settings };
    this.currentProblems = problems;
    for (const p of problems) this.log.warn(`setting ${p.setting} ignored: ${p.message}`);
    if (problems.length > 0) {
      const first = problems[0];
      const more = problems.length > 1 ? ` (and ${problems.length - 1} more, see the log)` : "";
      void notify
        .warn(`Context Condenser: ${first.setting} ${first.message}${more}`, "Open Settings", "Show Log")
        .then((choice) => {
          if (choice === "Open Settings") this.openSettings();
          if (choice === "Show Log") this.log.show();
        });
    }
  }

  /** What the log last said of ignored workspace settings: it says it once, not at every engine. */
  private ignoredLogged = "";

  /** Logs, once for each set, the restricted settings whose workspace values were not read. */
  private logIgnored(ignored: string[]): void {
    const said = ignored.join(",");
    if (said === this.ignoredLogged) return;
    this.ignoredLogged = said;
    if (ignored.length > 0) this.log.warn(ignoredReason(ignored));
  }

  /**
   * The engine trapped (a panic in Rust) during `what`: its instance is dropped and a fresh engine
   * with the same settings takes its place, so the next command works. The call that met the trap
   * (and any other call in flight on that instance) fails with a typed `engine_crashed`, which its
   * caller shows the user; the log says what happened, once. Nothing saved is touched: the chat
   * and the files keep their last saved state.
   */
  private crashed(e: unknown, what: string, generation: number): Error {
    if (this.crash?.generation === generation) return this.crash.error;
    const reason = e instanceof Error ? e.message : String(e);
    const error = Object.assign(
      new Error(`the engine stopped on an internal error during ${what} and was restarted; that action did not complete, and nothing saved was changed (${reason})`),
      { kind: "engine_crashed" as const },
    );
    this.crash = { generation, error };
    this.log.error(`engine_crashed: the engine trapped during ${what}: ${reason}; a fresh engine replaces it`);
    this.core.discard(generation);
    try {
      this.apply();
    } catch (again) {
      this.log.error(`the fresh engine could not be built: ${asFailure(again).message}`);
    }
    this.crashedEmitter.fire();
    return error;
  }
}
