// Builders of contract values for the tests.

import type {
  AgentEvent,
  CondensationRecord,
  ContextStatus,
  Message,
  Snapshot,
  ToWebview,
} from "../../src/protocol";

export const text = (id: string, role: Message["role"], body: string, extra: Partial<Message> = {}): Message => ({
  id,
  ts: 0,
  role,
  content: [{ type: "text", text: body }],
  ...extra,
});

export const record = (id: string, extra: Partial<CondensationRecord> = {}): CondensationRecord => ({
  condense_id: id,
  provider_id: "native",
  reason: "threshold",
  automatic: true,
  tokens_before: 12_000,
  tokens_after: 3_000,
  cost: 0.01234,
  time_ms: 1_500,
  summary: `Summary of ${id}`,
  at_ms: 1_000,
  ...extra,
});

export const context = (extra: Partial<ContextStatus> = {}): ContextStatus => ({
  tokens: 1_200,
  window: 8_000,
  percent: 15,
  threshold_percent: 80,
  limit: 6_000,
  source: "counted",
  ...extra,
});

export function snapshot(messages: Message[] = [], extra: Partial<Snapshot> = {}, condensations: CondensationRecord[] = []): Snapshot {
  return {
    task: {
      id: "t1",
      title: "A chat",
      created_ms: 0,
      updated_ms: 0,
      conversation: { format: "context-condenser/conversation@1", messages },
      condensations,
      guard: { auto_at_ms: [], last_auto_after: null },
    },
    chats: [],
    profiles: [
      { id: "fast", model: "gpt-4o-mini", context_window: 128_000 },
      { id: "local", model: "smollm2", context_window: 8_000 },
    ],
    profileId: "local",
    context: context(),
    busy: false,
    ...extra,
  };
}

export const stateMessage = (s: Snapshot): ToWebview => ({ type: "state", ...s });

export const eventMessage = (event: AgentEvent, taskId = "t1"): ToWebview => ({ type: "event", taskId, event });
