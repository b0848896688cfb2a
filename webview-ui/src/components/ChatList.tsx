import { ago } from "../format";
import type { ChatSummary } from "../protocol";
import { Visible, visible } from "./Visible";

interface Props {
  id: string;
  chats: readonly ChatSummary[];
  currentId: string | null;
  now: number;
  onOpen: (id: string) => void;
  onRename: (id: string) => void;
  onDelete: (id: string) => void;
  onClose: () => void;
}

/** The earlier chats, newest first. */
export function ChatList({ id, chats, currentId, now, onOpen, onRename, onDelete, onClose }: Props) {
  const sorted = [...chats].sort((a, b) => b.updated_ms - a.updated_ms);
  return (
    <nav
      id={id}
      className="chats"
      aria-label="Chats"
      onKeyDown={(e) => {
        if (e.key === "Escape") onClose();
      }}
    >
      {sorted.length === 0 ? (
        <p className="chats__empty">No chats yet.</p>
      ) : (
        <ul>
          {sorted.map((chat) => (
            <li key={chat.id} className="chats__row">
              <button
                type="button"
                className="chats__item"
                data-testid="chat-item"
                aria-current={chat.id === currentId ? "true" : undefined}
                onClick={() => onOpen(chat.id)}
              >
                <span className="chats__title">
                  <Visible text={chat.title || "Untitled chat"} />
                </span>
                <span className="chats__meta">
                  {ago(chat.updated_ms, now)} · {chat.messages} {chat.messages === 1 ? "message" : "messages"}
                </span>
              </button>
              <button
                type="button"
                className="button button--secondary button--small chats__action"
                data-testid="chat-rename"
                aria-label={visible(`Rename ${chat.title || "Untitled chat"}`)}
                title="Rename"
                onClick={() => onRename(chat.id)}
              >
                Rename
              </button>
              <button
                type="button"
                className="button button--secondary button--small chats__action"
                data-testid="chat-delete"
                aria-label={visible(`Delete ${chat.title || "Untitled chat"}`)}
                title="Delete"
                onClick={() => onDelete(chat.id)}
              >
                Delete
              </button>
            </li>
          ))}
        </ul>
      )}
    </nav>
  );
}
