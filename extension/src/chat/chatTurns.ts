// The chat view's turns: each input runs through the core's DefaultAgent (CondenseEngine.chat, on
// the chat the engine holds: heldTasks.ts), its events streamed to the webview as they happen, and
// the chat saved after; Condense, Undo and Pin change the active chat through the engine; shutdown
// cancels the turn in flight and ends the chat's session.

import type { AgentEvent, AgentInput, ChatOptions, ChatTask } from "@context-condenser/protocol";
import { ACTIVE_CHAT, type ChatPersistence } from "./chatPersistence";
import type { ChatState } from "./chatState";
import { newChatId } from "./chatStore";
import { asFailure } from "../engine/errors";
import * as notify from "../host/notify";

export class ChatTurns {
  constructor(
    private readonly chat: ChatState,
    private readonly saved: ChatPersistence,
  ) {}

  /** Runs one input through the agent, streaming its events to the webview, and saves the chat;
   *  tracked, so that shutdown can stop it and wait for its save. Nothing starts after shutdown. */
  run(input: AgentInput, progress?: string, provider?: string): Promise<ChatTask | undefined> {
    if (this.chat.inFlight.isClosed) return Promise.resolve(undefined);
    return this.chat.inFlight.track(this.turn(input, progress, provider));
  }

  /** One input through the agent; `provider`, when given, condenses in place of the default. */
  private async turn(input: AgentInput, progress?: string, provider?: string): Promise<ChatTask | undefined> {
    const chat = this.chat;
    const draft = input.type === "user" ? input.content : undefined;
    if (chat.refusedWhileBusy(draft)) return undefined;
    let options: ChatOptions;
    try {
      options = await chat.host.chatOptions();
    } catch (e) {
      // Nothing was sent: the webview puts the text back in its input.
      chat.post({ type: "error", message: asFailure(e).message, draft });
      return undefined;
    }
    const engine = chat.host.engine();
    if (!chat.task) chat.revision = 0;
    const task = chat.task ?? chat.held.newChat(engine, newChatId(), Date.now());
    chat.task = task;
    if (!this.saved.profiles()[task.id]) await this.saved.rememberProfile(task.id, options.llm.profile.id);
    chat.busy = true;
    chat.turnEngine = engine;
    await chat.memento.update(ACTIVE_CHAT, task.id);
    await chat.postState();
    const onEvent = (event: AgentEvent) => {
      chat.post({ type: "event", taskId: task.id, event });
      if (event.type === "Error" && ["llm_auth", "llm_config", "llm_tool_unsupported"].includes(event.error.kind)) {
        chat.host.report(event.error, options.llm.profile.id);
      }
    };
    try {
      const turn = () =>
        chat.held.chat(engine, task, input, { ...options, ...(provider ? { provider } : {}), nowMs: Date.now() }, onEvent).catch((e: unknown) => {
          const failure = asFailure(e);
          if (failure.kind !== "engine_crashed") throw e;
          // The engine was replaced; the chat stays as last saved, and the webview gets its text back.
          chat.post({ type: "error", message: failure.message, draft });
          return undefined;
        });
      const outcome = progress
        ? await notify.progress(progress, (token) => {
            token.onCancellationRequested(() => engine.cancel(task.id));
            return turn();
          })
        : await turn();
      if (!outcome) return undefined;
      chat.task = outcome.task;
      chat.context = outcome.context;
      if (!(await this.saved.persist(outcome.task))) return undefined;
      return outcome.task;
    } finally {
      chat.busy = false;
      chat.turnEngine = undefined;
      chat.host.changed();
      await chat.postState();
    }
  }

  /** Condenses the active chat now, with `chosen` (Condense with…) or else the default provider;
   *  the result shows in the chat. */
  async condense(chosen?: string): Promise<void> {
    await this.saved.restored;
    if (!this.chat.task || this.chat.task.conversation.messages.length === 0) {
      void notify.info("Context Condenser: the chat is empty; there is nothing to condense.");
      return;
    }
    const provider = chosen ?? this.chat.host.engine().defaultProvider;
    const before = this.chat.task.condensations.length;
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
    await this.saved.restored;
    if (!this.chat.task) {
      void notify.info("Context Condenser: no chat is open.");
      return;
    }
    if (this.chat.refusedWhileBusy()) return;
    const undone = this.chat.held.undo(this.chat.host.engine(), this.chat.task, condenseId, Date.now());
    this.chat.task = undone.task;
    const saved = await this.saved.persist(undone.task);
    await this.chat.refresh();
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
    const chat = this.chat;
    const ended = await chat.inFlight.shutdown(() => chat.turnEngine?.cancel(chat.task?.id), ms);
    if (!ended) chat.host.log.warn(`a chat turn had not ended ${ms} ms after shutdown began`);
    const task = chat.task;
    // An engine never built ran no turn: none is built now just to end a session.
    if (!task || !chat.host.engineLoaded()) return;
    const options = chat.host.measureOptions();
    if (!options) return;
    try {
      await chat.held.chat(chat.host.engine(), task, { type: "shutdown" }, { ...options, nowMs: Date.now() }, (event) =>
        chat.post({ type: "event", taskId: task.id, event }),
      );
    } catch (e) {
      chat.host.log.warn(`chat ${task.id}: shutdown: ${asFailure(e).message}`);
    }
  }

  /** Pins or unpins a message of the active chat through the engine (with its tool-pair
   *  partners), and saves the chat. */
  async pin(id: string, pinned: boolean): Promise<void> {
    await this.saved.restored;
    if (!this.chat.task || this.chat.refusedWhileBusy()) return;
    const task = this.chat.held.pin(this.chat.host.engine(), this.chat.task, id, pinned, Date.now());
    this.chat.task = task;
    await this.saved.persist(task);
    await this.chat.refresh();
  }
}
