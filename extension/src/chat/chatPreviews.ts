// The chat view's condensation previews: one preview at a time shown in the view (of the chat, or of
// a conversation file for fileCommands.ts), made once while the chat is busy, then applied exactly as
// shown (no LLM call) or discarded. Also the manual provider's preview, from a pasted summary.

import * as vscode from "vscode";
import type {
  ChatOptions,
  CondensationPreview,
  PreviewEstimate,
  PreviewOutcome,
  PreviewSource,
} from "@context-condenser/protocol";
import type { ChatPersistence } from "./chatPersistence";
import { CHAT_VIEW_ID, type ChatState } from "./chatState";
import { asFailure } from "../engine/errors";
import * as notify from "../host/notify";

/** A preview open in the chat view: what it is of, the preview as shown (the engine that made it
 *  keeps what Apply applies, under its `condense_id`), and how to apply it. */
interface OpenPreview {
  source: PreviewSource;
  preview: CondensationPreview;
  /** Applies exactly this preview (no LLM call); throws when the chat or file changed since, or
   *  the engine that kept it was replaced. */
  apply: () => Promise<string>;
}

export class ChatPreviews {
  /** The condensation preview shown in the view, until Apply or Discard. */
  private preview: OpenPreview | undefined;

  constructor(
    private readonly chat: ChatState,
    private readonly saved: ChatPersistence,
  ) {}

  /** Tells the view what the preview panel shows. */
  private postPreview(source: PreviewSource, outcome?: PreviewOutcome, running = false, estimate?: PreviewEstimate): void {
    this.chat.post({
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
    const chat = this.chat;
    await this.saved.restored;
    if (chat.refusedWhileBusy()) return;
    await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
    this.preview = undefined;
    chat.busy = true;
    // Stop cancels the preview's LLM call, as it cancels a turn.
    chat.turnEngine = chat.host.engine();
    await chat.postState();
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
      chat.busy = false;
      chat.turnEngine = undefined;
      await chat.postState();
    }
    if (outcome.status === "ready") {
      const preview = outcome.preview;
      this.preview = { source, preview, apply: () => apply(preview) };
    }
    this.postPreview(source, outcome);
  }

  /** Previews a condensation of the active chat with the default provider. */
  async previewChat(): Promise<void> {
    await this.saved.restored;
    let options: ChatOptions;
    try {
      options = await this.chat.host.chatOptions();
    } catch (e) {
      this.chat.post({ type: "error", message: asFailure(e).message });
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
    await this.saved.restored;
    const options = this.chat.host.measureOptions();
    if (!options) {
      this.chat.post({ type: "error", message: "no chat profile to measure the chat with: choose one in the chat's profile picker" });
      return;
    }
    return this.previewWith({ ...options, provider: "manual", config: { answer } });
  }

  private async previewWith(options: ChatOptions): Promise<void> {
    const chat = this.chat;
    const task = chat.task;
    if (!task || task.conversation.messages.length === 0) {
      void notify.info("Context Condenser: the chat is empty; there is nothing to condense.");
      return;
    }
    const engine = chat.host.engine();
    await this.showPreview(
      { kind: "chat" },
      (onEstimate) => chat.held.preview(engine, task, { ...options, nowMs: Date.now() }, onEstimate),
      async (preview) => {
        if (!chat.task) throw new Error("no chat is open");
        // The engine kept the preview: Apply names it.
        const applied = chat.held.applyPreview(chat.host.engine(), chat.task, preview.condense_id, Date.now());
        chat.task = applied.task;
        await this.saved.persist(applied.task);
        await chat.refresh();
        const r = applied.record;
        return `applied the previewed condensation with ${r.provider_id}: ${r.tokens_before.toLocaleString("en-US")} → ${r.tokens_after.toLocaleString("en-US")} tokens · $${r.cost.toFixed(4)}`;
      },
    );
  }

  /** Applies the preview shown, exactly as shown; a chat or file changed since refuses it. */
  async applyPreview(): Promise<void> {
    const open = this.preview;
    if (!open || this.chat.refusedWhileBusy()) return;
    try {
      const said = await open.apply();
      this.preview = undefined;
      this.postPreview(open.source);
      void notify.info(`Context Condenser: ${said}.`);
    } catch (e) {
      const failure = asFailure(e);
      this.chat.host.log.warn(`preview not applied: ${failure.message}`);
      this.chat.post({ type: "error", message: `The preview was not applied: ${failure.message}` });
    }
  }

  discardPreview(): void {
    const open = this.preview;
    this.preview = undefined;
    this.postPreview(open?.source ?? { kind: "chat" });
  }
}
