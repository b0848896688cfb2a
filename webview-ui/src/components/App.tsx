import { useCallback, useEffect, useId, useReducer, useRef, useState } from "react";
import type { Host } from "../host";
import { parseToWebview, type ChatViewToHost } from "../protocol";
import { chatCost, chatHealth, initialState, isBusy, previewOpen, reduce, snapshotMessages } from "../state";
import { ChatList } from "./ChatList";
import { ChatLog } from "./ChatLog";
import { Composer } from "./Composer";
import { Header } from "./Header";
import { LinkOpener } from "./Markdown";
import { PinContext } from "./MessageBubble";
import { PreviewPanel } from "./PreviewPanel";
import { Welcome } from "./Welcome";

const NO_CONDENSATIONS: never[] = [];

/** What VS Code keeps for the view while it is hidden: the text being written. */
interface Saved {
  draft: string;
}

const savedDraft = (saved: unknown): string =>
  typeof saved === "object" && saved !== null && typeof (saved as Partial<Saved>).draft === "string"
    ? (saved as Saved).draft
    : "";

export function App({ host }: { host: Host }) {
  const [state, dispatch] = useReducer(reduce, initialState);
  const [chatsOpen, setChatsOpen] = useState(false);
  const [sends, setSends] = useState(0);
  const [initialDraft] = useState(() => savedDraft(host.getState()));
  const [restore, setRestore] = useState({ text: "", n: 0 });
  const chatListId = useId();
  const chatsToggle = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    const onMessage = (event: MessageEvent<unknown>) => {
      const parsed = parseToWebview(event.data);
      if (!parsed.ok) {
        console.error(`Context Condenser webview: ${parsed.error}`);
        host.post({ type: "error", message: parsed.error });
        return;
      }
      const message = parsed.value;
      if (message.type === "error" && message.draft) {
        const text = message.draft;
        setRestore((r) => ({ text, n: r.n + 1 }));
      }
      dispatch({ type: "received", message });
    };
    window.addEventListener("message", onMessage);
    host.post({ type: "ready" });
    return () => window.removeEventListener("message", onMessage);
  }, [host]);

  const post = useCallback((message: ChatViewToHost) => host.post(message), [host]);
  // A link in a message never navigates the webview: the extension opens it through VS Code.
  const openLink = useCallback((url: string) => post({ type: "openLink", url }), [post]);
  const onUndo = useCallback((condenseId: string) => post({ type: "undo", condenseId }), [post]);

  const { snapshot } = state;
  const task = snapshot?.task ?? null;
  const messages = snapshotMessages(state);
  const busy = isBusy(state);
  // While a preview is made or waits for Apply or Discard, the chat takes no new input.
  const previewing = previewOpen(state);
  const onPin = useCallback((id: string, pinned: boolean) => post({ type: "pin", id, pinned }), [post]);

  return (
    <LinkOpener value={openLink}>
      <div className="app">
        <Header
          profiles={snapshot?.profiles ?? []}
          profileId={snapshot?.profileId ?? null}
          context={snapshot?.context ?? null}
          cost={chatCost(task)}
          health={chatHealth(task)}
          canCondense={!busy && !previewing && messages.length > 0}
          chatsOpen={chatsOpen}
          chatListId={chatListId}
          chatsToggle={chatsToggle}
          onSelectProfile={(id) => post({ type: "selectProfile", id })}
          onCondense={() => post({ type: "condense" })}
          onCondenseWith={() => post({ type: "condenseWith" })}
          onPreview={() => post({ type: "preview" })}
          onManual={() => post({ type: "condenseManually" })}
          onNewChat={() => post({ type: "newChat" })}
          onToggleChats={() => setChatsOpen(!chatsOpen)}
        />
        {chatsOpen && (
          <ChatList
            id={chatListId}
            chats={snapshot?.chats ?? []}
            currentId={task?.id ?? null}
            now={Date.now()}
            onOpen={(id) => {
              post({ type: "openChat", id });
              setChatsOpen(false);
            }}
            onRename={(id) => post({ type: "renameChat", id })}
            onDelete={(id) => post({ type: "deleteChat", id })}
            onClose={() => {
              setChatsOpen(false);
              chatsToggle.current?.focus();
            }}
          />
        )}
        {snapshot?.blocked && !task ? (
          <Welcome
            offers={state.welcome}
            setup={state.setup}
            onSetUp={(choice) => post(choice)}
            onProbe={() => post({ type: "probeLocal" })}
            onGateway={() => post({ type: "useGateway" })}
          />
        ) : (
        <PinContext.Provider value={busy || previewing ? null : onPin}>
        <ChatLog
          messages={messages}
          condensations={task?.condensations ?? NO_CONDENSATIONS}
          live={state.live}
          thinking={state.thinking}
          notices={state.notices}
          error={state.error}
          followKey={`${task?.id ?? ""}:${sends}`}
          onUndo={onUndo}
          onRetry={() => {
            dispatch({ type: "retried" });
            post({ type: "retry" });
          }}
        />
        </PinContext.Provider>
        )}
        {state.preview && (
          <PreviewPanel
            state={state.preview}
            onApply={() => post({ type: "applyPreview" })}
            onDiscard={() => post({ type: "discardPreview" })}
          />
        )}
        <Composer
          busy={busy}
          blocked={snapshot?.blocked ?? null}
          locked={previewing && !busy ? "Apply or discard the preview above to go on with the chat" : undefined}
          initialText={initialDraft}
          restore={restore}
          onTextChange={(draft) => host.setState({ draft } satisfies Saved)}
          onSend={(text) => {
            dispatch({ type: "sent" });
            post({ type: "send", text });
            setSends((n) => n + 1);
          }}
          onStop={() => post({ type: "stop" })}
        />
      </div>
    </LinkOpener>
  );
}
