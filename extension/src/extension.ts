// The extension host: VS Code's side of Context Condenser. Thin by design: it reads settings and
// secrets, finds the conversation to work on, shows progress, results and errors, and hands every
// decision about condensation to the core (wasm). This file only wires the features together:
// the engine holder, the secrets, the chat view, the settings panel, the file commands, the meter
// and the API; each lives in its own module.

import * as path from "node:path";
import * as vscode from "vscode";
import { pickProvider } from "./files/condenseWith";
import { type ContextCondenserApi, createApi } from "./api";
import { chatOptions, chatProfileProblem, gatewaySummaryModel, measureOptions, profileOptions } from "./chat/chatOptions";
import { ChatStore } from "./chat/chatStore";
import { ChatView } from "./chat/chatView";
import { EngineHolder } from "./engine/engineHolder";
import { GATEWAY_SETTINGS, GatewayController, gatewayOptions } from "./gateway/gatewayCommands";
import { GatewayThread } from "./gateway/gatewayRunner";
import { GatewayView } from "./gateway/gatewayView";
import { FileCommands } from "./files/fileCommands";
import { HeldDocs } from "./engine/heldTasks";
import { ManualCommands } from "./files/manual";
import { blockedReason } from "./settings/firstRun";
import { reporter } from "./host/report";
import { Secrets } from "./settings/secrets";
import { SECTION, chatProfile } from "./settings/settings";
import { SettingsPanel } from "./settings/settingsPanel";
import { FirstRun } from "./settings/setup";
import { StatusMeter } from "./files/statusMeter";

export type { ContextCondenserApi } from "./api";

/** When the bundle started to run (its banner, build.mjs); `started` when it was activated. */
declare const __bundleStart: number | undefined;
const bundleStart = typeof __bundleStart === "number" ? __bundleStart : performance.now();

/** What deactivation must do: stop the chat's turn in flight and let it save. */
let stopping: (() => Promise<void>) | undefined;

export function activate(context: vscode.ExtensionContext): ContextCondenserApi {
  // Activation builds no engine (EngineHolder is lazy): the log line says how long it took.
  const started = performance.now();
  const log = vscode.window.createOutputChannel("Context Condenser", { log: true });
  const report = reporter(log);
  // The warning about unusable settings offers the panel; it is clicked after activation.
  const holder = new EngineHolder(context.extensionPath, log, () => settingsPanel.open());
  // A key stored or removed shows in the settings panel (made just below; run only later).
  const secrets = new Secrets(context.secrets, holder, log, () => void settingsPanel.refresh());
  const settingsPanel = new SettingsPanel(context.extensionUri, {
    engine: () => holder.engine,
    settings: () => ({ settings: holder.settings, problems: holder.problems }),
    toolErrors: () => holder.toolErrors,
    secrets,
    log,
  });
  // The gateway (issue 28): its own thread and instance of the core (issue 38), its view, its
  // state file.
  const gateway = new GatewayController(
    () => holder.gatewayEngine(),
    holder.onDidCrash,
    () => gatewaySummaryModel(holder, secrets),
    context.globalStorageUri.fsPath,
    log,
    { collection: context.environmentVariableCollection, memento: context.globalState },
    (hooks) => new GatewayThread(path.join(context.extensionPath, "dist", "gatewayWorker.js"), path.join(context.extensionPath, "wasm"), hooks),
  );
  const gatewayView = new GatewayView(context.extensionUri, gateway, log);
  const store = new ChatStore(vscode.Uri.joinPath(context.globalStorageUri, "chats").fsPath);
  const chat = new ChatView(context.extensionUri, store, context.globalState, {
    engine: () => holder.engine,
    engineLoaded: () => holder.loaded,
    chatOptions: () => chatOptions(holder, secrets, report),
    measureOptions: () => measureOptions(holder),
    profiles: () => profileOptions(holder),
    profileId: () => chatProfile(holder.settings)?.id ?? null,
    selectProfile: async (id) => {
      await vscode.workspace.getConfiguration(SECTION).update("chatProfile", id, vscode.ConfigurationTarget.Global);
    },
    profileProblem: (id) => chatProfileProblem(holder, id),
    blocked: () => blockedReason(holder.settings.profiles, holder.settings.chatProfile),
    firstRun: new FirstRun(holder, secrets, log),
    useGateway: (agents) => gateway.useFor(agents),
    report: (failure, profileId) => report(failure, profileId, { logged: true }),
    // The chat reports changes only after it restored (asynchronously): the meter exists by then.
    changed: () => meter.update(),
    log,
  });
  stopping = async () => {
    // The gateway's port closes and its state is saved.
    await gateway.stop();
    await chat.shutdown();
    // Whatever else is in flight (a condensation of a file): cancelled, its file left unchanged.
    // An engine never built has nothing in flight, and is not built now.
    if (holder.loaded) holder.engine.cancel();
  };
  // The conversation file the meter measures, held in the engine; Condense Now condenses it there.
  const docs = new HeldDocs();
  const meter = new StatusMeter(holder, chat, docs);
  const files = new FileCommands(holder, chat, secrets, report, docs);
  const manual = new ManualCommands(holder, files, chat, report);
  log.info(
    `Context Condenser ${context.extension.packageJSON.version} activated in ${(performance.now() - started).toFixed(1)} ms (engine loaded: ${holder.loaded}; its bundle started running ${(started - bundleStart).toFixed(1)} ms before)`,
  );
  context.subscriptions.push(
    log,
    holder,
    meter,
    settingsPanel,
    // What follows the settings, in this order: the meter, the chat, the settings panel.
    holder.onDidApply(() => meter.update()),
    holder.onDidApply(() => void chat.refresh()),
    holder.onDidApply(() => void settingsPanel.refresh()),
    vscode.window.registerWebviewViewProvider(ChatView.id, chat, { webviewOptions: { retainContextWhenHidden: true } }),
    vscode.commands.registerCommand("contextCondenser.newChat", async () => {
      await vscode.commands.executeCommand(`${ChatView.id}.focus`);
      await chat.newChat();
    }),
    vscode.commands.registerCommand("contextCondenser.condenseNow", () => files.condenseNow()),
    vscode.commands.registerCommand("contextCondenser.condenseWith", async (from?: { chat?: boolean }) => {
      const engine = holder.engine;
      const provider = await pickProvider(engine.providerEntries(), engine.defaultProvider, from?.chat ? "the chat" : undefined);
      if (!provider) return;
      await (from?.chat ? chat.condense(provider) : files.condenseNow(provider));
    }),
    vscode.commands.registerCommand("contextCondenser.previewCondensation", () => files.previewNow()),
    vscode.commands.registerCommand("contextCondenser.undoLastCondensation", () => files.undoLast()),
    vscode.commands.registerCommand("contextCondenser.openSessionFile", (uri?: vscode.Uri) =>
      files.openSessionFile(uri instanceof vscode.Uri ? uri : undefined),
    ),
    vscode.commands.registerCommand("contextCondenser.condenseManually", (from?: { chat?: boolean }) =>
      manual.condenseManually(typeof from === "object" && from !== null ? from : undefined),
    ),
    vscode.commands.registerCommand("contextCondenser.applyPastedSummary", () => manual.applyPastedSummary()),
    vscode.commands.registerCommand("contextCondenser.setApiKey", (profileId?: string, key?: string) =>
      secrets.setApiKey(typeof profileId === "string" ? profileId : undefined, typeof key === "string" ? key : undefined),
    ),
    vscode.commands.registerCommand("contextCondenser.showLog", () => log.show()),
    vscode.commands.registerCommand("contextCondenser.openSettings", () => settingsPanel.open()),
    gateway,
    gatewayView,
    vscode.window.registerWebviewViewProvider(GatewayView.id, gatewayView),
    vscode.commands.registerCommand("contextCondenser.showGateway", () => vscode.commands.executeCommand(`${GatewayView.id}.focus`)),
    vscode.commands.registerCommand("contextCondenser.startGateway", () => gateway.start()),
    vscode.commands.registerCommand("contextCondenser.stopGateway", () => gateway.stop()),
    vscode.commands.registerCommand("contextCondenser.copyGatewaySetup", () => gateway.copySetup()),
    vscode.workspace.onDidChangeConfiguration((e) => {
      // The terminals' setting only adds or takes out their variables; the others restart a
      // running gateway.
      if (e.affectsConfiguration(`${SECTION}.gateway.terminals`)) void gateway.applyTerminals();
      const restarts = GATEWAY_SETTINGS.filter((k) => k !== "terminals").some((k) => e.affectsConfiguration(`${SECTION}.gateway.${k}`));
      if (restarts) void gateway.settingsChanged(e.affectsConfiguration(`${SECTION}.gateway.enabled`));
      if (e.affectsConfiguration(SECTION)) {
        log.info("settings changed: applied to a fresh engine");
        if (e.affectsConfiguration(`${SECTION}.toolsFile`)) holder.rereadTools("the toolsFile setting changed");
        holder.apply();
      }
    }),
    vscode.window.onDidChangeActiveTextEditor(() => meter.update()),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (e.document === vscode.window.activeTextEditor?.document) meter.schedule();
    }),
  );
  // The gateway starts with the extension when the user enabled it.
  if (gatewayOptions().enabled) void gateway.start();
  return createApi(holder, secrets);
}

/** VS Code awaits this when the window closes or the extension is updated or disabled: every
 *  running turn is cancelled and saved (see ChatView.shutdown). */
export async function deactivate(): Promise<void> {
  await stopping?.();
  stopping = undefined;
}
