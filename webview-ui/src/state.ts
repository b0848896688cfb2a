// The view's state: the last snapshot from the extension, and the live overlay of the turn in
// flight on top of it. Pure: `reduce` is the only way the state changes.
//
// A `state` message is the truth and replaces the overlay's messages. What the snapshot cannot
// know about stays: the last error and the notices (until the user sends the next message) and,
// while the turn is still running, whatever of it the snapshot does not hold yet.

import { compact, dollars } from "./format";
import type {
  AgentEvent,
  ChatTask,
  CondensationRecord,
  CondenseReason,
  CondensationPreview,
  LocalServer,
  Message,
  PreviewEstimate,
  PreviewFailure,
  PreviewSource,
  SetupState,
  Snapshot,
  ToolStatus,
  ToWebview,
} from "./protocol";

/** Something of the turn in flight that the snapshot does not show yet. */
export type LiveItem =
  | { kind: "user"; message: Message }
  | {
      kind: "answer";
      id: string;
      text: string;
      done: boolean;
      /** Why the answer was cut short: `cancelled` or an error kind. */
      interrupted: string | null;
      /** False when the answer was dropped from the history. */
      kept: boolean;
    }
  | { kind: "condensing"; reason: CondenseReason; provider: string; tokens: number; automatic: boolean }
  | { kind: "condensed"; record: CondensationRecord };

export type Answer = Extract<LiveItem, { kind: "answer" }>;

export interface Notice {
  id: number;
  text: string;
}

export interface ShownError {
  kind: string;
  message: string;
  retryable: boolean;
}

/** The preview panel: being made (with the provider's estimate once the core made it, before
 *  any LLM call), shown with Apply and Discard, or failed. */
export type PreviewState =
  | { phase: "running"; source: PreviewSource; estimate?: PreviewEstimate }
  | { phase: "ready"; source: PreviewSource; preview: CondensationPreview }
  | { phase: "failed"; source: PreviewSource; failure: PreviewFailure };

export interface ViewState {
  /** The condensation preview open in the view, if any. */
  preview: PreviewState | null;
  snapshot: Snapshot | null;
  live: LiveItem[];
  /** Between ThinkingStart and ThinkingEnd. */
  thinking: boolean;
  notices: Notice[];
  error: ShownError | null;
  /** The id of the next notice. */
  nextNotice: number;
  /** What the first-run welcome offers, once the extension looked. */
  welcome: { servers: LocalServer[]; tools: ToolStatus[]; agents: string[] } | null;
  /** How the first-run setup is going. */
  setup: { state: SetupState; message: string } | null;
}

export type Action =
  | { type: "received"; message: ToWebview }
  /** The user sent a message: the error and the notices of the last turn are done with. */
  | { type: "sent" }
  /** The user asked to retry: the error is being dealt with. */
  | { type: "retried" };

export const initialState: ViewState = {
  preview: null,
  snapshot: null,
  live: [],
  thinking: false,
  notices: [],
  error: null,
  nextNotice: 1,
  welcome: null,
  setup: null,
};

export function reduce(state: ViewState, action: Action): ViewState {
  switch (action.type) {
    case "sent":
      return { ...state, notices: [], error: null };
    case "retried":
      return { ...state, error: null };
    case "received":
      return receive(state, action.message);
  }
}

function receive(state: ViewState, message: ToWebview): ViewState {
  switch (message.type) {
    case "state":
      return applySnapshot(state, message);
    case "event":
      return belongsToView(state, message.taskId) ? applyEvent(state, message.event) : state;
    case "error":
      return { ...state, error: { kind: "extension", message: message.message, retryable: false } };
    case "welcome":
      return { ...state, welcome: { servers: message.servers, tools: message.tools, agents: message.agents ?? [] } };
    case "setup":
      return { ...state, setup: { state: message.state, message: message.message } };
    case "preview":
      return { ...state, preview: previewState(message) };
  }
}

function previewState(message: Extract<ToWebview, { type: "preview" }>): PreviewState | null {
  const { source } = message;
  if (message.running) return message.estimate ? { phase: "running", source, estimate: message.estimate } : { phase: "running", source };
  if (message.preview) return { phase: "ready", source, preview: message.preview };
  if (message.failure) return { phase: "failed", source, failure: message.failure };
  return null;
}

/** Whether a preview is being made or waits for Apply or Discard: the chat takes no input then. */
export const previewOpen = (state: ViewState): boolean =>
  state.preview !== null && state.preview.phase !== "failed";

function applySnapshot(state: ViewState, { type: _, ...snapshot }: Extract<ToWebview, { type: "state" }>): ViewState {
  const before = state.snapshot?.task?.id ?? null;
  const after = snapshot.task?.id ?? null;
  // Another chat opened, or a new one started: the last chat's error and notices are not this one's.
  // (From no chat to a chat is the first turn of a new chat creating it: its error stays.)
  const otherChat = before !== null && before !== after;
  const messageIds = new Set(snapshot.task?.conversation.messages.map((m) => m.id));
  const recordIds = new Set(snapshot.task?.condensations.map((r) => r.condense_id));
  const stillLive = (item: LiveItem): boolean => {
    switch (item.kind) {
      case "user":
        return !messageIds.has(item.message.id);
      case "answer":
        return !item.done && !messageIds.has(item.id);
      case "condensing":
        return true;
      case "condensed":
        return !recordIds.has(item.record.condense_id);
    }
  };
  return {
    ...state,
    snapshot,
    live: snapshot.busy && !otherChat ? state.live.filter(stillLive) : [],
    thinking: snapshot.busy && !otherChat && state.thinking,
    notices: otherChat ? [] : state.notices,
    error: otherChat ? null : state.error,
  };
}

/** Events of another chat than the one shown (a turn still ending after a switch) are ignored. */
function belongsToView(state: ViewState, taskId: string): boolean {
  const shown = state.snapshot?.task?.id;
  return shown === undefined || shown === taskId;
}

function applyEvent(state: ViewState, event: AgentEvent): ViewState {
  switch (event.type) {
    case "ThinkingStart":
      return { ...state, thinking: true };
    case "ThinkingEnd":
    case "StatusShutdown":
      return { ...state, thinking: false, live: state.live.filter((i) => i.kind !== "condensing") };
    case "UserMessage": {
      const known =
        state.snapshot?.task?.conversation.messages.some((m) => m.id === event.message.id) ||
        state.live.some((i) => i.kind === "user" && i.message.id === event.message.id);
      return known ? state : { ...state, live: [...state.live, { kind: "user", message: event.message }] };
    }
    case "MessageStart":
      return findAnswer(state, event.id) ? state : { ...state, live: [...state.live, newAnswer(event.id, "")] };
    case "MessageContent":
      return findAnswer(state, event.id)
        ? updateAnswer(state, event.id, (a) => ({ ...a, text: a.text + event.delta }))
        : { ...state, live: [...state.live, newAnswer(event.id, event.delta)] };
    case "MessageEnd":
      return updateAnswer(state, event.id, (a) => ({
        ...a,
        done: true,
        interrupted: event.interrupted ?? null,
        kept: event.kept,
      }));
    case "Error":
      return applyError(state, event);
    case "CondenseStart": {
      const { reason, provider, tokens, automatic } = event;
      return {
        ...state,
        live: [
          ...state.live.filter((i) => i.kind !== "condensing"),
          { kind: "condensing", reason, provider, tokens, automatic },
        ],
      };
    }
    case "CondenseEnd": {
      const live = state.live.filter((i) => i.kind !== "condensing");
      if (event.record) return { ...state, live: [...live, { kind: "condensed", record: event.record }] };
      const next = { ...state, live };
      if (!event.error) return next;
      // A run that was not applied may still have cost money (the model answered): say so.
      const spent = event.cost > 0 ? ` (it cost ${dollars(event.cost)}, counted in the chat's total)` : "";
      return addNotice(next, `Condensation failed (${event.error.kind}): ${event.error.message}${spent}`);
    }
    case "CondenseSkipped":
      return addNotice(state, `Automatic condensation skipped at ${compact(event.tokens)} tokens: ${event.reason}`);
  }
}

function applyError(state: ViewState, event: Extract<AgentEvent, { type: "Error" }>): ViewState {
  const error = { ...event.error, retryable: event.retryable };
  const open = state.live.find((i) => i.kind === "answer" && !i.done);
  let live = state.live;
  if (open && open.kind === "answer") {
    // The answer that was streaming is cut short here, if no MessageEnd said so already.
    live = live.map((i) => (i === open ? { ...open, done: true, interrupted: event.error.kind } : i));
  } else if (event.partial && !live.some((i) => i.kind === "answer")) {
    live = [...live, { ...newAnswer("partial", event.partial), done: true, interrupted: event.error.kind }];
  }
  return { ...state, live, error };
}

function newAnswer(id: string, text: string): Answer {
  return { kind: "answer", id, text, done: false, interrupted: null, kept: true };
}

function findAnswer(state: ViewState, id: string) {
  return state.live.find((i) => i.kind === "answer" && i.id === id);
}

function updateAnswer(
  state: ViewState,
  id: string,
  update: (answer: Answer) => Answer,
): ViewState {
  return {
    ...state,
    live: state.live.map((i) => (i.kind === "answer" && i.id === id ? update(i) : i)),
  };
}

function addNotice(state: ViewState, text: string): ViewState {
  return {
    ...state,
    notices: [...state.notices, { id: state.nextNotice, text }],
    nextNotice: state.nextNotice + 1,
  };
}

/** Whether a turn is running: the snapshot says so, or its events are streaming in. */
export const isBusy = (state: ViewState): boolean => Boolean(state.snapshot?.busy) || state.thinking;

/** The messages of the chat shown, by the snapshot. */
export const snapshotMessages = (state: ViewState): readonly Message[] =>
  state.snapshot?.task?.conversation.messages ?? NO_MESSAGES;

const NO_MESSAGES: readonly Message[] = [];

/** What a chat spent on condensing: the condensations applied, and the runs that were not. */
export interface ChatCost {
  applied: number;
  unapplied: number;
  total: number;
}

/** The chat's spending on condensations, or null when it spent nothing. */
export function chatCost(task: ChatTask | null | undefined): ChatCost | null {
  if (!task) return null;
  const applied = task.condensations.reduce((sum, r) => sum + r.cost, 0);
  const unapplied = task.unapplied_cost ?? 0;
  const total = applied + unapplied;
  return total > 0 ? { applied, unapplied, total } : null;
}

/** The chat's health line: condensations so far, tokens they saved, what condensing cost. */
export interface ChatHealth {
  condensations: number;
  tokensSaved: number;
  cost: number;
}

export function chatHealth(task: ChatTask | null | undefined): ChatHealth | null {
  if (!task) return null;
  const tokensSaved = task.condensations.reduce((sum, r) => sum + Math.max(0, r.tokens_before - r.tokens_after), 0);
  return { condensations: task.condensations.length, tokensSaved, cost: chatCost(task)?.total ?? 0 };
}
