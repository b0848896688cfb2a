// Condense Now, Preview Condensation, Undo Last Condensation and Open Session File…. They act on the
// conversation file in the active editor when there is one (or when no chat is open), else on the
// chat. On a file, each works on the file as the engine holds it (the meter's copy, `HeldDocs`: no
// conversation crosses the boundary but the file's text, once, and the new text back): Condense Now
// runs under a cancellable progress notification, replaces the file's text with the condensed
// conversation and offers Undo with the result; Preview shows in the chat view, and Apply writes
// exactly what it showed; Undo brings every hidden message of the last condensation back. A session
// file (opened with Open Session File…, or any `.jsonl`: another agent's session, in whatever format
// the engine's `parseConversation` detects) is never changed: its condensation is written to a new
// file beside it, `<name>.condensed.json`, which opens.

import * as path from "node:path";
import * as vscode from "vscode";
import type { CondenseEngine } from "../../wasm/condense_wasm";
import type { CondenseOptionsInput, Conversation, HeldCount, LlmTarget } from "@context-condenser/protocol";
import { chatModel, condensingLlm } from "../chat/chatOptions";
import type { ChatView } from "../chat/chatView";
import type { EngineHolder } from "../engine/engineHolder";
import { asFailure, type Failure } from "../engine/errors";
import type { DocCondensation, HeldDocs } from "../engine/heldTasks";
import { FileTooLarge, readConversationText } from "./sessionFile";
import { condensedPath } from "./sessionPath";
import type { Report } from "../host/report";
import type { Secrets } from "../settings/secrets";
import { condensingProfile } from "../settings/settings";
import * as notify from "../host/notify";

/** Whether a document may be a conversation file (JSON): the meter and the commands read it. */
export function isConversationDocument(doc: vscode.TextDocument): boolean {
  return doc.languageId === "json" || doc.languageId === "jsonc" || /\.jsonl?$/.test(doc.fileName);
}

/** The active editor's document when it is a JSON file; its conversation, or why it is not one. */
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

const fileExists = async (p: string) => {
  try {
    await vscode.workspace.fs.stat(vscode.Uri.file(p));
    return true;
  } catch {
    return false;
  }
};

/** A conversation file's text: JSON indented by two spaces, then a newline. */
const fileText = (conversation: Conversation) => `${JSON.stringify(conversation, null, 2)}\n`;

async function replace(doc: vscode.TextDocument, text: string): Promise<void> {
  const edit = new vscode.WorkspaceEdit();
  const all = new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length));
  edit.replace(doc.uri, all, text);
  if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`could not edit ${doc.uri.fsPath}`);
}

export class FileCommands {
  /** The files opened with Open Session File…: never changed, condensed to a new file. */
  private readonly sessions = new Set<string>();

  constructor(
    private readonly holder: EngineHolder,
    private readonly chat: ChatView,
    private readonly secrets: Secrets,
    private readonly report: Report,
    private readonly docs: HeldDocs,
  ) {}

  /** The conversation file in the editor, held in `engine` (its text crosses once, unless the
   *  engine holds this version: the meter's); undefined, the user told why, when there is none. */
  private heldDocument(engine: CondenseEngine, action: string): vscode.TextDocument | undefined {
    const doc = vscode.window.activeTextEditor?.document;
    if (!doc || !isConversationDocument(doc)) {
      void notify.info(`Context Condenser: no chat yet. Open a conversation file (JSON) to ${action} it.`);
      return undefined;
    }
    try {
      this.docs.hold(engine, doc);
    } catch (e) {
      void notify.warn(`Context Condenser: ${vscode.workspace.asRelativePath(doc.uri)} is not a conversation: ${asFailure(e).message}`);
      return undefined;
    }
    return doc;
  }

  /** Whether the commands act on the conversation file in the editor rather than the chat: a
   *  JSON file in the editor (a conversation or not: a broken one gets its message), or no chat. */
  private editorFirst(): boolean {
    const doc = vscode.window.activeTextEditor?.document;
    return (doc !== undefined && isConversationDocument(doc)) || !this.chat.active().task;
  }

  /** Condense Now: the conversation file in the editor, else the chat; with `chosen` (Condense
   *  with…) or else the default provider. */
  async condenseNow(chosen?: string): Promise<void> {
    if (!this.editorFirst()) return this.chat.condense(chosen);
    const engine = this.holder.engine;
    const doc = this.heldDocument(engine, "condense");
    if (!doc) return;
    const provider = chosen ?? engine.defaultProvider;
    const llm = await this.condensingLlm();
    if (llm === null) return;
    let condensed: DocCondensation;
    try {
      condensed = await notify.progress(`Condensing with ${provider}…`, (token) => {
        token.onCancellationRequested(() => engine.cancel());
        return this.docs.condense(engine, doc, { llm, model: chatModel(this.holder), ...(chosen ? { provider: chosen } : {}) });
      });
    } catch (e) {
      this.report(asFailure(e), llm?.profile.id);
      return;
    }
    const result = condensed.outcome;
    if (result.error || condensed.text === undefined) {
      if (result.error) this.report(result.error, llm?.profile.id, { logged: true });
      return;
    }
    const written = await this.writeText(doc, `${condensed.text}\n`);
    const after = result.new_context_tokens ?? 0;
    const saved = result.metrics?.tokens_saved ?? 0;
    const before = after + saved;
    const percent = before > 0 ? Math.round((saved / before) * 100) : 0;
    const ms = Math.round(result.metrics?.time_elapsed_ms ?? 0);
    const into = written ? ` · written to ${path.basename(written.fsPath)} (the original is unchanged)` : "";
    const choice = await notify.info(
      `Condensed with ${result.metrics?.provider_id ?? provider}: ${before.toLocaleString("en-US")} → ${after.toLocaleString("en-US")} tokens (−${percent}%) · $${result.cost.toFixed(4)} · ${ms} ms${into}`,
      "Undo",
    );
    if (choice === "Undo") await this.undoLast();
  }

  /** Condenses the conversation file `doc` in the engine, by handle: the figures and, when it
   *  succeeded, the condensed file's text to write. */
  condenseDocument(doc: vscode.TextDocument, options: CondenseOptionsInput): Promise<DocCondensation> {
    return this.docs.condense(this.holder.engine, doc, options);
  }

  /** The LLM that writes summaries, with its key; null (reported) when its key was not let go
   *  where the profile now points. */
  private async condensingLlm(): Promise<LlmTarget | undefined | null> {
    const profileId = condensingProfile(this.holder.settings)?.id;
    try {
      return await condensingLlm(this.holder, this.secrets);
    } catch (e) {
      this.report(asFailure(e), profileId);
      return null;
    }
  }

  /** Whether a document is a session file, which is never changed. */
  isSession(doc: vscode.TextDocument): boolean {
    return this.sessions.has(doc.uri.toString()) || doc.fileName.endsWith(".jsonl");
  }

  /**
   * Puts a condensed conversation where it belongs: a session file's goes to a new file beside it
   * (returned, and opened); any other conversation file's text is replaced.
   */
  async write(doc: vscode.TextDocument, conversation: Conversation): Promise<vscode.Uri | undefined> {
    return this.writeText(doc, fileText(conversation));
  }

  /** `write` with the conversation's file text already made (by the engine, for a held file). */
  async writeText(doc: vscode.TextDocument, text: string): Promise<vscode.Uri | undefined> {
    if (!this.isSession(doc) || doc.isUntitled) {
      await replace(doc, text);
      return undefined;
    }
    const target = vscode.Uri.file(await condensedPath(doc.fileName, fileExists));
    await vscode.workspace.fs.writeFile(target, Buffer.from(text, "utf8"));
    await vscode.window.showTextDocument(target, { preview: false });
    return target;
  }

  /** Open Session File…: another agent's session (or any conversation the engine reads), opened
   *  in an editor so the meter measures it and Condense Now writes its result beside it. */
  async openSessionFile(uri?: vscode.Uri): Promise<void> {
    const picked =
      uri ??
      (
        await vscode.window.showOpenDialog({
          title: "Open Session File",
          openLabel: "Open Session",
          canSelectMany: false,
          filters: { "Session files": ["json", "jsonl"], "All files": ["*"] },
        })
      )?.[0];
    if (!picked) return;
    const name = path.basename(picked.fsPath);
    // Refused by its size before it is read: the same limit as the CLI's, from the core.
    const limit = this.holder.engine.hostMetadata().limits.max_conversation_bytes;
    let text: string;
    try {
      text = await readConversationText(vscode.workspace.fs, picked, name, limit);
    } catch (e) {
      const why = e instanceof FileTooLarge ? e.message : `${name} cannot be read: ${asFailure(e).message}`;
      void notify.warn(`Context Condenser: ${why}`);
      return;
    }
    // Held, not parsed out: the conversation stays in the engine (the meter's hold of the same
    // file keeps its counts), and it is counted in slices, so that a large file, or one message
    // of a megabyte, does not stall the extension host.
    const engine = this.holder.engine;
    let counted: HeldCount;
    try {
      counted = await engine.countHeld(engine.hold("conversation", picked.toString(), text), chatModel(this.holder));
    } catch (e) {
      void notify.warn(`Context Condenser: ${name} is not a session file the engine reads: ${asFailure(e).message}`);
      return;
    }
    this.sessions.add(picked.toString());
    await vscode.window.showTextDocument(picked, { preview: false });
    void notify.info(
      `Context Condenser: ${name}: ${counted.messages} messages, ${counted.tokens.toLocaleString("en-US")} tokens. Condense writes a new file beside it; the original is never changed.`,
    );
  }

  /** Preview Condensation: on the conversation file in the editor (as Condense Now), else on the
   *  chat. The preview shows in the chat view, kept by the engine; Apply replaces the file's text
   *  with exactly the result shown, if the file did not change since. */
  async previewNow(): Promise<void> {
    if (!this.editorFirst()) return this.chat.previewChat();
    const engine = this.holder.engine;
    const doc = this.heldDocument(engine, "preview a condensation of");
    if (!doc) return;
    const llm = await this.condensingLlm();
    if (llm === null) return;
    await this.chat.showPreview(
      { kind: "file", name: vscode.workspace.asRelativePath(doc.uri) },
      (onEstimate) => this.docs.preview(engine, doc, { llm, model: chatModel(this.holder) }, onEstimate),
      async (preview) => {
        const text = await this.docs.applyPreview(this.holder.engine, doc, preview.condense_id);
        // A session file's result goes to a new file beside it, as Condense Now's does.
        const written = await this.writeText(doc, `${text}\n`);
        const where = vscode.workspace.asRelativePath(written ?? doc.uri);
        return `applied the previewed condensation to ${where}: ${preview.tokens_before.toLocaleString("en-US")} → ${preview.tokens_after.toLocaleString("en-US")} tokens`;
      },
    );
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
    const engine = this.holder.engine;
    const doc = this.heldDocument(engine, "undo a condensation in");
    if (!doc) return;
    try {
      if (this.isSession(doc)) {
        void notify.info("Context Condenser: a session file is never changed; undo in its .condensed.json file.");
        return;
      }
      const undone = await this.docs.undo(engine, doc);
      await replace(doc, `${undone.text}\n`);
      void notify.info(`Context Condenser: undid condensation ${undone.condense_id}; every hidden message is back.`);
    } catch (e) {
      this.report(asFailure(e));
    }
  }
}
