import { useEffect, useLayoutEffect, useMemo, useRef } from "react";
import type { CondensationRecord, Message } from "../protocol";
import type { LiveItem, Notice, ShownError } from "../state";
import { buildTimeline, type Entry } from "../timeline";
import { CondensationRow, CondensingRow } from "./CondensationRow";
import { MessageBubble, StreamingAnswer } from "./MessageBubble";
import { Visible } from "./Visible";

interface Props {
  messages: readonly Message[];
  condensations: readonly CondensationRecord[];
  live: readonly LiveItem[];
  thinking: boolean;
  notices: readonly Notice[];
  error: ShownError | null;
  /** Changes when the log should jump to its end whatever the reader did (a send, another chat). */
  followKey: string;
  onUndo: (condenseId: string) => void;
  onRetry: () => void;
}

/** How close to the end (px) still counts as reading the end. */
const NEAR_END = 32;

const isNearEnd = (el: { scrollHeight: number; scrollTop: number; clientHeight: number }): boolean =>
  el.scrollHeight - el.scrollTop - el.clientHeight <= NEAR_END;

/** The chat: its messages and condensations, then what the turn in flight adds. */
export function ChatLog(props: Props) {
  const { messages, condensations, live, thinking, notices, error, followKey, onUndo, onRetry } = props;
  const entries = useMemo(() => buildTimeline(messages, condensations), [messages, condensations]);
  const scroller = useRef<HTMLDivElement>(null);
  const following = useRef(true);

  useLayoutEffect(() => {
    following.current = true;
  }, [followKey]);

  // Keep to the end while the chat grows, unless the reader scrolled up. (Opening a group or a
  // summary does not move the view.)
  useLayoutEffect(() => {
    const el = scroller.current;
    if (el && following.current) el.scrollTop = el.scrollHeight;
  }, [entries, live, thinking, notices, error, followKey]);

  // …and when the log itself changes size (the chat list opens, the input grows, the panel resizes).
  useEffect(() => {
    const el = scroller.current;
    if (!el || typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(() => {
      if (following.current) el.scrollTop = el.scrollHeight;
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, []);

  const empty = entries.length === 0 && live.length === 0;
  const waiting = thinking && !live.some((i) => i.kind === "answer" || i.kind === "condensing");
  return (
    <div
      className="log"
      ref={scroller}
      onScroll={(e) => (following.current = isNearEnd(e.currentTarget))}
      role="region"
      tabIndex={0}
      aria-label="Chat messages"
    >
      {empty && (
        <div className="empty" data-testid="empty">
          <p>No messages yet.</p>
          <p>Write below to start a chat. When the context fills up, it is condensed — every condensation is shown here and can be undone.</p>
        </div>
      )}
      <Entries entries={entries} onUndo={onUndo} />
      {live.map((item, i) => (
        <LiveRow key={liveKey(item, i)} item={item} />
      ))}
      {waiting && (
        <div className="status" role="status">
          <span className="spinner" aria-hidden="true" /> Thinking…
        </div>
      )}
      {notices.map((n) => (
        <div key={n.id} className="notice" data-testid="notice" role="status">
          <Visible text={n.text} />
        </div>
      ))}
      {error && (
        <div className="error" data-testid="error" role="alert">
          <p>
            <strong>Error{error.kind ? ` (${error.kind})` : ""}:</strong> <Visible text={error.message} />
          </p>
          {error.retryable && (
            <button type="button" className="button" data-testid="retry" onClick={onRetry}>
              Retry
            </button>
          )}
        </div>
      )}
    </div>
  );
}

function Entries({ entries, onUndo }: { entries: readonly Entry[]; onUndo: (condenseId: string) => void }) {
  return (
    <>
      {entries.map((entry) =>
        entry.kind === "message" ? (
          <MessageBubble key={entry.message.id} message={entry.message} />
        ) : (
          <CondensationRow
            key={`condensation-${entry.record.condense_id}`}
            record={entry.record}
            summary={entry.record.summary || (entry.summary && textOf(entry.summary)) || null}
            hiddenCount={entry.hiddenCount}
            onUndo={onUndo}
          >
            <Entries entries={entry.hidden} onUndo={onUndo} />
          </CondensationRow>
        ),
      )}
    </>
  );
}

function LiveRow({ item }: { item: LiveItem }) {
  switch (item.kind) {
    case "user":
      return <MessageBubble message={item.message} />;
    case "answer":
      return <StreamingAnswer answer={item} />;
    case "condensing":
      return <CondensingRow {...item} />;
    case "condensed":
      return <CondensationRow record={item.record} summary={item.record.summary || null} hiddenCount={0} />;
  }
}

function liveKey(item: LiveItem, index: number): string {
  switch (item.kind) {
    case "user":
      return `user-${item.message.id}`;
    case "answer":
      return `answer-${item.id}`;
    case "condensing":
      return `condensing-${index}`;
    case "condensed":
      return `condensed-${item.record.condense_id}`;
  }
}

const textOf = (message: Message): string =>
  message.content
    .map((b) => (b.type === "text" && typeof b["text"] === "string" ? b["text"] : ""))
    .join("\n")
    .trim();
