// The host's side of held tasks: the engine keeps every chat and the conversation file the meter
// follows, named by a handle `{id, revision}`, so that a turn or a recount moves only what changed
// across the wasm boundary. The host keeps its own full copy of a chat (it saves it) and applies to
// it what each change of the engine's copy returns (`applyChange`); the whole chat enters the
// engine (`hold`, its saved JSON text) only when the engine does not hold exactly that copy:
// the first time, after a chat was loaded or renamed, after a fresh engine (settings change,
// trap), or when the engine answers `unknown_task` (evicted). A preview stays in the engine that
// made it until Apply names it. No `vscode` import, so vitest runs it with the real engine.

import type {
  AgentEvent,
  AgentInput,
  ChatChange,
  ChatOptions,
  ChatTask,
  CondensationRecord,
  CondenseOptionsInput,
  ContextStatus,
  HeldCondensation,
  PreviewEstimate,
  PreviewOutcome,
  TaskHandle,
} from "@context-condenser/protocol";
import type { CondenseEngine } from "../../wasm/condense_wasm";

/** Whether a thrown value is the engine's refusal of a handle it does not hold. */
export function isUnknownTask(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { kind?: unknown }).kind === "unknown_task";
}

/** The host's copy after a change of the held chat: its first `keep` messages, then those the
 *  change orders — whole when sent, else the host's own with any marks sent; every other field
 *  from the change's task. Throws when the change names a message the copy does not have (the
 *  engine held another copy): the caller holds the chat again. */
export function applyChange(task: ChatTask, change: ChatChange): ChatTask {
  const own = new Map(task.conversation.messages.slice(change.keep).map((m) => [m.id, m]));
  const sent = new Map(change.messages.map((m) => [m.id, m]));
  const marks = new Map(change.marks.map((m) => [m.id, m]));
  const rest = change.order.map((id) => {
    const whole = sent.get(id);
    if (whole) return whole;
    const mine = own.get(id);
    if (!mine) throw new Error(`the engine's change names message ${id}, which this copy of the chat does not have`);
    const mark = marks.get(id);
    if (!mark) return mine;
    const { condense_parent: _hidden, pinned: _pinned, ...message } = mine;
    return {
      ...message,
      ...(mark.condense_parent ? { condense_parent: mark.condense_parent } : {}),
      ...(mark.pinned ? { pinned: true } : {}),
    };
  });
  const messages = [...task.conversation.messages.slice(0, change.keep), ...rest];
  return { ...change.task, conversation: { ...change.task.conversation, messages } };
}

/** The engine that made the preview shown last: only that engine keeps it, so one made before the
 *  engine was replaced (a settings change, a restart after a trap) cannot be applied. */
class PreviewMaker {
  private made: { id: string; engine: CondenseEngine } | undefined;

  /** Notes which engine made a ready preview; returns the outcome. */
  note(engine: CondenseEngine, outcome: PreviewOutcome): PreviewOutcome {
    if (outcome.status === "ready") this.made = { id: outcome.preview.condense_id, engine };
    return outcome;
  }

  /** Throws when the preview `previewId` was made by another engine than `engine`. */
  check(engine: CondenseEngine, previewId: string): void {
    if (this.made?.id === previewId && this.made.engine !== engine) {
      throw Object.assign(
        new Error("the engine was replaced since the preview was made (the settings changed, or it restarted), and the preview went with it: preview the condensation again"),
        { kind: "invalid_input" },
      );
    }
  }
}

/** The chat the chat view works on, as the engine holds it: every call of the engine on a chat
 *  goes through here, and each change it returns is applied to the host's copy. */
export class HeldChat {
  /** The engine, the handle it named the chat by, and the very task object the host has for it. */
  private held: { engine: CondenseEngine; handle: TaskHandle; task: ChatTask } | undefined;
  private readonly previews = new PreviewMaker();

  /** The handle of `task` in `engine`, holding it (the one full crossing) unless the engine
   *  already holds this very object. */
  private handle(engine: CondenseEngine, task: ChatTask): TaskHandle {
    const h = this.held;
    if (h && h.engine === engine && h.task === task) return h.handle;
    const handle = engine.hold("chat", task.id, JSON.stringify(task));
    this.held = { engine, handle, task };
    return handle;
  }

  /** Calls `f` with the task's handle; once more with a fresh hold if the engine let it go (its
   *  check comes before any work: nothing ran). */
  private withHandle<T>(engine: CondenseEngine, task: ChatTask, f: (handle: TaskHandle) => T): T {
    try {
      return f(this.handle(engine, task));
    } catch (e) {
      if (!isUnknownTask(e)) throw e;
      this.held = undefined;
      return f(this.handle(engine, task));
    }
  }

  /** `withHandle` for a call that resolves later: `unknown_task` rejects before the work starts
   *  (a turn sent no event). */
  private async withHandleAsync<T>(engine: CondenseEngine, task: ChatTask, f: (handle: TaskHandle) => Promise<T>): Promise<T> {
    try {
      return await f(this.handle(engine, task));
    } catch (e) {
      if (!isUnknownTask(e)) throw e;
      this.held = undefined;
      return await f(this.handle(engine, task));
    }
  }

  /** The host's copy of `task` after `change`, remembered as the copy the engine holds. */
  private changed(engine: CondenseEngine, task: ChatTask, change: ChatChange): ChatTask {
    const next = applyChange(task, change);
    this.held = { engine, handle: change.handle, task: next };
    return next;
  }

  /** A new, empty chat, held by `engine`: the task to save. */
  newChat(engine: CondenseEngine, id: string, nowMs: number): ChatTask {
    const change = engine.newChat(id, nowMs);
    return this.changed(engine, change.task, change);
  }

  /** How full the chat's context is. */
  context(engine: CondenseEngine, task: ChatTask, options: ChatOptions): ContextStatus {
    return this.withHandle(engine, task, (handle) => engine.chatContext(handle, options));
  }

  /** One input of the chat through the agent: only the input goes in and only the changed
   *  messages come back; resolves with the task to save and its context. */
  async chat(
    engine: CondenseEngine,
    task: ChatTask,
    input: AgentInput,
    options: ChatOptions,
    onEvent: (event: AgentEvent) => void,
  ): Promise<{ task: ChatTask; context: ContextStatus }> {
    const step = await this.withHandleAsync(engine, task, (handle) => engine.chat(handle, input, options, onEvent));
    return { task: this.changed(engine, task, step.change), context: step.context };
  }

  /** Undoes a condensation of the chat (the last one when no id is given). */
  undo(engine: CondenseEngine, task: ChatTask, condenseId: string | undefined, nowMs: number): { task: ChatTask; condense_id: string } {
    const undone = this.withHandle(engine, task, (handle) => engine.undo(handle, condenseId, nowMs));
    if (undone.kind !== "chat") throw new Error(`chat ${task.id} is held as a conversation file`);
    return { task: this.changed(engine, task, undone.change), condense_id: undone.condense_id };
  }

  /** Pins or unpins a message of the chat, with its tool-pair partners. */
  pin(engine: CondenseEngine, task: ChatTask, id: string, pinned: boolean, nowMs: number): ChatTask {
    const pin = this.withHandle(engine, task, (handle) => engine.pinMessage(handle, id, pinned, nowMs));
    return this.changed(engine, task, pin.change);
  }

  /** Previews a condensation of the chat; `engine` keeps it until `applyPreview` names it. */
  async preview(
    engine: CondenseEngine,
    task: ChatTask,
    options: ChatOptions,
    onEstimate: (estimate: PreviewEstimate) => void,
  ): Promise<PreviewOutcome> {
    const outcome = await this.withHandleAsync(engine, task, (handle) => engine.preview(handle, options, onEstimate));
    return this.previews.note(engine, outcome);
  }

  /** Applies the preview `previewId` exactly as shown; throws when the chat changed since, or
   *  `engine` is not the one that made it. */
  applyPreview(engine: CondenseEngine, task: ChatTask, previewId: string, nowMs: number): { task: ChatTask; record: CondensationRecord } {
    this.previews.check(engine, previewId);
    const applied = this.withHandle(engine, task, (handle) => engine.applyPreview(handle, previewId, nowMs));
    if (applied.kind !== "chat") throw new Error(`chat ${task.id} is held as a conversation file`);
    return { task: this.changed(engine, task, applied.change), record: applied.record };
  }
}

/** A document as the meter reads it (a `vscode.TextDocument` is one). */
export interface DocLike {
  readonly uri: { toString(): string };
  readonly version: number;
  getText(): string;
}

/** A conversation file the engine holds, at one version of the document. */
export interface HeldDoc {
  readonly engine: CondenseEngine;
  readonly key: string;
  readonly version: number;
  readonly handle: TaskHandle;
}

/** Whether `held` is `doc` at its version, in `engine`. */
const holds = (held: HeldDoc | undefined, engine: CondenseEngine, doc: DocLike): held is HeldDoc =>
  held !== undefined && held.engine === engine && held.key === doc.uri.toString() && held.version === doc.version;

/** `doc` held in `engine` (its text crossing once): throws the engine's `invalid_input` when the
 *  file is not a conversation. */
function holdDoc(engine: CondenseEngine, doc: DocLike): HeldDoc {
  const key = doc.uri.toString();
  return { engine, key, version: doc.version, handle: engine.hold("conversation", key, doc.getText()) };
}

/**
 * The tokens of a conversation file for a model, through the engine's copy: an unchanged document
 * is not read again, a changed one is parsed but only its changed messages are counted, in slices
 * (`countHeld`: a large file's first count does not stall the extension host). Tokens are
 * undefined when the file is not a conversation.
 */
export async function heldDocTokens(
  engine: CondenseEngine,
  held: HeldDoc | undefined,
  doc: DocLike,
  model: string | undefined,
): Promise<{ tokens?: number; held?: HeldDoc }> {
  if (holds(held, engine, doc)) {
    try {
      return { tokens: engine.heldTokens(held.handle, model), held };
    } catch (e) {
      if (!isUnknownTask(e)) throw e;
    }
  }
  let next: HeldDoc;
  try {
    next = holdDoc(engine, doc);
  } catch (e) {
    if ((e as { kind?: unknown }).kind === "invalid_input") return {};
    throw e;
  }
  return { tokens: (await engine.countHeld(next.handle, model)).tokens, held: next };
}

/** A held file's condensation: the engine's figures and, when it succeeded, the condensed file's
 *  text to write. */
export interface DocCondensation {
  readonly outcome: HeldCondensation;
  readonly text?: string;
}

/**
 * The conversation files the engine holds for this window: the one the meter measures, which
 * Condense Now, Preview and Undo then work on by handle, so that neither the file's conversation
 * nor the result crosses the boundary as objects (only the file's text, once, and the new text
 * back).
 */
export class HeldDocs {
  private held: HeldDoc | undefined;
  private readonly previews = new PreviewMaker();

  /** `heldDocTokens` on the file last held. */
  async tokens(engine: CondenseEngine, doc: DocLike, model: string | undefined): Promise<number | undefined> {
    const measured = await heldDocTokens(engine, this.held, doc, model);
    this.held = measured.held;
    return measured.tokens;
  }

  /** Holds `doc` in the engine unless it holds this very version already. Throws the engine's
   *  `invalid_input` when the file is not a conversation. */
  hold(engine: CondenseEngine, doc: DocLike): void {
    if (!holds(this.held, engine, doc)) this.held = holdDoc(engine, doc);
  }

  /**
   * Calls `f` with the handle of `doc`, holding it first unless the engine holds this very
   * version; again once if the engine let it go (its check comes before any work: nothing ran).
   * When `f` changes the engine's copy, the file's next count reads it again (it is about to
   * change, or is a session file whose result went elsewhere).
   */
  private async withDoc<T>(engine: CondenseEngine, doc: DocLike, changes: boolean, f: (handle: TaskHandle) => T | Promise<T>): Promise<T> {
    this.hold(engine, doc);
    const held = this.held!;
    if (changes) this.held = undefined;
    try {
      return await f(held.handle);
    } catch (e) {
      if (!isUnknownTask(e)) throw e;
      const again = holdDoc(engine, doc);
      if (!changes) this.held = again;
      return await f(again.handle);
    }
  }

  /** Condenses `doc` in the engine (`condense`). */
  condense(engine: CondenseEngine, doc: DocLike, options: CondenseOptionsInput): Promise<DocCondensation> {
    return this.withDoc(engine, doc, true, async (handle) => {
      const outcome = await engine.condense(handle, options);
      return { outcome, text: outcome.error ? undefined : engine.heldText(outcome.handle) };
    });
  }

  /** Previews a condensation of `doc` (`preview`); `engine` keeps it until `applyPreview`
   *  names it. */
  async preview(
    engine: CondenseEngine,
    doc: DocLike,
    options: CondenseOptionsInput,
    onEstimate: (estimate: PreviewEstimate) => void,
  ): Promise<PreviewOutcome> {
    const outcome = await this.withDoc(engine, doc, false, (handle) => engine.preview(handle, options, onEstimate));
    return this.previews.note(engine, outcome);
  }

  /** Applies the preview `previewId` to `doc` exactly as shown; resolves with the condensed
   *  file's text. Throws when the file changed since, or `engine` is not the one that made it. */
  async applyPreview(engine: CondenseEngine, doc: DocLike, previewId: string): Promise<string> {
    this.previews.check(engine, previewId);
    return await this.withDoc(engine, doc, true, (handle) => {
      const applied = engine.applyPreview(handle, previewId, Date.now());
      if (applied.kind !== "file") throw new Error(`${doc.uri.toString()} is held as a chat`);
      return engine.heldText(applied.handle);
    });
  }

  /** Undoes the last condensation of `doc`: the condensation undone and the file's text with its
   *  hidden messages back. */
  undo(engine: CondenseEngine, doc: DocLike): Promise<{ condense_id: string; text: string }> {
    return this.withDoc(engine, doc, true, (handle) => {
      const undone = engine.undo(handle, undefined, Date.now());
      if (undone.kind !== "file") throw new Error(`${doc.uri.toString()} is held as a chat`);
      return { condense_id: undone.condense_id, text: engine.heldText(undone.handle) };
    });
  }
}
