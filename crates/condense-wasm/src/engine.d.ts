// Generated from the classes' methods (crates/condense-wasm/src/surface.rs): do not edit.
// `cargo test -p condense-wasm` checks it; CONDENSE_WRITE_SURFACE=1 writes it.

import type {
  AgentEvent,
  AgentInputInput,
  Applied,
  ChatChange,
  ChatOptionsInput,
  ChatPin,
  ChatStep,
  CondenseOptionsInput,
  ConnectionReport,
  ContextStatus,
  Conversation,
  ConversationInput,
  GatewayAnswerHead,
  GatewayAnswerInput,
  GatewayForward,
  GatewayHeadInput,
  GatewayPreview,
  GatewayReport,
  GatewayRequestInput,
  GatewayRetry,
  GatewayRouted,
  GatewaySessionView,
  GatewaySetup,
  GatewayStartInput,
  GatewayStarted,
  GatewayStateChanges,
  GatewaySummary,
  GatewayUndone,
  GatewayVariable,
  HeldCondensation,
  HeldCount,
  HeldKindInput,
  HostMetadata,
  LlmTargetInput,
  ModelUseInput,
  PreviewEstimate,
  PreviewOutcome,
  ProviderConfigUpdateInput,
  ProviderEntry,
  ProviderInfo,
  SettingChangeInput,
  TaskHandle,
  TaskHandleInput,
  TokenReport,
  ToolConfigError,
  ToolSourceInput,
  ToolStatus,
  Undone,
} from "@context-condenser/protocol";

/** The methods of `CondenseEngine`, declared from their Rust description. */
export interface CondenseEngine {
  /**
   * A new, empty chat, held by the engine: its handle, and the task to save.
   */
  newChat(id: string, nowMs: number): ChatChange;
  /**
   * Holds a task under the host's `id`, replacing what was held there, and returns its
   * handle: a saved chat (`kind` `chat`: the text of its file, a `ChatTask` as JSON, whose id
   * is `id`) or a conversation file (`conversation`: text or object, any supported format;
   * holding the new text of the same id later recounts only the messages that changed). The
   * one way a whole task enters the engine: on load, and when the engine answered
   * `unknown_task` (it holds at most eight tasks, the least recently used going first).
   */
  hold(kind: HeldKindInput, id: string, value: ConversationInput | object | string): TaskHandle;
  /**
   * Lets the task `id` go, with the preview kept of it: whether the engine held it.
   */
  release(id: string): boolean;
  /**
   * Works on one input of a held chat (a user message, retry, condense, shutdown): `onEvent`
   * gets every agent event as it happens; resolves with what changed and the context status.
   * Failures of the turn are `Error` events, and the chat keeps what arrived; rejects only for
   * a bad call, or with `unknown_task` (before the turn starts) when the engine does not hold
   * the handle's revision.
   */
  chat(handle: TaskHandleInput, input: AgentInputInput, options: ChatOptionsInput, onEvent?: ((value: AgentEvent) => void)): Promise<ChatStep>;
  /**
   * How full a held chat's context is for the options' chat profile: only the messages not
   * counted before are counted.
   */
  chatContext(handle: TaskHandleInput, options: ChatOptionsInput): ContextStatus;
  /**
   * Undoes a condensation of a held task, a chat or a conversation file as its handle names:
   * of a chat, the one `condenseId` names (the last one when it is absent), its change dated
   * `nowMs`; of a file, its last one (`condenseId`, when given, must name it). The hidden
   * messages come back as the task's next revision.
   */
  undo(handle: TaskHandleInput, condenseId: string | undefined, nowMs: number): Undone;
  /**
   * Pins (or unpins) a message of a held chat, with its tool-pair partners: no condensation
   * hides or edits a pinned message.
   */
  pinMessage(handle: TaskHandleInput, id: string, pinned: boolean, nowMs: number): ChatPin;
  /**
   * Previews a condensation of a held task with the options' provider: runs it (an LLM summary
   * is written now, once) without applying it, and keeps it in the engine under its
   * `condense_id` until `applyPreview` names it (a new preview of the task replaces it). The
   * options are a chat's (`chat`'s, its model writing the summary) when the handle names a
   * chat, `condense`'s when it names a conversation file. `onEstimate` gets the provider's
   * estimate (tokens before, the estimated cost) before the provider runs. Resolves with what
   * to show, or why there is nothing to apply; the task is not changed.
   */
  preview(handle: TaskHandleInput, options: ChatOptionsInput | CondenseOptionsInput, onEstimate?: ((value: PreviewEstimate) => void)): Promise<PreviewOutcome>;
  /**
   * Applies the preview `previewId` of a held task exactly as shown (no LLM call), a chat or a
   * conversation file as its handle names (a chat's change dated `nowMs`); fails with
   * `invalid_input` when the task changed since, or the engine keeps no such preview.
   */
  applyPreview(handle: TaskHandleInput, previewId: string, nowMs: number): Applied;
  /**
   * Tokens of a held conversation's API view (system prompt and reply priming included, as
   * `countTokens`'s `total_tokens`) for a model (default `gpt-4o`).
   */
  heldTokens(handle: TaskHandleInput, model?: string): number;
  /**
   * `heldTokens` in slices: the messages not counted yet are counted about 12 ms of the
   * host's clock at a time, with a turn of the host's event loop between slices, so that the
   * first count of a large file (a million tokens, or one message of a megabyte) never holds
   * the host's thread for long; the counts are kept. Resolves with the tokens and the number
   * of messages.
   */
  countHeld(handle: TaskHandleInput, model?: string): Promise<HeldCount>;
  /**
   * Condenses a held conversation file in the engine with the options' provider. Its messages
   * stay in the engine as the file's next revision (the result's `handle`; `heldText` gives
   * its text); the result carries the summary, cost, tokens after and metrics. A failed run
   * changes nothing and resolves with the call's handle and the error; rejects only for a bad
   * call (an unknown or disabled provider, a chat's handle: a chat condenses through `chat`,
   * its input `condense`).
   */
  condense(handle: TaskHandleInput, options?: CondenseOptionsInput): Promise<HeldCondensation>;
  /**
   * A held conversation as the text of a conversation file: this project's format, JSON
   * indented by two spaces (what a file gets written with).
   */
  heldText(handle: TaskHandleInput): string;
  /**
   * Reads a conversation (this project's format, OpenAI chat, or Anthropic messages; as text
   * or as an object) and returns it in this project's format.
   */
  parseConversation(value: ConversationInput | object | string): Conversation;
  /**
   * Tokens of the conversation's API view for a model (default `gpt-4o`).
   */
  countTokens(value: ConversationInput | object | string, model?: string): TokenReport;
  /**
   * Tokens of a plain text for a model (default `gpt-4o`): exactly tiktoken's
   * `encode_ordinary(text).length` in the model's encoding, no framing added.
   */
  countText(text: string, model?: string): number;
  /**
   * The prompt of the manual provider, to copy into any chat.
   */
  renderManualRequest(value: ConversationInput | object | string, options?: CondenseOptionsInput): string;
  /**
   * The providers, highest priority first.
   */
  listProviders(enabledOnly?: boolean): ProviderInfo[];
  /**
   * Changes a provider's settings; a bad configuration changes nothing.
   */
  updateProviderConfig(id: string, update: ProviderConfigUpdateInput): void;
  /**
   * Sets the default provider; it must be registered.
   */
  setDefaultProvider(id: string): void;
  /**
   * The settings panel's cards: every registered provider, highest priority first, with its
   * configuration and the schema of its configuration form.
   */
  providerEntries(): ProviderEntry[];
  /**
   * The core's limits and defaults (threshold range, default threshold, minimum gain and
   * provider, …) and each kind of LLM profile with its default base URL, window and whether it
   * needs a key: what a host reads and checks its settings with, instead of copies.
   */
  hostMetadata(): HostMetadata;
  /**
   * Whether a setting may be saved: `undefined` when it may, else the message to show beside
   * the field. Nothing changes; an unreadable change is an `invalid_input` error.
   */
  checkSetting(change: SettingChangeInput): string | undefined;
  /**
   * Replaces the tool registry by the shipped entries, then each source's in order (a later
   * entry with the same id replaces an earlier one). A source that cannot be used is left
   * out; returns the errors of those, each naming its file, line and column.
   */
  setToolSources(sources: ToolSourceInput[]): ToolConfigError[];
  /**
   * Every tool, shipped first, with where its program was found (through the host's
   * `locate`; nothing is found on a host that cannot run programs).
   */
  tools(): ToolStatus[];
  /**
   * Test Connection: one short real request with the profile and key; resolves with the
   * latency, the model the server names and its reply; rejects with the typed `llm_*` error.
   * `cancel(scope)` with the same scope stops it. `uses`: what the profile is set up to be
   * (`chat`, `summarize`); a CLI tool whose entry leaves one out rejects with
   * `llm_tool_unsupported` before it runs.
   */
  testConnection(llm: LlmTargetInput, scope?: string, uses?: ModelUseInput[]): Promise<ConnectionReport>;
  /**
   * Starts a gateway, restoring `options.state` when it is a state this gateway can read
   * (`started()` says why not otherwise). It runs until `stop()`: the host stops one before
   * starting the next on the same port.
   */
  startGateway(options: GatewayStartInput): Gateway;
}

/** The methods of `Gateway`, declared from their Rust description. */
export interface Gateway {
  /**
   * Why the gateway started as it did: the upstreams' origins, and why the saved state was not
   * used, if it was not.
   */
  started(): GatewayStarted;
  /**
   * Stops the gateway: its background work is cancelled and its sessions are dropped (save
   * them first); every call after fails with `gateway_stopped`. Stopping again does nothing.
   */
  stop(): void;
  /**
   * The port the host's server bound, which the guard takes as the gateway's own.
   */
  bound(port: number): void;
  /**
   * Where a request goes: answered at once (health, statistics, a refusal, not found) or
   * upstream.
   */
  route(head: GatewayHeadInput): GatewayRouted;
  /**
   * What to send upstream for a request routed there, given its whole body: the headers,
   * the body when rewritten, or an answer at once (a token count).
   */
  request(request: GatewayRequestInput, body: Uint8Array): GatewayForward;
  /**
   * Writes the summary of job `job` with `llm` (`native`), off the request path, and gives it
   * to the session: its next request carries it. A failure keeps the ledger and says why.
   */
  summarize(job: number, llm: LlmTargetInput): Promise<GatewaySummary>;
  /**
   * Gives up job `job` (no model to write it): the ledger stays, and the figures say why.
   */
  dropJob(job: number, reason: string): GatewaySummary;
  /**
   * The upstream answered `status` with `answer` before any byte reached the client: the
   * body to retry with once when it says the prompt is too long, and the recall files to
   * write before.
   */
  tooLong(session: string, status: number, answer: Uint8Array, clientBody: Uint8Array): GatewayRetry | undefined;
  /**
   * The host could not write the recall file at `path` of `session`: the figures say why.
   */
  recallFailed(session: string, path: string, why: string): void;
  /**
   * An upstream's answer arrived: the headers to pass on, and a usage reader for its body.
   */
  answer(answer: GatewayAnswerInput): GatewayAnswerHead;
  /**
   * A chunk of an answer's body, after it was passed on.
   */
  answerChunk(reader: number, chunk: Uint8Array): void;
  /**
   * The answer ended (or was cut off): its usage is counted.
   */
  answerEnd(reader: number): void;
  /**
   * The figures: per session and in total, the configuration, the host's counts.
   */
  report(): GatewayReport;
  /**
   * A session's window and condensations.
   */
  session(session: string): GatewaySessionView;
  /**
   * What the session's next condensation would be if made now.
   */
  preview(session: string): GatewayPreview;
  /**
   * Condenses the session's next request, threshold or not.
   */
  condenseNext(session: string): void;
  /**
   * Pauses the session (forwarded untouched) or resumes it.
   */
  pause(session: string, paused: boolean): void;
  /**
   * Undoes the session's latest condensation: its next request goes out without it.
   */
  undo(session: string): GatewayUndone;
  /**
   * What to write and remove to save the state: the index and the session files that changed
   * since the last call (taken as written), to pass back as `GatewayStart.state` and
   * `GatewayStart.sessions`.
   */
  saveChanges(): GatewayStateChanges;
  /**
   * The host could not write (or remove) the session file `name`: the next save does it again.
   */
  unsaved(name: string): void;
  /**
   * The gateway's own error for a route's API (`anthropic` or `openai`), as that API shapes
   * its errors: the JSON body.
   */
  errorBody(wire: string, status: number, message: string): string;
  /**
   * How to point each client at a gateway at `base` (`http://127.0.0.1:4141`).
   */
  setup(base: string): GatewaySetup[];
  /**
   * The variables that send the agents started in a terminal through a gateway at `base`,
   * for the terminals the host opens while the gateway runs.
   */
  terminalVariables(base: string): GatewayVariable[];
}
