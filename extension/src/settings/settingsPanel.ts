// The settings panel (SPEC §8): a webview panel with the React settings app (webview-ui/, the same
// bundle as the chat, `data-view="settings"`). It renders from the core's registry
// (`providerEntries`) and the `contextCondenser.*` settings; every change is judged by the core
// (settingsModel.planChange) and written to the settings, whose change event brings the new state
// back to the panel — so an edit of settings.json shows in an open panel the same way. Keys go to
// the secret storage, bound to their profile's origin (keys.ts), and only "set / not set" ever
// reaches the webview.

import * as vscode from "vscode";
import type { CondenseEngine } from "../../wasm/condense_wasm";
import type { LlmProfile, ModelUse, ToolConfigError } from "@context-condenser/protocol";
import { configuration, writeSetting } from "./config";
import { asFailure } from "../engine/errors";
import { type SettingsToHost, type SettingsToWebview, parseSettingsToHost } from "@context-condenser/protocol";
import { type Secrets, secretName } from "./secrets";
import { SECTION, type SettingProblem, type Settings } from "./settings";
import { panelState, planChange } from "./settingsModel";
import { loadApp, receiveFromWebview } from "../host/webviewApp";

/** What the panel needs from the rest of the extension. */
export interface SettingsHost {
  /** The engine with the current settings. */
  engine(): CondenseEngine;
  /** The settings as read, and what could not be used. */
  settings(): { settings: Settings; problems: SettingProblem[] };
  /** The tool files that could not be used. */
  toolErrors(): ToolConfigError[];
  /** The keys, each bound to the origin it was stored for. */
  secrets: Secrets;
  log: vscode.LogOutputChannel;
}

/** The secret storage's name for a profile's key (kept in secrets.ts; exported here as before). */
export { secretName };

export class SettingsPanel implements vscode.Disposable {
  static readonly viewType = "contextCondenser.settings";
  private panel: vscode.WebviewPanel | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly host: SettingsHost,
  ) {}

  dispose(): void {
    this.panel?.dispose();
  }

  /** Opens the panel, or brings the open one to the front. */
  open(): void {
    if (this.panel) {
      this.panel.reveal();
      return;
    }
    const panel = vscode.window.createWebviewPanel(
      SettingsPanel.viewType,
      "Context Condenser Settings",
      vscode.ViewColumn.Active,
      { enableScripts: true, retainContextWhenHidden: true },
    );
    panel.iconPath = vscode.Uri.joinPath(this.extensionUri, "media", "condenser.svg");
    loadApp(panel.webview, this.extensionUri, "settings", "Context Condenser Settings");
    panel.webview.onDidReceiveMessage((raw: unknown) => this.receive(raw));
    panel.onDidDispose(() => {
      if (this.panel === panel) this.panel = undefined;
    });
    this.panel = panel;
  }

  /** The settings or the keys changed: an open panel shows them. */
  async refresh(): Promise<void> {
    if (!this.panel) return;
    const { settings, problems } = this.host.settings();
    const engine = this.host.engine();
    const keys: Record<string, boolean> = {};
    for (const p of settings.profiles) keys[p.id] = await this.host.secrets.keys.isSet(p.id);
    this.post(
      panelState({
        settings,
        problems,
        entries: engine.providerEntries(),
        defaultProvider: engine.defaultProvider,
        keys,
        meta: engine.hostMetadata(),
        tools: engine.tools(),
        toolErrors: this.host.toolErrors(),
      }),
    );
  }

  private post(message: SettingsToWebview): void {
    void this.panel?.webview.postMessage(message);
  }

  private receive(raw: unknown): Promise<void> {
    return receiveFromWebview(raw, "settings panel", parseSettingsToHost, (m) => this.handle(m), (e) => this.post(e), this.host.log);
  }

  private async handle(message: SettingsToHost): Promise<void> {
    switch (message.type) {
      case "ready":
        return this.refresh();
      case "error":
        this.host.log.warn(`settings panel: ${message.message}`);
        return;
      case "setKey":
      case "clearKey":
        return this.setKey(message.profileId, message.type === "setKey" ? message.key : undefined);
      case "testConnection":
        return this.testConnection(message.profileId);
      default: {
        const config = configuration();
        const plan = planChange(message, this.host.settings().settings, (c) => this.host.engine().checkSetting(c), config.get);
        if (!plan.ok) {
          this.host.log.info(`settings panel: ${plan.field} refused: ${plan.message}`);
          this.post({ type: "rejected", field: plan.field, message: plan.message });
          return;
        }
        // A renamed profile's key moves with it, and so does the origin the key is bound to.
        if (plan.renamed) await this.host.secrets.keys.move(plan.renamed.from, plan.renamed.to);
        for (const { key, value } of plan.writes) await writeSetting(key, value);
        if (plan.removed) await this.host.secrets.keys.remove(plan.removed);
        this.host.log.info(`settings panel: ${plan.field} saved (${plan.writes.map((w) => `${SECTION}.${w.key}`).join(", ")})`);
        this.post({ type: "accepted", field: plan.field });
        // The configuration event refreshes the panel; a removed key changes no setting.
        if (plan.removed || plan.renamed) await this.refresh();
      }
    }
  }

  private async setKey(profileId: string, key: string | undefined): Promise<void> {
    const field = `key.${profileId}`;
    const profile = this.host.settings().settings.profiles.find((p) => p.id === profileId);
    if (!profile) {
      this.post({ type: "rejected", field, message: `there is no LLM profile "${profileId}"` });
      return;
    }
    if (key === undefined || key.trim() === "") {
      await this.host.secrets.keys.remove(profileId);
      this.host.log.info(`API key removed for profile "${profileId}"`);
    } else {
      // Bound to where the profile points now.
      await this.host.secrets.keys.set(profileId, key.trim(), this.host.secrets.origin(profile));
      this.host.log.info(`API key stored for profile "${profileId}"`);
    }
    this.post({ type: "accepted", field });
    await this.refresh();
  }

  /** One real request through the core with the profile and its key. */
  private async testConnection(profileId: string): Promise<void> {
    const profile: LlmProfile | undefined = this.host.settings().settings.profiles.find((p) => p.id === profileId);
    if (!profile) {
      this.post({ type: "testResult", profileId, error: { kind: "llm_config", message: `there is no LLM profile "${profileId}"` } });
      return;
    }
    if (profile.kind === "manual") {
      this.post({
        type: "testResult",
        profileId,
        error: { kind: "llm_config", message: "a manual profile has no server to test: you paste its answers yourself" },
      });
      return;
    }
    // A cli profile runs a program that holds its own login: it has no key. Another's key goes
    // only where it was stored for, unless the user agrees to the profile's new origin.
    let apiKey: string | undefined;
    try {
      apiKey = profile.kind === "cli" ? undefined : await this.host.secrets.key(profile);
    } catch (e) {
      const { kind, message } = asFailure(e);
      this.post({ type: "testResult", profileId, error: { kind, message } });
      return;
    }
    // What the profile is chosen to be (the chat profile, the condensing profile): the core
    // refuses a CLI tool whose entry leaves that out, before it runs.
    const settings = this.host.settings().settings;
    const uses: ModelUse[] = [];
    if (settings.chatProfile === profileId) uses.push("chat");
    if (settings.condensingProfile === profileId) uses.push("summarize");
    try {
      const report = await this.host.engine().testConnection({ profile, apiKey, maxRetries: 0 }, `probe:${profileId}`, uses);
      this.host.log.info(`test connection "${profileId}": ${Math.round(report.latencyMs)} ms, model ${report.model}`);
      this.post({ type: "testResult", profileId, report: { latencyMs: report.latencyMs, model: report.model, reply: report.reply } });
    } catch (e) {
      const { kind, message } = asFailure(e);
      this.host.log.warn(`test connection "${profileId}": ${kind}: ${message}`);
      this.post({ type: "testResult", profileId, error: { kind, message } });
    }
  }
}
