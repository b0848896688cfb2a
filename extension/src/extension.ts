// The extension host: VS Code's side of Context Condenser. Thin by design: it reads settings and
// secrets, finds the conversation to work on, shows progress, results and errors, and hands every
// decision about condensation to the core (wasm).

import * as vscode from "vscode";
import type {
  ChatOptions,
  CondenseEngine,
  CondenseOptions,
  CondensationDocument,
  Conversation,
  LlmTarget,
  Message,
  ProviderInfo,
  TokenReport,
} from "../wasm/condense_wasm";
import { ChatStore } from "./chatStore";
import { ChatView } from "./chatView";
import { newEngine } from "./engine";
import { advise, asFailure, type Failure } from "./errors";
import type { ProfileOption } from "./ipc";
import { meterText } from "./meter";
import { SettingsPanel, secretName } from "./settingsPanel";
import {
  SECTION,
  type SettingProblem,
  type Settings,
  autoCondense,
  chatProfile,
  condensingProfile,
  providerUpdates,
  readSettings,
} from "./settings";

/** What other extensions get from `vscode.extensions.getExtension(...).exports`. */
export interface ContextCondenserApi {
  /** Condenses a conversation (or a list of messages) with the configured providers. */
  condense(conversation: Conversation | Message[], options?: Omit<CondenseOptions, "llm">): Promise<CondensationDocument>;
  /** Tokens of a conversation's API view, for a model (default: the chat profile's, else gpt-4o). */
  countTokens(conversation: Conversation | Message[], model?: string): TokenReport;
  /** The providers, highest priority first. */
  listProviders(): ProviderInfo[];
}

const asConversation = (c: Conversation | Message[]): Conversation => (Array.isArray(c) ? { messages: c } : c);

class Controller implements vscode.Disposable {
  private engine!: CondenseEngine;
  private settings!: Settings;
  private problems: SettingProblem[] = [];
  private readonly meter = vscode.window.createStatusBarItem("contextCondenser.meter", vscode.StatusBarAlignment.Right, 100);
  private meterTimer: ReturnType<typeof setTimeout> | undefined;
  readonly chat: ChatView;
  readonly settingsPanel: SettingsPanel;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.meter.name = "Context Condenser: context meter";
    this.meter.command = "contextCondenser.condenseNow";
    this.settingsPanel = new SettingsPanel(context.extensionUri, {
      engine: () => this.engine,
      settings: () => ({ settings: this.settings, problems: this.problems }),
      secrets: context.secrets,
      log,
    });
    this.applySettings();
    const store = new ChatStore(vscode.Uri.joinPath(context.globalStorageUri, "chats").fsPath);
    this.chat = new ChatView(context.extensionUri, store, context.globalState, {
      engine: () => this.engine,
      chatOptions: () => this.chatOptions(),
      measureOptions: () => this.measureOptions(),
      profiles: () => this.profileOptions(),
      profileId: () => chatProfile(this.settings)?.id ?? null,
      selectProfile: async (id) => {
        await vscode.workspace.getConfiguration(SECTION).update("chatProfile", id, vscode.ConfigurationTarget.Global);
      },
      report: (failure, profileId) => this.report(failure, profileId, { logged: true }),
      changed: () => this.updateMeter(),
      log,
    });
    this.updateMeter();
    this.meter.show();
  }

  dispose(): void {
    clearTimeout(this.meterTimer);
    this.meter.dispose();
    this.settingsPanel.dispose();
  }

  /** A fresh engine with the current settings: a setting removed goes back to its default. */
  applySettings(): void {
    const { settings, problems } = readSettings((key) => vscode.workspace.getConfiguration(SECTION).get(key));
    const engine = newEngine(this.context.extensionPath, this.log);
    for (const { id, update } of providerUpdates(settings)) {
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
    this.engine = engine;
    this.settings = settings;
    this.problems = problems;
    for (const p of problems) this.log.warn(`setting ${p.setting} ignored: ${p.message}`);
    if (problems.length > 0) {
      const first = problems[0];
      const more = problems.length > 1 ? ` (and ${problems.length - 1} more, see the log)` : "";
      void vscode.window
        .showWarningMessage(`Context Condenser: ${first.setting} ${first.message}${more}`, "Open Settings", "Show Log")
        .then((choice) => {
          if (choice === "Open Settings") this.settingsPanel.open();
          if (choice === "Show Log") this.log.show();
        });
    }
    this.updateMeter();
    void this.chat?.refresh();
    void this.settingsPanel.refresh();
  }

  // ---- chats --------------------------------------------------------------------------------

  private profileOptions(): ProfileOption[] {
    return this.settings.profiles
      .filter((p) => p.kind !== "manual")
      .map((p) => ({ id: p.id, model: p.model, context_window: p.context_window }));
  }

  /** The options of a chat turn without keys: enough to measure a chat. */
  private measureOptions(): ChatOptions | undefined {
    const profile = chatProfile(this.settings);
    return profile ? { llm: { profile }, auto: autoCondense(this.settings), nowMs: Date.now() } : undefined;
  }

  /** The options of a chat turn, with the keys from the secret storage. */
  private async chatOptions(): Promise<ChatOptions> {
    const profile = chatProfile(this.settings);
    if (!profile || profile.kind === "manual") {
      const failure: Failure = {
        kind: "llm_config",
        message: profile
          ? `the chat profile "${profile.id}" is a manual profile; chats need an API profile`
          : "no chat profile: add an LLM profile in contextCondenser.profiles and choose it in contextCondenser.chatProfile (or in the chat's profile picker)",
      };
      this.report(failure);
      throw failure;
    }
    const key = async (id: string) => (await this.context.secrets.get(secretName(id))) ?? undefined;
    const options: ChatOptions = {
      llm: { profile, apiKey: await key(profile.id) },
      auto: autoCondense(this.settings),
      nowMs: Date.now(),
    };
    const writer = condensingProfile(this.settings);
    if (writer && writer.id !== profile.id && writer.kind !== "manual") {
      options.condensingLlm = { profile: writer, apiKey: await key(writer.id) };
    }
    return options;
  }

  // ---- the API ------------------------------------------------------------------------------

  api(): ContextCondenserApi {
    return {
      condense: async (conversation, options) => this.engine.condense(asConversation(conversation), { ...options, llm: await this.llm() }),
      countTokens: (conversation, model) => this.engine.countTokens(asConversation(conversation), model ?? this.model()),
      listProviders: () => this.engine.listProviders(),
    };
  }

  private model(): string | undefined {
    return chatProfile(this.settings)?.model;
  }

  /** The LLM that writes summaries, with its key from the secret storage; none when unset. */
  private async llm(): Promise<LlmTarget | undefined> {
    const profile = condensingProfile(this.settings);
    if (!profile) return undefined;
    const apiKey = await this.context.secrets.get(secretName(profile.id));
    return { profile, apiKey: apiKey ?? undefined };
  }

  // ---- the conversation in the editor -------------------------------------------------------

  /** The active editor's document when it is a JSON file; its conversation, or why it is not one. */
  private activeConversation(): { doc: vscode.TextDocument; conversation?: Conversation; failure?: Failure } | undefined {
    const doc = vscode.window.activeTextEditor?.document;
    if (!doc || !(doc.languageId === "json" || doc.languageId === "jsonc" || doc.fileName.endsWith(".json"))) return undefined;
    try {
      return { doc, conversation: this.engine.parseConversation(doc.getText()) };
    } catch (e) {
      return { doc, failure: asFailure(e) };
    }
  }

  private async replace(doc: vscode.TextDocument, conversation: Conversation): Promise<void> {
    const edit = new vscode.WorkspaceEdit();
    const all = new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length));
    edit.replace(doc.uri, all, `${JSON.stringify(conversation, null, 2)}\n`);
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`could not edit ${doc.uri.fsPath}`);
  }

  /** The conversation to work on, or a message saying why there is none. */
  private target(action: string): { doc: vscode.TextDocument; conversation: Conversation } | undefined {
    const active = this.activeConversation();
    if (!active) {
      void vscode.window.showInformationMessage(`Context Condenser: no chat yet. Open a conversation file (JSON) to ${action} it.`);
      return undefined;
    }
    if (!active.conversation) {
      void vscode.window.showWarningMessage(`Context Condenser: ${vscode.workspace.asRelativePath(active.doc.uri)} is not a conversation: ${active.failure?.message}`);
      return undefined;
    }
    return { doc: active.doc, conversation: active.conversation };
  }

  // ---- commands -----------------------------------------------------------------------------

  /** Whether the commands act on the conversation file in the editor rather than the chat. */
  private editorFirst(): boolean {
    return this.activeConversation() !== undefined || !this.chat.active().task;
  }

  async condenseNow(): Promise<void> {
    if (!this.editorFirst()) return this.chat.condense();
    const target = this.target("condense");
    if (!target) return;
    const provider = this.engine.defaultProvider;
    const engine = this.engine;
    const llm = await this.llm();
    let result: CondensationDocument;
    try {
      result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Condensing with ${provider}…`, cancellable: true },
        (_progress, token) => {
          token.onCancellationRequested(() => engine.cancel());
          return engine.condense(target.conversation, { llm, model: this.model() });
        },
      );
    } catch (e) {
      this.report(asFailure(e), llm?.profile.id);
      return;
    }
    if (result.error) {
      this.report(result.error, llm?.profile.id, { logged: true });
      return;
    }
    await this.replace(target.doc, engine.parseConversation(result));
    const after = result.new_context_tokens ?? 0;
    const saved = result.metrics?.tokens_saved ?? 0;
    const before = after + saved;
    const percent = before > 0 ? Math.round((saved / before) * 100) : 0;
    const ms = Math.round(result.metrics?.time_elapsed_ms ?? 0);
    const choice = await vscode.window.showInformationMessage(
      `Condensed with ${result.metrics?.provider_id ?? provider}: ${before.toLocaleString("en-US")} → ${after.toLocaleString("en-US")} tokens (−${percent}%) · $${result.cost.toFixed(4)} · ${ms} ms`,
      "Undo",
    );
    if (choice === "Undo") await this.undoLast();
  }

  async undoLast(): Promise<void> {
    if (!this.editorFirst()) {
      try {
        await this.chat.undo();
      } catch (e) {
        this.report(asFailure(e));
      }
      return;
    }
    const target = this.target("undo a condensation in");
    if (!target) return;
    try {
      const undone = this.engine.undoLast(target.conversation);
      await this.replace(target.doc, undone.conversation);
      void vscode.window.showInformationMessage(`Context Condenser: undid condensation ${undone.condense_id}; every hidden message is back.`);
    } catch (e) {
      this.report(asFailure(e));
    }
  }

  /** Stores a profile's key in the secret storage. Arguments allow scripted use; never logged. */
  async setApiKey(profileId?: string, key?: string): Promise<void> {
    const profiles = this.settings.profiles.filter((p) => p.kind !== "manual");
    if (profiles.length === 0) {
      const choice = await vscode.window.showWarningMessage(
        "Context Condenser: add an LLM profile (contextCondenser.profiles) before setting its API key.",
        "Open Settings",
      );
      if (choice) void vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.profiles`);
      return;
    }
    const id =
      profileId ??
      (profiles.length === 1
        ? profiles[0].id
        : (
            await vscode.window.showQuickPick(
              profiles.map((p) => ({ label: p.id, description: `${p.kind} · ${p.model}` })),
              { title: "Set API Key…", placeHolder: "Which profile's key?" },
            )
          )?.label);
    if (!id) return;
    if (!profiles.some((p) => p.id === id)) {
      void vscode.window.showWarningMessage(`Context Condenser: there is no LLM profile "${id}".`);
      return;
    }
    const value =
      key ??
      (await vscode.window.showInputBox({
        title: `API key for "${id}"`,
        prompt: "Kept in VS Code's secret storage, never in settings. Leave empty to remove the key.",
        password: true,
        ignoreFocusOut: true,
      }));
    if (value === undefined) return;
    if (value.trim() === "") {
      await this.context.secrets.delete(secretName(id));
      this.log.info(`API key removed for profile "${id}"`);
      void this.settingsPanel.refresh();
      void vscode.window.showInformationMessage(`Context Condenser: API key removed for "${id}".`);
    } else {
      await this.context.secrets.store(secretName(id), value.trim());
      this.log.info(`API key stored for profile "${id}"`);
      void this.settingsPanel.refresh();
      void vscode.window.showInformationMessage(`Context Condenser: API key stored for "${id}".`);
    }
  }

  /** A notification and a log line for a failure (the core logs the failed runs it reports
   *  itself); the conversation was not touched. */
  private report(failure: Failure, profileId?: string, { logged = false } = {}): void {
    const advice = advise(failure, profileId);
    if (!logged) this.log[advice.severity === "error" ? "error" : "warn"](`${failure.kind}: ${failure.message}`);
    const show = advice.severity === "error" ? vscode.window.showErrorMessage : vscode.window.showWarningMessage;
    void show(`Context Condenser: ${advice.text}`, ...advice.actions.map((a) => a.title)).then((choice) => {
      const action = advice.actions.find((a) => a.title === choice);
      if (action) void vscode.commands.executeCommand(action.command);
    });
  }

  // ---- the meter ----------------------------------------------------------------------------

  /** Recounts soon: typing does not recount at every key. */
  scheduleMeter(): void {
    clearTimeout(this.meterTimer);
    this.meterTimer = setTimeout(() => this.updateMeter(), 300);
  }

  /** The meter follows the conversation file in the editor, else the active chat. */
  updateMeter(): void {
    if (!this.chat) return;
    const active = this.activeConversation();
    const chat = this.chat.active();
    let view;
    if (!active && chat.task && chat.context) {
      view = meterText(
        { tokens: chat.context.tokens, contextWindow: chat.context.window, source: `chat "${chat.task.title || "new chat"}"` },
        chat.context.threshold_percent,
      );
    } else {
      let tokens: number | undefined;
      if (active?.conversation && active.conversation.messages.length > 0) {
        tokens = this.engine.countTokens(active.conversation, this.model()).total_tokens;
      }
      const a = this.settings.autoCondense;
      view = meterText(
        { tokens, contextWindow: chatProfile(this.settings)?.context_window, source: active ? vscode.workspace.asRelativePath(active.doc.uri) : undefined },
        a.enabled ? a.thresholdPercent : null,
      );
    }
    this.meter.text = view.text;
    this.meter.tooltip = view.tooltip;
    this.meter.backgroundColor = view.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  }
}

export function activate(context: vscode.ExtensionContext): ContextCondenserApi {
  const log = vscode.window.createOutputChannel("Context Condenser", { log: true });
  const controller = new Controller(context, log);
  log.info(`Context Condenser ${context.extension.packageJSON.version} activated`);
  context.subscriptions.push(
    log,
    controller,
    vscode.window.registerWebviewViewProvider(ChatView.id, controller.chat, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand("contextCondenser.newChat", async () => {
      await vscode.commands.executeCommand(`${ChatView.id}.focus`);
      await controller.chat.newChat();
    }),
    vscode.commands.registerCommand("contextCondenser.condenseNow", () => controller.condenseNow()),
    vscode.commands.registerCommand("contextCondenser.undoLastCondensation", () => controller.undoLast()),
    vscode.commands.registerCommand("contextCondenser.setApiKey", (profileId?: string, key?: string) =>
      controller.setApiKey(typeof profileId === "string" ? profileId : undefined, typeof key === "string" ? key : undefined),
    ),
    vscode.commands.registerCommand("contextCondenser.showLog", () => log.show()),
    vscode.commands.registerCommand("contextCondenser.openSettings", () => controller.settingsPanel.open()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration(SECTION)) {
        log.info("settings changed: applied to a fresh engine");
        controller.applySettings();
      }
    }),
    vscode.window.onDidChangeActiveTextEditor(() => controller.updateMeter()),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document === vscode.window.activeTextEditor?.document) controller.scheduleMeter();
    }),
  );
  return controller.api();
}

export function deactivate(): void {}
