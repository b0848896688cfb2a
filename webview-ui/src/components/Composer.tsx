import { useEffect, useRef, useState } from "react";

interface Props {
  busy: boolean;
  /** Why the chat cannot be used yet (no model set up): the input is disabled and says so. */
  blocked?: string | null;
  /** Why the chat takes no input now, when a preview waits for Apply or Discard. */
  locked?: string;
  initialText: string;
  /** Text handed back by the extension for a message it could not send; `n` changes each time. */
  restore: { text: string; n: number };
  onTextChange: (text: string) => void;
  onSend: (text: string) => void;
  onStop: () => void;
}

/** The input: Enter sends, Shift+Enter is a newline; Stop while a turn runs. */
export function Composer({ busy, blocked = null, locked, initialText, restore, onTextChange, onSend, onStop }: Props) {
  const [text, setText] = useState(initialText);
  const box = useRef<HTMLTextAreaElement>(null);
  const canSend = !busy && !blocked && !locked && text.trim().length > 0;

  const change = (value: string) => {
    setText(value);
    onTextChange(value);
  };
  // A message the extension could not send comes back into an empty box; what the user typed
  // since then wins.
  useEffect(() => {
    if (restore.n === 0) return;
    setText((current) => {
      if (current.trim() !== "") return current;
      onTextChange(restore.text);
      return restore.text;
    });
  }, [restore]);
  const send = () => {
    if (!canSend) return;
    onSend(text.trim());
    change("");
    box.current?.focus();
  };

  return (
    <form
      className="composer"
      onSubmit={(e) => {
        e.preventDefault();
        send();
      }}
    >
      <textarea
        ref={box}
        className="composer__input"
        data-testid="input"
        aria-label="Message"
        placeholder={
          blocked ?? locked ?? (busy ? "Waiting for the answer…" : "Ask something (Enter to send, Shift+Enter for a new line)")
        }
        title={blocked ?? undefined}
        disabled={Boolean(blocked)}
        rows={2}
        value={text}
        autoFocus
        onChange={(e) => change(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            send();
          }
        }}
      />
      <div className="composer__actions">
        {busy && (
          <button type="button" className="button button--secondary" data-testid="stop" onClick={onStop}>
            Stop
          </button>
        )}
        <button type="submit" className="button" data-testid="send" disabled={!canSend}>
          Send
        </button>
      </div>
    </form>
  );
}
