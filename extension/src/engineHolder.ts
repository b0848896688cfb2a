// The one holder of the current engine and settings. It builds a fresh engine from the
// `contextCondenser.*` settings (provider updates, the default provider), collects what could not be
// used and says so (a log line each, one warning with "Open Settings" / "Show Log"), and tells the
// features that follow the settings (the meter, the chat, the settings panel) through `onDidApply`.

import * as vscode from "vscode";
import type { CondenseEngine } from "../wasm/condense_wasm";
import { newEngine } from "./engine";
import { asFailure } from "./errors";
import { SECTION, type SettingProblem, type Settings, providerUpdates, readSettings } from "./settings";

export class EngineHolder implements vscode.Disposable {
  private currentEngine!: CondenseEngine;
  private currentSettings!: Settings;
  private currentProblems: SettingProblem[] = [];
  private readonly applied = new vscode.EventEmitter<void>();
  /** Fires after each fresh engine is in place, in the order of subscription. */
  readonly onDidApply = this.applied.event;

  /** Applies the settings at once; `openSettings` is the warning's "Open Settings" button. */
  constructor(
    private readonly extensionPath: string,
    private readonly log: vscode.LogOutputChannel,
    private readonly openSettings: () => void,
  ) {
    this.apply();
  }

  dispose(): void {
    this.applied.dispose();
  }

  /** The engine with the current settings. */
  get engine(): CondenseEngine {
    return this.currentEngine;
  }

  /** The settings as read. */
  get settings(): Settings {
    return this.currentSettings;
  }

  /** What of the settings could not be used. */
  get problems(): SettingProblem[] {
    return this.currentProblems;
  }

  /** A fresh engine with the current settings: a setting removed goes back to its default. */
  apply(): void {
    // The engine first: the settings are read with its limits and defaults.
    const engine = newEngine(this.extensionPath, this.log);
    const { settings, problems } = readSettings((key) => vscode.workspace.getConfiguration(SECTION).get(key), engine.hostMetadata());
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
    this.currentEngine = engine;
    this.currentSettings = settings;
    this.currentProblems = problems;
    for (const p of problems) this.log.warn(`setting ${p.setting} ignored: ${p.message}`);
    if (problems.length > 0) {
      const first = problems[0];
      const more = problems.length > 1 ? ` (and ${problems.length - 1} more, see the log)` : "";
      void vscode.window
        .showWarningMessage(`Context Condenser: ${first.setting} ${first.message}${more}`, "Open Settings", "Show Log")
        .then((choice) => {
          if (choice === "Open Settings") this.openSettings();
          if (choice === "Show Log") this.log.show();
        });
    }
    this.applied.fire();
  }
}
