import { createContext, useContext } from "react";
import type { Message } from "../protocol";
import type { LiveItem } from "../state";
import { Markdown } from "./Markdown";
import { MessageContent } from "./MessageContent";
import { Visible } from "./Visible";

const ROLE_NAMES = { user: "You", assistant: "Assistant", tool: "Tool" } as const;

/** Pins or unpins a message; absent where messages cannot be pinned (a turn is running). */
export const PinContext = createContext<((id: string, pinned: boolean) => void) | null>(null);

export function MessageBubble({ message }: { message: Message }) {
  const onPin = useContext(PinContext);
  const pinned = Boolean(message.pinned);
  // Only a message the model sees can be pinned; a hidden one keeps its marker.
  const canPin = onPin !== null && !message.condense_parent;
  return (
    <article
      className={`message message--${message.role}${pinned ? " message--pinned" : ""}`}
      data-testid={`message-${message.role}`}
      data-message-id={message.id}
    >
      <div className="message__head">
        <h3 className="message__role">
          {message.is_summary ? "Summary" : ROLE_NAMES[message.role]}
          {pinned && (
            <span className="message__pin-marker" data-testid="pin-marker" title="Pinned: no condensation hides or edits it">
              {" "}· pinned
            </span>
          )}
        </h3>
        {canPin && (
          <button
            type="button"
            className="message__pin"
            data-testid="pin"
            aria-pressed={pinned}
            title={pinned ? "Unpin: condensations may hide or edit this message again" : "Pin: no condensation hides or edits this message"}
            onClick={() => onPin(message.id, !pinned)}
          >
            {pinned ? "Unpin" : "Pin"}
          </button>
        )}
      </div>
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
  return (
    <p className="message__interrupted">
      interrupted: <Visible text={reason} />
    </p>
  );
}
