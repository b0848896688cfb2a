// Condense Now and Undo Last Condensation. They act on the conversation JSON in the active editor
// when there is one (or when no chat is open), else on the chat. On a file: Condense Now runs under
// a cancellable progress notification, replaces the file's text with the condensed conversation and
// offers Undo with the result; Undo brings every hidden message of the last condensation back.

import * as vscode from "vscode";
import type { CondenseEngine } from "../wasm/condense_wasm";
import type { CondensationDocument, Conversation } from "@context-condenser/protocol";
import { chatModel, condensingLlm } from "./chatOptions";
import type { ChatView } from "./chatView";
import type { EngineHolder } from "./engineHolder";
import { asFailure, type Failure } from "./errors";
import type { Report } from "./report";
import type { Secrets } from "./secrets";

/** The active editor's document when it is a JSON file; its conversation, or why it is not one. */
/** Whether a document may be a conversation file (JSON): the meter and the commands read it. */
export function isConversationDocument(doc: vscode.TextDocument): boolean {
  return doc.languageId === "json" || doc.languageId === "jsonc" || doc.fileName.endsWith(".json");
}

export function activeConversation(
  engine: CondenseEngine,
): { doc: vscode.TextDocument; conversation?: Conversation; failure?: Failure } | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  if (!doc || !isConversationDocument(doc)) return undefined;
  try {
    return { doc, conversation: engine.parseConversation(doc.getText()) };
  } catch (e) {
    return { doc, failure: asFailure(e) };
  }
}

async function replace(doc: vscode.TextDocument, conversation: Conversation): Promise<void> {
  const edit = new vscode.WorkspaceEdit();
  const all = new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length));
  edit.replace(doc.uri, all, `${JSON.stringify(conversation, null, 2)}\n`);
  if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`could not edit ${doc.uri.fsPath}`);
}

export class FileCommands {
  constructor(
    private readonly holder: EngineHolder,
    private readonly chat: ChatView,
    private readonly secrets: Secrets,
    private readonly report: Report,
  ) {}

  /** The conversation to work on, or a message saying why there is none. */
  private target(action: string): { doc: vscode.TextDocument; conversation: Conversation } | undefined {
    const active = activeConversation(this.holder.engine);
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

  /** Whether the commands act on the conversation file in the editor rather than the chat. */
  private editorFirst(): boolean {
    return activeConversation(this.holder.engine) !== undefined || !this.chat.active().task;
  }

  async condenseNow(): Promise<void> {
    if (!this.editorFirst()) return this.chat.condense();
    const target = this.target("condense");
    if (!target) return;
    const provider = this.holder.engine.defaultProvider;
    const engine = this.holder.engine;
    const llm = await condensingLlm(this.holder, this.secrets);
    let result: CondensationDocument;
    try {
      result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Condensing with ${provider}…`, cancellable: true },
        (_progress, token) => {
          token.onCancellationRequested(() => engine.cancel());
          return engine.condense(target.conversation, { llm, model: chatModel(this.holder) });
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
    await replace(target.doc, engine.parseConversation(result));
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
      const undone = this.holder.engine.undoLast(target.conversation);
      await replace(target.doc, undone.conversation);
      void vscode.window.showInformationMessage(`Context Condenser: undid condensation ${undone.condense_id}; every hidden message is back.`);
    } catch (e) {
      this.report(asFailure(e));
    }
  }
}
