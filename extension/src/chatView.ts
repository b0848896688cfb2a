// The chat view in the activity bar: a React webview (webview-ui/, copied to extension/webview/)
// talking to this class through the typed messages of ./ipc. The class holds the active chat,
// runs each input through the core's DefaultAgent (CondenseEngine.chat), forwards the agent's
// events to the webview as they happen, and saves the chat after every change.

import * as vscode from "vscode";
import type { CondenseEngine } from "../wasm/condense_wasm";
import type {
  AgentEvent,
  AgentInput,
  ChatOptions,
  ChatTask,
  CondensationPreview,
  ContextStatus,
  PreviewEstimate,
  PreviewOutcome,
  PreviewSource,
} from "@context-condenser/protocol";
import { ChatStore, type CorruptChat, isChatConflict, newChatId } from "./chatStore";
import { asFailure, type Failure } from "./errors";
import { HeldChat } from "./heldTasks";
import { InFlight } from "./inFlight";
import { type ChatViewToHost, type ProfileOption, type ToWebview, openableUrl, parseToHost } from "@context-condenser/protocol";
import type { FirstRun } from "./setup";
import { loadApp, receiveFromWebview } from "./webviewApp";
import * as notify from "./notify";

const ACTIVE_CHAT = "contextCondenser.activeChat";
/** Each chat's profile, by chat id (global state, beside the chat files): opening a chat makes its
 *  profile the chat profile again; a chat never picked keeps the current one. */
const CHAT_PROFILES = "contextCondenser.chatProfiles";

/** A preview open in the chat view: what it is of, the preview, and how to apply it. */
interface OpenPreview {
  source: PreviewSource;
  preview: CondensationPreview;
  /** Applies exactly this preview (no LLM call); throws when the chat or file changed since. */
  apply: () => Promise<string>;
}

/** What the chat view needs from the rest of the extension. */
export interface ChatHost {
  /** The engine with the current settings (built on first use). */
  engine(): CondenseEngine;
  /** Whether the engine was built: shutdown builds none just to stop it. */
  engineLoaded(): boolean;
  /** The options of a turn, keys included; throws a Failure when no chat profile is usable. */
  chatOptions(): Promise<ChatOptions>;
  /** The options without keys, to measure a chat; undefined without a chat profile. */
  measureOptions(): ChatOptions | undefined;
  profiles(): ProfileOption[];
  profileId(): string | null;
  selectProfile(id: string): Promise<void>;
  /** Why a profile cannot be the chat profile (the core's judgement: a `cli` profile whose tool
   *  cannot chat), or undefined. */
  profileProblem(id: string): string | undefined;
  /** Why the chat cannot be used yet (no usable chat profile), or undefined. */
  blocked(): string | undefined;
  /** The first-run welcome's offers and setup. */
  firstRun: FirstRun;
  /** A notification for failures the user must act on outside the chat (a key, a profile). */
  report(failure: Failure, profileId?: string): void;
  /** The chat or its context changed: the status bar follows. */
  changed(): void;
  log: vscode.LogOutputChannel;
}

export class ChatView implements vscode.WebviewViewProvider {
  static readonly id = "contextCondenser.chat";
  private view: vscode.WebviewView | undefined;
  private task: ChatTask | null = null;
  /** The revision of the active chat's file as loaded or last saved (0: never saved): a save
   *  names it, and is refused if another window saved the chat since. */
  private revision = 0;
  private context: ContextStatus | null = null;
  private busy = false;
  /** The engine running the turn in flight: Stop must reach it even if the settings changed
   *  (and with them the engine) meanwhile. */
  private turnEngine: CondenseEngine | undefined;
  private readonly restored: Promise<void>;
  /** The turns running, for shutdown. */
  private readonly inFlight = new InFlight();
  /** The condensation preview shown in the view, until Apply or Discard. */
  private preview: OpenPreview | undefined;
  /** The active chat as the engine holds it: a turn moves only what changed (heldTasks.ts). */
  private readonly held = new HeldChat();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly store: ChatStore,
    private readonly memento: vscode.Memento,
    private readonly host: ChatHost,
  ) {
    this.restored = this.restore();
  }

  /** The chat that was open when the window closed, from disk. */
  private async restore(): Promise<void> {
    const id = this.memento.get<string>(ACTIVE_CHAT);
    if (!id) return;
    try {
      const loaded = await this.store.load(id);
      if (loaded && !loaded.ok) this.reportCorrupt(loaded.corrupt);
      this.task = loaded?.ok ? loaded.chat.task : null;
      this.revision = loaded?.ok ? loaded.chat.revision : 0;
      this.measure();
      this.host.changed();
    } catch (e) {
      this.host.log.error(`could not restore chat ${id}: ${asFailure(e).message}`);
    }
  }

  /** The active chat and its context, for the status bar and the commands. */
  active(): { task: ChatTask | null; context: ContextStatus | null } {
    return { task: this.task, context: this.context };
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    loadApp(view.webview, this.extensionUri, "chat", "Context Condenser");
    view.webview.onDidReceiveMessage((raw: unknown) => this.receive(raw));
    view.onDidDispose(() => {
      if (this.view === view) this.view = undefined;
    });
  }

  private post(message: ToWebview): void {
    void this.view?.webview.postMessage(message);
  }

  private async postState(): Promise<void> {
    if (!this.view) return;
    const { chats, corrupt } = await this.store.list();
    for (const c of corrupt) this.reportCorrupt(c);
    this.post({
      type: "state",
      task: this.task,
      chats,
      profiles: this.host.profiles(),
      profileId: this.host.profileId(),
      context: this.context,
      busy: this.busy,
      blocked: this.host.blocked(),
    });
  }

  /** The first-run welcome's offers: the local servers answering now and the CLI agents. */
  private async postWelcome(): Promise<void> {
    const { servers, tools } = await this.host.firstRun.offers();
    this.post({ type: "welcome", servers, tools });
  }

  /** A chat file that is not a chat: it was kept aside; the user is told which, why and where. */
  private reportCorrupt(c: CorruptChat): void {
    const kept = c.keptAs ? ` It was kept as ${c.keptAs} in the chats folder.` : "";
    this.host.log.warn(`chat file ${c.file} could not be read: ${c.reason}.${kept}`);
    void notify.warn(`Context Condenser: the chat file ${c.file} could not be read (${c.reason}).${kept}`);
  }

  /**
   * Saves the active chat over the revision it was loaded at. When another window saved it since,
   * nothing is overwritten: the user is told, in the chat and in a notification that offers to
   * reload it, and false is returned.
   */
  private async persist(task: ChatTask): Promise<boolean> {
    try {
      const saved = await this.store.save(task, this.revision);
      if (this.task?.id === task.id) this.revision = saved.revision;
      if (saved.setAside) this.reportCorrupt(saved.setAside);
      return true;
    } catch (e) {
      if (!isChatConflict(e)) throw e;
      this.host.log.warn(`chat ${task.id} not saved: ${e.message} (loaded at revision ${e.expected}, the file is at ${e.found ?? "none"})`);
      this.post({ type: "error", message: e.message });
      void notify.warn(`Context Condenser: ${e.message}`, "Reload").then((choice) => {
        if (choice === "Reload") void this.open(task.id).catch((err) => this.host.log.error(`could not reload chat ${task.id}: ${asFailure(err).message}`));
      });
      return false;
    }
  }

  /** The chat, the settings or the profile changed: measure again, and tell the status bar and
   *  the webview. */
  async refresh(): Promise<void> {
    this.measure();
    this.host.changed();
    await this.postState();
  }

  private measure(): void {
    const options = this.host.measureOptions();
    try {
      this.context = this.task && options ? this.held.context(this.host.engine(), this.task, options) : null;
    } catch (e) {
      this.context = null;
      this.host.log.warn(`cannot measure the chat: ${asFailure(e).message}`);
    }
  }

  private receive(raw: unknown): Promise<void> {
    return receiveFromWebview(raw, "chat view", parseToHost, (m) => this.handle(m), (e) => this.post(e), this.host.log);
  }

  private async handle(message: ChatViewToHost): Promise<void> {
    switch (message.type) {
      case "ready":
        await this.restored;
        await this.postState();
        if (this.host.blocked()) await this.postWelcome();
        return;
      case "probeLocal":
        return this.postWelcome();
      case "setUp": {
        const outcome = await this.host.firstRun.setUp(message, (o) => this.post({ type: "setup", ...o }));
        this.post({ type: "setup", ...outcome });
        return;
      }
      case "renameChat":
        return this.rename(message.id);
      case "deleteChat":
        return this.delete(message.id);
      case "send":
        await this.run({ type: "user", content: message.text });
        return;
      case "retry":
        await this.run({ type: "retry" });
        return;
      case "condense":
        return this.condense();
      case "condenseWith":
        await vscode.commands.executeCommand("contextCondenser.condenseWith", { chat: true });
        return;
      case "stop":
        this.turnEngine?.cancel(this.task?.id);
        return;
      case "undo":
        return this.undo(message.condenseId);
      case "preview":
        return this.previewChat();
      case "condenseManually":
        await vscode.commands.executeCommand("contextCondenser.condenseManually", { chat: true });
        return;
      case "applyPreview":
        return this.applyPreview();
      case "discardPreview":
        return this.discardPreview();
      case "pin":
        return this.pin(message.id, message.pinned);
      case "newChat":
        return this.newChat();
      case "openChat":
        return this.open(message.id);
      case "selectProfile": {
        const problem = this.host.profileProblem(message.id);
        if (problem) {
          // Refused: nothing is saved, and the picker goes back to the chat profile.
          this.host.log.warn(`the chat profile stays: ${problem}`);
          void notify.error(`Context Condenser: ${problem}`);
          return this.refresh();
        }
        if (this.task) await this.rememberProfile(this.task.id, message.id);
        return this.host.selectProfile(message.id);
      }
      case "openLink":
        return this.openLink(message.url);
      case "error":
        this.host.log.warn(`the chat view refused a message: ${message.message}`);
        return;
    }
  }

  /** A link in a message, clicked: opened by VS Code (which asks before it opens an external
   *  site), and only if it is http, https or mailto — checked again here, whatever the webview
   *  let through. */
  private async openLink(raw: string): Promise<void> {
    const url = openableUrl(raw);
    if (!url) {
      this.host.log.warn(`the chat view asked to open a link that is not http, https or mailto; ignored`);
      return;
    }
    await vscode.env.openExternal(vscode.Uri.parse(url));
  }

  /** While a turn runs, other changes to the chat wait: the webview is told why (and gets back
   *  the text of a message it could not send). After shutdown began nothing changes the chat
   *  any more: the turn in flight saves its partial answer, and that is the last write. */
  private refusedWhileBusy(draft?: string): boolean {
    if (this.refusedAfterShutdown()) return true;
    if (this.busy) this.post({ type: "error", message: "The chat is busy: wait for the answer or press Stop.", draft });
    return this.busy;
  }

  /** Whether shutdown began, so that nothing may change a chat (logged when it refuses). */
  private refusedAfterShutdown(): boolean {
    if (this.inFlight.isClosed) this.host.log.info("the extension is shutting down: no chat takes more changes");
    return this.inFlight.isClosed;
  }

  /** Runs one input through the agent, streaming its events to the webview, and saves the chat;
   *  tracked, so that shutdown can stop it and wait for its save. Nothing starts after shutdown. */
  private run(input: AgentInput, progress?: string, provider?: string): Promise<ChatTask | undefined> {
    if (this.inFlight.isClosed) return Promise.resolve(undefined);
    return this.inFlight.track(this.turn(input, progress, provider));
  }

  /** One input through the agent; `provider`, when given, condenses in place of the default. */
  private async turn(input: AgentInput, progress?: string, provider?: string): Promise<ChatTask | undefined> {
    const draft = input.type === "user" ? input.content : undefined;
    if (this.refusedWhileBusy(draft)) return undefined;
    let options: ChatOptions;
    try {
      options = await this.host.chatOptions();
    } catch (e) {
      // Nothing was sent: the webview puts the text back in its input.
      this.post({ type: "error", message: asFailure(e).message, draft });
      return undefined;
    }
    const engine = this.host.engine();
    if (!this.task) this.revision = 0;
    const task = this.task ?? engine.newChat(newChatId(), Date.now());
    this.task = task;
    if (!this.profiles()[task.id]) await this.rememberProfile(task.id, options.llm.profile.id);
    this.busy = true;
    this.turnEngine = engine;
    await this.memento.update(ACTIVE_CHAT, task.id);
    await this.postState();
    const onEvent = (event: AgentEvent) => {
      this.post({ type: "event", taskId: task.id, event });
      if (event.type === "Error" && ["llm_auth", "llm_config", "llm_tool_unsupported"].includes(event.error.kind)) {
        this.host.report(event.error, options.llm.profile.id);
      }
    };
    try {
      const turn = () =>
        this.held.chat(engine, task, input, { ...options, ...(provider ? { provider } : {}), nowMs: Date.now() }, onEvent).catch((e: unknown) => {
          const failure = asFailure(e);
          if (failure.kind !== "engine_crashed") throw e;
          // The engine was replaced; the chat stays as last saved, and the webview gets its text back.
          this.post({ type: "error", message: failure.message, draft });
          return undefined;
        });
      const outcome = progress
        ? await notify.progress(progress, (token) => {
            token.onCancellationRequested(() => engine.cancel(task.id));
            return turn();
          })
        : await turn();
      if (!outcome) return undefined;
      this.task = outcome.task;
      this.context = outcome.context;
      if (!(await this.persist(outcome.task))) return undefined;
      return outcome.task;
    } finally {
      this.busy = false;
      this.turnEngine = undefined;
      this.host.changed();
      await this.postState();
    }
  }

  /** Condenses the active chat now, with the default provider; the result shows in the chat. */
  /** Condenses the active chat now, with `chosen` (Condense with…) or else the default provider. */
  async condense(chosen?: string): Promise<void> {
    await this.restored;
    if (!this.task || this.task.conversation.messages.length === 0) {
      void notify.info("Context Condenser: the chat is empty; there is nothing to condense.");
      return;
    }
    const provider = chosen ?? this.host.engine().defaultProvider;
    const before = this.task.condensations.length;
    const task = await this.run({ type: "condense" }, `Condensing the chat with ${provider}…`, chosen);
    const record = task && task.condensations.length > before ? task.condensations.at(-1) : undefined;
    if (!record) return;
    const saved = record.tokens_before - record.tokens_after;
    const percent = record.tokens_before > 0 ? Math.round((saved / record.tokens_before) * 100) : 0;
    const choice = await notify.info(
      `Condensed with ${record.provider_id}: ${record.tokens_before.toLocaleString("en-US")} → ${record.tokens_after.toLocaleString("en-US")} tokens (−${percent}%) · $${record.cost.toFixed(4)} · ${Math.round(record.time_ms)} ms`,
      "Undo",
    );
    if (choice === "Undo") await this.undo(record.condense_id);
  }

  /** Undoes a condensation of the active chat (the last one when no id is given). */
  async undo(condenseId?: string): Promise<void> {
    await this.restored;
    if (!this.task) {
      void notify.info("Context Condenser: no chat is open.");
      return;
    }
    if (this.refusedWhileBusy()) return;
    const undone = this.host.engine().undoChat(this.task, condenseId, Date.now());
    this.task = undone.task;
    const saved = await this.persist(undone.task);
    await this.refresh();
    if (!saved) return;
    void notify.info(
      `Context Condenser: undid condensation ${undone.condense_id}; every hidden message is back.`,
    );
  }

  /**
   * The extension is stopping (the window closes, an update): the turn in flight is cancelled and
   * saved with its partial answer, the agent's StatusShutdown ends the chat's session, and no new
   * turn starts. Bounded: VS Code gives deactivation a few seconds.
   */
  async shutdown(ms = 4000): Promise<void> {
    const ended = await this.inFlight.shutdown(() => this.turnEngine?.cancel(this.task?.id), ms);
    if (!ended) this.host.log.warn(`a chat turn had not ended ${ms} ms after shutdown began`);
    const task = this.task;
    // An engine never built ran no turn: none is built now just to end a session.
    if (!task || !this.host.engineLoaded()) return;
    const options = this.host.measureOptions();
    if (!options) return;
    try {
      await this.host.engine().chat(task, { type: "shutdown" }, { ...options, nowMs: Date.now() }, (event) =>
        this.post({ type: "event", taskId: task.id, event }),
      );
    } catch (e) {
      this.host.log.warn(`chat ${task.id}: shutdown: ${asFailure(e).message}`);
    }
  }

  /** Pins or unpins a message of the active chat through the engine (with its tool-pair
   *  partners), and saves the chat. */
  private async pin(id: string, pinned: boolean): Promise<void> {
    await this.restored;
    if (!this.task || this.refusedWhileBusy()) return;
    const result = this.host.engine().pinMessage(this.task, id, pinned, Date.now());
    this.task = result.task;
    await this.persist(result.task);
    await this.refresh();
  }

  /** Tells the view what the preview panel shows. */
  private postPreview(source: PreviewSource, outcome?: PreviewOutcome, running = false, estimate?: PreviewEstimate): void {
    this.post({
      type: "preview",
      source,
      running,
      ...(estimate ? { estimate } : {}),
      ...(outcome?.status === "ready" ? { preview: outcome.preview } : {}),
      ...(outcome?.status === "failed" ? { failure: outcome.failure } : {}),
    });
  }

  /**
   * Shows a preview in the view: `run` makes it (the LLM writes any summary now, once), handing
   * the core's estimate to `onEstimate` before the provider runs, which the view shows at once;
   * `apply` applies exactly that preview later. The chat is busy while the preview is made.
   */
  async showPreview(
    source: PreviewSource,
    run: (onEstimate: (estimate: PreviewEstimate) => void) => Promise<PreviewOutcome>,
    apply: (preview: CondensationPreview) => Promise<string>,
  ): Promise<void> {
    await this.restored;
    if (this.refusedWhileBusy()) return;
    await vscode.commands.executeCommand(`${ChatView.id}.focus`);
    this.preview = undefined;
    this.busy = true;
    // Stop cancels the preview's LLM call, as it cancels a turn.
    this.turnEngine = this.host.engine();
    await this.postState();
    this.postPreview(source, undefined, true);
    let outcome: PreviewOutcome;
    let finished = false;
    try {
      outcome = await run((estimate) => {
        if (!finished) this.postPreview(source, undefined, true, estimate);
      });
    } catch (e) {
      outcome = { status: "failed", failure: { error: asFailure(e), estimated_cost: 0, cost: 0 } };
    } finally {
      finished = true;
      this.busy = false;
      this.turnEngine = undefined;
      await this.postState();
    }
    if (outcome.status === "ready") {
      const preview = outcome.preview;
      this.preview = { source, preview, apply: () => apply(preview) };
    }
    this.postPreview(source, outcome);
  }

  /** Previews a condensation of the active chat with the default provider. */
  async previewChat(): Promise<void> {
    await this.restored;
    let options: ChatOptions;
    try {
      options = await this.host.chatOptions();
    } catch (e) {
      this.post({ type: "error", message: asFailure(e).message });
      return;
    }
    return this.previewWith(options);
  }

  /**
   * Previews the chat condensed by the manual provider with a summary the user pasted from any
   * LLM: no call is made (the chat profile is only measured with, so no key is needed), and Apply
   * makes it a condensation of the chat like any other, with its row and Undo.
   */
  async previewManual(answer: string): Promise<void> {
    await this.restored;
    const options = this.host.measureOptions();
    if (!options) {
      this.post({ type: "error", message: "no chat profile to measure the chat with: choose one in the chat's profile picker" });
      return;
    }
    return this.previewWith({ ...options, provider: "manual", config: { answer } });
  }

  /** The chat's conversation, for a manual request; undefined with no chat or an empty one. */
  activeConversation(): ChatTask["conversation"] | undefined {
    return this.task && this.task.conversation.messages.length > 0 ? this.task.conversation : undefined;
  }

  private async previewWith(options: ChatOptions): Promise<void> {
    const task = this.task;
    if (!task || task.conversation.messages.length === 0) {
      void notify.info("Context Condenser: the chat is empty; there is nothing to condense.");
      return;
    }
    const engine = this.host.engine();
    await this.showPreview(
      { kind: "chat" },
      (onEstimate) => engine.previewChat(task, { ...options, nowMs: Date.now() }, onEstimate),
      async (preview) => {
        if (!this.task) throw new Error("no chat is open");
        const applied = this.host.engine().applyPreview(this.task, preview, Date.now());
        this.task = applied.task;
        await this.persist(applied.task);
        await this.refresh();
        const r = applied.record;
        return `applied the previewed condensation with ${r.provider_id}: ${r.tokens_before.toLocaleString("en-US")} → ${r.tokens_after.toLocaleString("en-US")} tokens · $${r.cost.toFixed(4)}`;
      },
    );
  }

  /** Applies the preview shown, exactly as shown; a chat or file changed since refuses it. */
  private async applyPreview(): Promise<void> {
    const open = this.preview;
    if (!open || this.refusedWhileBusy()) return;
    try {
      const said = await open.apply();
      this.preview = undefined;
      this.postPreview(open.source);
      void notify.info(`Context Condenser: ${said}.`);
    } catch (e) {
      const failure = asFailure(e);
      this.host.log.warn(`preview not applied: ${failure.message}`);
      this.post({ type: "error", message: `The preview was not applied: ${failure.message}` });
    }
  }

  private discardPreview(): void {
    const open = this.preview;
    this.preview = undefined;
    this.postPreview(open?.source ?? { kind: "chat" });
  }

  async newChat(): Promise<void> {
    await this.restored;
    if (this.refusedWhileBusy()) return;
    this.task = null;
    this.revision = 0;
    await this.memento.update(ACTIVE_CHAT, undefined);
    await this.refresh();
  }

  /** Renames a saved chat: the new title is asked for in an input box. */
  private async rename(id: string): Promise<void> {
    if (this.refusedAfterShutdown() || (this.task?.id === id && this.refusedWhileBusy())) return;
    const loaded = this.task?.id === id ? { task: this.task, revision: this.revision } : await this.loadChat(id);
    if (!loaded) return;
    const title = await vscode.window.showInputBox({
      title: "Rename Chat",
      value: loaded.task.title,
      prompt: "The chat's new title",
      validateInput: (v) => (v.trim() === "" ? "A title cannot be empty." : undefined),
    });
    if (title === undefined || title.trim() === loaded.task.title) return;
    // The active chat may have moved on while the box was open: rename what it is now.
    const current = this.task?.id === id ? { task: this.task, revision: this.revision } : loaded;
    const renamed: ChatTask = { ...current.task, title: title.trim() };
    if (this.task?.id === id) {
      if (!(await this.persist(renamed))) return;
      this.task = renamed;
    } else {
      try {
        await this.store.save(renamed, current.revision);
      } catch (e) {
        if (!isChatConflict(e)) throw e;
        this.post({ type: "error", message: e.message });
        return;
      }
    }
    this.host.log.info(`chat ${id} renamed`);
    await this.refresh();
  }

  /** Deletes a saved chat after a modal confirmation; the active chat becomes a new one. */
  private async delete(id: string): Promise<void> {
    if (this.refusedAfterShutdown() || (this.task?.id === id && this.refusedWhileBusy())) return;
    const loaded = this.task?.id === id ? { task: this.task, revision: this.revision } : await this.loadChat(id);
    if (!loaded) return;
    const choice = await notify.modal(
      `Delete the chat "${loaded.task.title || "Untitled chat"}"?`,
      `Its ${loaded.task.conversation.messages.length} messages and condensations are removed; this cannot be undone.`,
      "Delete",
    );
    if (choice !== "Delete") return;
    await this.store.delete(id);
    const { [id]: _, ...rest } = this.profiles();
    await this.memento.update(CHAT_PROFILES, rest);
    this.host.log.info(`chat ${id} deleted`);
    if (this.task?.id === id) {
      this.task = null;
      this.revision = 0;
      await this.memento.update(ACTIVE_CHAT, undefined);
    }
    await this.refresh();
  }

  private profiles(): Record<string, string> {
    return this.memento.get<Record<string, string>>(CHAT_PROFILES) ?? {};
  }

  private async rememberProfile(chatId: string, profileId: string): Promise<void> {
    await this.memento.update(CHAT_PROFILES, { ...this.profiles(), [chatId]: profileId });
  }

  /** A saved chat with its revision; a missing or corrupt one is reported and gives undefined. */
  private async loadChat(id: string): Promise<{ task: ChatTask; revision: number } | undefined> {
    const loaded = await this.store.load(id);
    if (!loaded) {
      this.post({ type: "error", message: `There is no saved chat "${id}".` });
      return undefined;
    }
    if (!loaded.ok) {
      this.reportCorrupt(loaded.corrupt);
      await this.postState();
      return undefined;
    }
    return loaded.chat;
  }

  private async open(id: string): Promise<void> {
    if (this.refusedWhileBusy()) return;
    const loaded = await this.store.load(id);
    if (!loaded) throw new Error(`there is no saved chat "${id}"`);
    if (!loaded.ok) {
      this.reportCorrupt(loaded.corrupt);
      await this.postState();
      return;
    }
    this.task = loaded.chat.task;
    this.revision = loaded.chat.revision;
    await this.memento.update(ACTIVE_CHAT, id);
    const own = this.profiles()[id];
    if (own && own !== this.host.profileId() && this.host.profiles().some((p) => p.id === own)) {
      // The settings change refreshes the view.
      await this.host.selectProfile(own);
    }
    await this.refresh();
  }
}
