// What the chat view's parts share: the active chat (its task, revision and measured context), whether
// a turn or a preview runs, the webview to post to, and what the view needs from the rest of the
// extension (`ChatHost`). The parts — saved chats (chatPersistence.ts), turns (chatTurns.ts) and
// previews (chatPreviews.ts) — each hold this one object; chatView.ts routes the webview's messages
// to them. Imports none of them, so the parts form no import circle.

import type * as vscode from "vscode";
import type { CondenseEngine } from "../../wasm/condense_wasm";
import type { ChatOptions, ChatTask, ContextStatus, ProfileOption, ToWebview } from "@context-condenser/protocol";
import type { ChatStore, CorruptChat } from "./chatStore";
import { asFailure, type Failure } from "../engine/errors";
import { HeldChat } from "../engine/heldTasks";
import { InFlight } from "./inFlight";
import type { FirstRun } from "../settings/setup";
import * as notify from "../host/notify";

/** The chat view's id, as package.json contributes it. */
export const CHAT_VIEW_ID = "contextCondenser.chat";

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
  /** "Condense the agent you already use": start the gateway, show the setup of `agents`. */
  useGateway(agents: string[]): Promise<void>;
  /** A notification for failures the user must act on outside the chat (a key, a profile). */
  report(failure: Failure, profileId?: string): void;
  /** The chat or its context changed: the status bar follows. */
  changed(): void;
  log: vscode.LogOutputChannel;
}

/** The active chat and the view's state, shared by the chat view's parts. */
export class ChatState {
  /** The webview, while it is resolved and not disposed. */
  view: vscode.WebviewView | undefined;
  task: ChatTask | null = null;
  /** The revision of the active chat's file as loaded or last saved (0: never saved): a save
   *  names it, and is refused if another window saved the chat since. */
  revision = 0;
  context: ContextStatus | null = null;
  busy = false;
  /** The engine running the turn in flight: Stop must reach it even if the settings changed
   *  (and with them the engine) meanwhile. */
  turnEngine: CondenseEngine | undefined;
  /** The turns running, for shutdown. */
  readonly inFlight = new InFlight();
  /** The active chat as the engine holds it: every engine call on a chat goes through it, and
   *  moves only what changed (heldTasks.ts). */
  readonly held = new HeldChat();

  constructor(
    readonly store: ChatStore,
    readonly memento: vscode.Memento,
    readonly host: ChatHost,
  ) {}

  post(message: ToWebview): void {
    void this.view?.webview.postMessage(message);
  }

  async postState(): Promise<void> {
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

  /** A chat file that is not a chat: it was kept aside; the user is told which, why and where. */
  reportCorrupt(c: CorruptChat): void {
    const kept = c.keptAs ? ` It was kept as ${c.keptAs} in the chats folder.` : "";
    this.host.log.warn(`chat file ${c.file} could not be read: ${c.reason}.${kept}`);
    void notify.warn(`Context Condenser: the chat file ${c.file} could not be read (${c.reason}).${kept}`);
  }

  /** The chat, the settings or the profile changed: measure again, and tell the status bar and
   *  the webview. */
  async refresh(): Promise<void> {
    this.measure();
    this.host.changed();
    await this.postState();
  }

  measure(): void {
    const options = this.host.measureOptions();
    try {
      this.context = this.task && options ? this.held.context(this.host.engine(), this.task, options) : null;
    } catch (e) {
      this.context = null;
      this.host.log.warn(`cannot measure the chat: ${asFailure(e).message}`);
    }
  }

  /** While a turn runs, other changes to the chat wait: the webview is told why (and gets back
   *  the text of a message it could not send). After shutdown began nothing changes the chat
   *  any more: the turn in flight saves its partial answer, and that is the last write. */
  refusedWhileBusy(draft?: string): boolean {
    if (this.refusedAfterShutdown()) return true;
    if (this.busy) this.post({ type: "error", message: "The chat is busy: wait for the answer or press Stop.", draft });
    return this.busy;
  }

  /** Whether shutdown began, so that nothing may change a chat (logged when it refuses). */
  refusedAfterShutdown(): boolean {
    if (this.inFlight.isClosed) this.host.log.info("the extension is shutting down: no chat takes more changes");
    return this.inFlight.isClosed;
  }
}
