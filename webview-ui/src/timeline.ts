// Where condensations show in a chat. Pure.
//
// A condensation never removes a message: it hides some (`condense_parent = id`) and adds a
// summary (`is_summary`, `condense_id = id`) or edited copies (`condense_id = id`). The chat shows
// each condensation as one row where it happened:
//   - at its summary message, which is shown as the row rather than as a bubble;
//   - otherwise right after the last message it hid;
//   - otherwise right after the first message it added;
//   - otherwise (no message names it) by its time, or at the end.
// The messages it hid are not bubbles of the chat: they are the row's collapsed group. A later
// condensation may hide an earlier one's summary or copies; the earlier row then shows inside the
// later one's group.

import type { CondensationRecord, Message } from "./protocol";

export type Entry =
  | { kind: "message"; message: Message }
  | {
      kind: "condensation";
      record: CondensationRecord;
      /** The summary message the row stands for, if the condensation wrote one. */
      summary: Message | null;
      /** The messages it hid (and rows of condensations shown among them), in chat order. */
      hidden: Entry[];
      /** How many messages it hid. */
      hiddenCount: number;
    };

interface Placement {
  record: CondensationRecord;
  /** Position in the message list: an index (at that message) or between two (x.5). */
  at: number;
  summary: Message | null;
  /** The record whose group holds the row, or null for the chat itself. */
  container: string | null;
}

export function buildTimeline(
  messages: readonly Message[],
  records: readonly CondensationRecord[],
): Entry[] {
  const byId = new Map<string, CondensationRecord>();
  for (const r of records) if (!byId.has(r.condense_id)) byId.set(r.condense_id, r);

  /** The group a message belongs to: the condensation that hid it, if the chat knows it. */
  const groupOf = (m: Message): string | null =>
    m.condense_parent != null && byId.has(m.condense_parent) ? m.condense_parent : null;

  const placements = new Map<string, Placement>();
  for (const record of byId.values()) placements.set(record.condense_id, place(record, messages, groupOf));
  breakCycles(placements);

  const summaries = new Set<Message>();
  for (const p of placements.values()) if (p.summary) summaries.add(p.summary);

  const build = (container: string | null): Entry[] => {
    const items: { at: number; order: number; entry: Entry }[] = [];
    messages.forEach((message, i) => {
      if (groupOf(message) === container && !summaries.has(message)) {
        items.push({ at: i, order: 0, entry: { kind: "message", message } });
      }
    });
    for (const p of placements.values()) {
      if (p.container !== container) continue;
      const id = p.record.condense_id;
      items.push({
        at: p.at,
        order: p.record.at_ms,
        entry: {
          kind: "condensation",
          record: p.record,
          summary: p.summary,
          hidden: build(id),
          hiddenCount: messages.filter((m) => m.condense_parent === id).length,
        },
      });
    }
    return items.sort((a, b) => a.at - b.at || a.order - b.order).map((i) => i.entry);
  };
  return build(null);
}

function place(
  record: CondensationRecord,
  messages: readonly Message[],
  groupOf: (m: Message) => string | null,
): Placement {
  const id = record.condense_id;
  const summaryAt = messages.findIndex((m) => m.is_summary === true && m.condense_id === id);
  if (summaryAt >= 0) {
    const summary = messages[summaryAt]!;
    return { record, at: summaryAt, summary, container: groupOf(summary) };
  }
  const lastHidden = findLastIndex(messages, (m) => m.condense_parent === id);
  if (lastHidden >= 0) {
    // The row sits among the messages around its group, in their group.
    const neighbour = nearest(messages, lastHidden, (m) => m.condense_parent !== id);
    return { record, at: lastHidden + 0.5, summary: null, container: neighbour ? groupOf(neighbour) : null };
  }
  const firstAdded = messages.findIndex((m) => m.condense_id === id);
  if (firstAdded >= 0) {
    return { record, at: firstAdded + 0.5, summary: null, container: groupOf(messages[firstAdded]!) };
  }
  const before = findLastIndex(messages, (m) => m.ts !== undefined && m.ts <= record.at_ms);
  const timed = messages.some((m) => m.ts !== undefined);
  return { record, at: timed ? before + 0.5 : messages.length, summary: null, container: null };
}

/** The message nearest to index `at` that passes `ok`, looking after it first. */
function nearest(messages: readonly Message[], at: number, ok: (m: Message) => boolean): Message | undefined {
  for (let d = 1; d <= messages.length; d++) {
    const after = messages[at + d];
    if (after && ok(after)) return after;
    const before = messages[at - d];
    if (before && ok(before)) return before;
  }
  return undefined;
}

/** A row inside its own group (directly or through others) could never show: it goes to the top. */
function breakCycles(placements: Map<string, Placement>): void {
  for (const start of placements.values()) {
    const seen = new Set<string>([start.record.condense_id]);
    let container = start.container;
    while (container !== null) {
      if (seen.has(container)) {
        start.container = null;
        break;
      }
      seen.add(container);
      container = placements.get(container)?.container ?? null;
    }
  }
}

function findLastIndex<T>(items: readonly T[], ok: (item: T) => boolean): number {
  for (let i = items.length - 1; i >= 0; i--) if (ok(items[i]!)) return i;
  return -1;
}
