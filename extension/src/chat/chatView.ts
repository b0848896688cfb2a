// The chat view in the activity bar: a React webview (webview-ui/, copied to extension/webview/)
// talking to this class through the typed messages of ./ipc. The class routes each message to the
// part that handles it: turns through the core's DefaultAgent, with Condense, Undo and Pin
// (chatTurns.ts); condensation previews (chatPreviews.ts); the saved chats (chatPersistence.ts).
// The parts share the active chat and the webview through one ChatState (chatState.ts).

import * as vscode from "vscode";
import {
  type ChatTask,
  type ChatViewToHost,
  type CondensationPreview,
  type ContextStatus,
  type PreviewEstimate,
  type PreviewOutcome,
  type PreviewSource,
  openableUrl,
  parseToHost,
} from "@context-condenser/protocol";
import type { ChatStore } from "./chatStore";
import { ChatPersistence } from "./chatPersistence";
import { ChatPreviews } from "./chatPreviews";
import { CHAT_VIEW_ID, type ChatHost, ChatState } from "./chatState";
import { ChatTurns } from "./chatTurns";
import { loadApp, receiveFromWebview } from "../host/webviewApp";
import * as notify from "../host/notify";

export type { ChatHost } from "./chatState";

export class ChatView implements vscode.WebviewViewProvider {
  static readonly id = CHAT_VIEW_ID;
  /** The active chat and the webview, shared by the parts below. */
  private readonly chat: ChatState;
  private readonly saved: ChatPersistence;
  private readonly turns: ChatTurns;
  private readonly previews: ChatPreviews;

  constructor(
    private readonly extensionUri: vscode.Uri,
    store: ChatStore,
    memento: vscode.Memento,
    private readonly host: ChatHost,
  ) {
    this.chat = new ChatState(store, memento, host);
    // Restores the chat that was open when the window closed.
    this.saved = new ChatPersistence(this.chat);
    this.turns = new ChatTurns(this.chat, this.saved);
    this.previews = new ChatPreviews(this.chat, this.saved);
  }

  /** The active chat and its context, for the status bar and the commands. */
  active(): { task: ChatTask | null; context: ContextStatus | null } {
    return { task: this.chat.task, context: this.chat.context };
  }

  /** The chat's conversation, for a manual request; undefined with no chat or an empty one. */
  activeConversation(): ChatTask["conversation"] | undefined {
    const task = this.chat.task;
    return task && task.conversation.messages.length > 0 ? task.conversation : undefined;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.chat.view = view;
    loadApp(view.webview, this.extensionUri, "chat", "Context Condenser");
    view.webview.onDidReceiveMessage((raw: unknown) => this.receive(raw));
    view.onDidDispose(() => {
      if (this.chat.view === view) this.chat.view = undefined;
    });
  }

  /** The first-run welcome's offers: the local servers answering now and the CLI agents. */
  private async postWelcome(): Promise<void> {
    const { servers, tools, agents } = await this.host.firstRun.offers();
    this.chat.post({ type: "welcome", servers, tools, agents });
  }

  /** The chat, the settings or the profile changed: measure again, and tell the status bar and
   *  the webview. */
  refresh(): Promise<void> {
    return this.chat.refresh();
  }

  private receive(raw: unknown): Promise<void> {
    return receiveFromWebview(raw, "chat view", parseToHost, (m) => this.handle(m), (e) => this.chat.post(e), this.host.log);
  }

  private async handle(message: ChatViewToHost): Promise<void> {
    switch (message.type) {
      case "ready":
        await this.saved.restored;
        await this.chat.postState();
        if (this.host.blocked()) await this.postWelcome();
        return;
      case "probeLocal":
        return this.postWelcome();
      case "useGateway": {
        const { agents } = await this.host.firstRun.offers();
        return this.host.useGateway(agents);
      }
      case "setUp": {
        const outcome = await this.host.firstRun.setUp(message, (o) => this.chat.post({ type: "setup", ...o }));
        this.chat.post({ type: "setup", ...outcome });
        return;
      }
      case "renameChat":
        return this.saved.rename(message.id);
      case "deleteChat":
        return this.saved.delete(message.id);
      case "send":
        await this.turns.run({ type: "user", content: message.text });
        return;
      case "retry":
        await this.turns.run({ type: "retry" });
        return;
      case "condense":
        return this.condense();
      case "condenseWith":
        await vscode.commands.executeCommand("contextCondenser.condenseWith", { chat: true });
        return;
      case "stop":
        this.chat.turnEngine?.cancel(this.chat.task?.id);
        return;
      case "undo":
        return this.undo(message.condenseId);
      case "preview":
        return this.previewChat();
      case "condenseManually":
        await vscode.commands.executeCommand("contextCondenser.condenseManually", { chat: true });
        return;
      case "applyPreview":
        return this.previews.applyPreview();
      case "discardPreview":
        return this.previews.discardPreview();
      case "pin":
        return this.turns.pin(message.id, message.pinned);
      case "newChat":
        return this.newChat();
      case "openChat":
        return this.saved.open(message.id);
      case "selectProfile": {
        const problem = this.host.profileProblem(message.id);
        if (problem) {
          // Refused: nothing is saved, and the picker goes back to the chat profile.
          this.host.log.warn(`the chat profile stays: ${problem}`);
          void notify.error(`Context Condenser: ${problem}`);
          return this.refresh();
        }
        if (this.chat.task) await this.saved.rememberProfile(this.chat.task.id, message.id);
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

  /** Condenses the active chat now, with `chosen` (Condense with…) or else the default provider
   *  (chatTurns.ts). */
  condense(chosen?: string): Promise<void> {
    return this.turns.condense(chosen);
  }

  /** Undoes a condensation of the active chat (the last one when no id is given). */
  undo(condenseId?: string): Promise<void> {
    return this.turns.undo(condenseId);
  }

  /** The extension is stopping: the turn in flight is cancelled and saved, and the chat's
   *  session ended (chatTurns.ts). */
  shutdown(ms?: number): Promise<void> {
    return this.turns.shutdown(ms);
  }

  /** Shows a preview in the view and keeps how to apply it (chatPreviews.ts). */
  showPreview(
    source: PreviewSource,
    run: (onEstimate: (estimate: PreviewEstimate) => void) => Promise<PreviewOutcome>,
    apply: (preview: CondensationPreview) => Promise<string>,
  ): Promise<void> {
    return this.previews.showPreview(source, run, apply);
  }

  /** Previews a condensation of the active chat with the default provider. */
  previewChat(): Promise<void> {
    return this.previews.previewChat();
  }

  /** Previews the chat condensed by the manual provider with a pasted summary (chatPreviews.ts). */
  previewManual(answer: string): Promise<void> {
    return this.previews.previewManual(answer);
  }

  /** Starts a new chat: the active one stays saved. */
  newChat(): Promise<void> {
    return this.saved.newChat();
  }
}
