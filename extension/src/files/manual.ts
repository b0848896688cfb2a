// The manual provider in VS Code, on a conversation file or on the chat: Condense Manually…
// renders the summary request (the engine's `renderManualRequest`), copies it to the clipboard or
// opens it in an untitled editor, and opens an empty untitled editor for the answer; Apply Pasted
// Summary runs the `manual` provider with that answer (`config.answer`). A file's result goes
// where Condense Now's goes (the file's text replaced, or a session file's new
// `.condensed.json`), with Undo; the chat's shows as a preview (no LLM call) to apply or discard,
// then as a condensation row with Undo.

import * as vscode from "vscode";
import type { Conversation } from "@context-condenser/protocol";
import { chatModel } from "../chat/chatOptions";
import type { EngineHolder } from "../engine/engineHolder";
import { asFailure } from "../engine/errors";
import type { DocCondensation } from "../engine/heldTasks";
import type { ChatView } from "../chat/chatView";
import { activeConversation, type FileCommands } from "./fileCommands";
import type { Report } from "../host/report";
import * as notify from "../host/notify";

/** A manual condensation waiting for its answer: of a file, or of the chat. */
type Pending = {
  answer: vscode.Uri;
} & (
  | {
      kind: "file";
      source: vscode.Uri;
      /** Where the source was shown, to show it there again. */
      column: vscode.ViewColumn | undefined;
    }
  | { kind: "chat" }
);

export class ManualCommands {
  private pending: Pending | undefined;

  constructor(
    private readonly holder: EngineHolder,
    private readonly files: FileCommands,
    private readonly chat: ChatView,
    private readonly report: Report,
  ) {}

  /** Step one: the request out, an editor for the answer. Of the conversation file in the editor
   *  (as Condense Now), else of the chat; of the chat always when the chat's own button asks. */
  async condenseManually(from?: { chat?: boolean }): Promise<void> {
    const active = activeConversation(this.holder.engine);
    const chatConversation = this.chat.activeConversation();
    const onChat = from?.chat === true || (!active && chatConversation !== undefined);
    let target: { kind: "chat" } | { kind: "file"; doc: vscode.TextDocument };
    let conversation: Conversation;
    if (onChat) {
      if (!chatConversation) {
        void notify.info("Context Condenser: the chat is empty; there is nothing to condense.");
        return;
      }
      target = { kind: "chat" };
      conversation = chatConversation;
    } else {
      if (!active) {
        void notify.info("Context Condenser: open a conversation file, or a chat, to condense it manually.");
        return;
      }
      if (!active.conversation) {
        void notify.warn(`Context Condenser: ${vscode.workspace.asRelativePath(active.doc.uri)} is not a conversation: ${active.failure?.message}`);
        return;
      }
      target = { kind: "file", doc: active.doc };
      conversation = active.conversation;
    }
    let request: string;
    try {
      request = this.holder.engine.renderManualRequest(conversation, { provider: "manual", model: chatModel(this.holder) });
    } catch (e) {
      this.report(asFailure(e));
      return;
    }
    const how = await vscode.window.showQuickPick(
      [
        { label: "Copy to Clipboard", id: "copy", detail: "Paste it into any LLM chat." },
        { label: "Open in Editor", id: "open", detail: "Read it first, then copy it." },
      ],
      { title: "Condense Manually: the summary request", placeHolder: "Where should the request go?" },
    );
    if (!how) return;
    if (how.id === "copy") await vscode.env.clipboard.writeText(request);
    else await vscode.window.showTextDocument(await vscode.workspace.openTextDocument({ content: request, language: "markdown" }), { preview: false });
    const answer = await vscode.workspace.openTextDocument({ content: "", language: "markdown" });
    await vscode.window.showTextDocument(answer, { preview: false, viewColumn: vscode.ViewColumn.Beside });
    if (target.kind === "file") {
      const doc = target.doc;
      const column = vscode.window.visibleTextEditors.find((e) => e.document === doc)?.viewColumn;
      this.pending = { kind: "file", source: doc.uri, column, answer: answer.uri };
    } else {
      this.pending = { kind: "chat", answer: answer.uri };
    }
    const choice = await notify.info(
      `Context Condenser: ${how.id === "copy" ? "the request is on the clipboard" : "the request is open"}. Paste the LLM's answer into the empty editor, then apply it.`,
      "Apply Pasted Summary",
    );
    if (choice) await this.applyPastedSummary();
  }

  /** Step two: the pasted answer applied by the `manual` provider. */
  async applyPastedSummary(): Promise<void> {
    const pending = this.pending;
    if (!pending) {
      void notify.info("Context Condenser: run Condense Manually… on a conversation file or the chat first.");
      return;
    }
    const answerDoc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === pending.answer.toString());
    const answer = answerDoc?.getText().trim() ?? "";
    if (!answer) {
      void notify.warn("Context Condenser: the answer editor is empty: paste the LLM's answer into it first.");
      return;
    }
    if (pending.kind === "chat") {
      // The answer is in the preview now: its editor closes without asking to save.
      this.pending = undefined;
      if (answerDoc) {
        await vscode.window.showTextDocument(answerDoc, { preview: false });
        await vscode.commands.executeCommand("workbench.action.revertAndCloseActiveEditor");
      }
      return this.chat.previewManual(answer);
    }
    // The file as it is now, held in the engine and condensed there by the `manual` provider.
    const source = await vscode.workspace.openTextDocument(pending.source);
    let condensed: DocCondensation;
    try {
      condensed = await this.files.condenseDocument(source, { provider: "manual", config: { answer }, model: chatModel(this.holder) });
    } catch (e) {
      this.report(asFailure(e));
      return;
    }
    const result = condensed.outcome;
    if (result.error || condensed.text === undefined) {
      if (result.error) this.report(result.error, undefined, { logged: true });
      return;
    }
    this.pending = undefined;
    // The answer is in the result now: its editor closes without asking to save.
    if (answerDoc) {
      await vscode.window.showTextDocument(answerDoc, { preview: false });
      await vscode.commands.executeCommand("workbench.action.revertAndCloseActiveEditor");
    }
    const written = await this.files.writeText(source, `${condensed.text}\n`);
    if (!written) await vscode.window.showTextDocument(source, { preview: false, viewColumn: pending.column });
    const after = result.new_context_tokens ?? 0;
    const saved = result.metrics?.tokens_saved ?? 0;
    const into = written ? `written to ${vscode.workspace.asRelativePath(written)}` : `applied to ${vscode.workspace.asRelativePath(source.uri)}`;
    const choice = await notify.info(
      `Condensed manually: ${(after + saved).toLocaleString("en-US")} → ${after.toLocaleString("en-US")} tokens, ${into}.`,
      "Undo",
    );
    if (choice === "Undo") await this.files.undoLast();
  }
}
