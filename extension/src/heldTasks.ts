// The host's side of held tasks: the engine keeps a copy of the active chat and of the conversation
// file the meter follows, named by a handle `{id, revision}`, so that a turn or a recount moves only
// what changed across the wasm boundary. The host keeps its own full copy (it saves the chat) and
// sends the whole task only when the engine does not hold exactly that copy: the first time, after
// a chat was loaded or undone, after a fresh engine (settings change, trap), or when the engine
// answers `unknown_task` (evicted). No `vscode` import, so vitest runs it with the real engine.

import type {
  AgentEvent,
  AgentInput,
  ChatOptions,
  ChatOutcome,
  ChatStep,
  ChatTask,
  CondenseOptionsInput,
  ContextStatus,
  HeldCondensation,
  TaskHandle,
} from "@context-condenser/protocol";
import type { CondenseEngine } from "../wasm/condense_wasm";

/** Whether a thrown value is the engine's refusal of a handle it does not hold. */
export function isUnknownTask(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { kind?: unknown }).kind === "unknown_task";
}

/** The host's copy after a held turn: its first `keep` messages, then the step's. */
export function applyStep(task: ChatTask, step: ChatStep): ChatTask {
  const messages = [...task.conversation.messages.slice(0, step.keep), ...step.messages];
  return { ...step.task, conversation: { ...step.task.conversation, messages } };
}

/** The one chat the engine holds for the chat view: the engine, its handle, and the very task
 *  object the host has for that handle. */
export class HeldChat {
  private held: { engine: CondenseEngine; handle: TaskHandle; task: ChatTask } | undefined;

  /** The handle of `task` in `engine`, holding it (the one full crossing) unless the engine
   *  already holds this very object. */
  private handle(engine: CondenseEngine, task: ChatTask): TaskHandle {
    const h = this.held;
    if (h && h.engine === engine && h.task === task) return h.handle;
    const handle = engine.holdChat(task);
    this.held = { engine, handle, task };
    return handle;
  }

  /** Calls `f` with the task's handle; once more with a fresh hold if the engine let it go. */
  private withHandle<T>(engine: CondenseEngine, task: ChatTask, f: (handle: TaskHandle) => T): T {
    try {
      return f(this.handle(engine, task));
    } catch (e) {
      if (!isUnknownTask(e)) throw e;
      this.held = undefined;
      return f(this.handle(engine, task));
    }
  }

  /** `engine.chatContext(task, options)`, by handle. */
  context(engine: CondenseEngine, task: ChatTask, options: ChatOptions): ContextStatus {
    return this.withHandle(engine, task, (handle) => engine.chatContext(handle, options));
  }

  /** `engine.chat(task, input, options, onEvent)`, by handle: only the user's input goes in and
   *  only the changed messages come back; resolves with the full outcome to save. */
  async chat(
    engine: CondenseEngine,
    task: ChatTask,
    input: AgentInput,
    options: ChatOptions,
    onEvent: (event: AgentEvent) => void,
  ): Promise<ChatOutcome> {
    let handle = this.handle(engine, task);
    let step: ChatStep;
    try {
      step = await engine.chatHeld(handle, input, options, onEvent);
    } catch (e) {
      if (!isUnknownTask(e)) throw e;
      // Evicted or changed meanwhile: the check runs before the turn starts, so no event was sent.
      this.held = undefined;
      handle = this.handle(engine, task);
      step = await engine.chatHeld(handle, input, options, onEvent);
    }
    const next = applyStep(task, step);
    this.held = { engine, handle: step.handle, task: next };
    return { task: next, context: step.context };
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
  return { engine, key, version: doc.version, handle: engine.holdConversation(key, doc.getText()) };
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
 * Condense Now then condenses by handle, so that neither the file's conversation nor the result
 * crosses the boundary as objects (only the file's text, once, and the condensed text back).
 */
export class HeldDocs {
  private held: HeldDoc | undefined;

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
   * Condenses `doc` in the engine (`condenseHeld`), holding it first unless the engine holds this
   * very version; again once if the engine let it go. The file's next count reads it again (it is
   * about to change).
   */
  async condense(engine: CondenseEngine, doc: DocLike, options: CondenseOptionsInput): Promise<DocCondensation> {
    const run = async (held: HeldDoc): Promise<DocCondensation> => {
      const outcome = await engine.condenseHeld(held.handle, options);
      return { outcome, text: outcome.error ? undefined : engine.heldText(outcome.handle) };
    };
    this.hold(engine, doc);
    const held = this.held!;
    this.held = undefined;
    try {
      return await run(held);
    } catch (e) {
      // The check comes before the run: nothing ran.
      if (!isUnknownTask(e)) throw e;
      return await run(holdDoc(engine, doc));
    }
  }
}
