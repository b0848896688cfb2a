import type { Message } from "../protocol";
import type { LiveItem } from "../state";
import { Markdown } from "./Markdown";
import { MessageContent } from "./MessageContent";

const ROLE_NAMES = { user: "You", assistant: "Assistant", tool: "Tool" } as const;

export function MessageBubble({ message }: { message: Message }) {
  return (
    <article className={`message message--${message.role}`} data-testid={`message-${message.role}`}>
      <h3 className="message__role">{message.is_summary ? "Summary" : ROLE_NAMES[message.role]}</h3>
      <MessageContent message={message} />
      {message.interrupted && <Interrupted reason={message.interrupted} />}
    </article>
  );
}

/** The answer streaming in (or just streamed), before the snapshot has it. */
export function StreamingAnswer({ answer }: { answer: Extract<LiveItem, { kind: "answer" }> }) {
  return (
    <article
      className={`message message--assistant${answer.done ? "" : " message--streaming"}`}
      data-testid="message-assistant"
      aria-busy={!answer.done}
    >
      <h3 className="message__role">Assistant</h3>
      {answer.text && <Markdown text={answer.text} />}
      {!answer.done && <span className="cursor" aria-hidden="true" />}
      {answer.interrupted && <Interrupted reason={answer.interrupted} />}
      {answer.done && !answer.kept && <p className="message__note">Not kept in the chat.</p>}
    </article>
  );
}

function Interrupted({ reason }: { reason: string }) {
  return <p className="message__interrupted">interrupted: {reason}</p>;
}
