import { useEffect, useRef, useState, type KeyboardEvent, type Ref } from "react";
import type { ContextStatus, ProfileOption } from "../protocol";
import { compact, dollars } from "../format";
import type { ChatCost, ChatHealth } from "../state";
import { ContextMeter } from "./ContextMeter";
import { visible } from "./Visible";

interface Props {
  profiles: readonly ProfileOption[];
  profileId: string | null;
  context: ContextStatus | null;
  /** What the chat spent on condensing, applied or not. */
  cost: ChatCost | null;
  /** Condensations so far, tokens saved, what they cost. */
  health: ChatHealth | null;
  canCondense: boolean;
  chatsOpen: boolean;
  chatListId: string;
  chatsToggle: Ref<HTMLButtonElement>;
  onSelectProfile: (id: string) => void;
  onCondense: () => void;
  onCondenseWith: () => void;
  onPreview: () => void;
  onManual: () => void;
  onNewChat: () => void;
  onToggleChats: () => void;
}

export function Header(props: Props) {
  const { profiles, profileId, context, canCondense, chatsOpen, chatListId } = props;
  return (
    <header className="header">
      <div className="header__row">
        <select
          className="select"
          data-testid="profile-select"
          aria-label="Chat profile"
          value={profileId ?? ""}
          disabled={profiles.length === 0}
          onChange={(e) => e.target.value && props.onSelectProfile(e.target.value)}
        >
          {(profileId === null || !profiles.some((p) => p.id === profileId)) && (
            <option value={profileId ?? ""} disabled>
              {profiles.length === 0 ? "No profiles" : "Choose a profile…"}
            </option>
          )}
          {profiles.map((p) => (
            <option key={p.id} value={p.id}>
              {/* An option holds only text: the controls as markers. */}
              {visible(`${p.id} · ${p.model}`)} ({compact(p.context_window)})
            </option>
          ))}
        </select>
        <div className="header__actions">
          <button
            type="button"
            className="button button--secondary"
            data-testid="condense"
            disabled={!canCondense}
            title="Condense this chat now"
            onClick={props.onCondense}
          >
            Condense
          </button>
          <button
            ref={props.chatsToggle}
            type="button"
            className="button button--secondary"
            data-testid="chats-toggle"
            aria-expanded={chatsOpen}
            aria-controls={chatListId}
            onClick={props.onToggleChats}
          >
            Chats
          </button>
          <MoreActions
            items={[
              {
                id: "condense-with",
                label: "Condense with…",
                title: "Condense this chat now with a provider you pick, for this run only",
                disabled: !canCondense,
                run: props.onCondenseWith,
              },
              {
                id: "preview-button",
                label: "Preview",
                title: "See what a condensation would hide and add, then apply or discard it",
                disabled: !canCondense,
                run: props.onPreview,
              },
              {
                id: "manual-button",
                label: "Manual…",
                title: "Condense with any LLM you paste into: copy the summary request, paste the answer, preview and apply it",
                disabled: !canCondense,
                run: props.onManual,
              },
              { id: "new-chat", label: "New Chat", title: "Start a new chat", disabled: false, run: props.onNewChat },
            ]}
          />
        </div>
      </div>
      <ContextMeter context={context} cost={props.cost} />
      {props.health && props.health.condensations > 0 && (
        <div className="health" data-testid="health">
          {props.health.condensations} {props.health.condensations === 1 ? "condensation" : "condensations"} ·{" "}
          {compact(props.health.tokensSaved)} tokens saved · {dollars(props.health.cost)} spent
        </div>
      )}
    </header>
  );
}

interface MenuItem {
  id: string;
  label: string;
  title: string;
  disabled: boolean;
  run: () => void;
}

/** The less used actions behind one "More Actions" button, as VS Code's views keep theirs: a menu
 *  that opens below it, moved through with the arrow keys, closed by Escape, a click outside or
 *  a choice (the focus back on the button). */
function MoreActions({ items }: { items: readonly MenuItem[] }) {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLDivElement>(null);
  const entries = () => Array.from(menu.current?.querySelectorAll<HTMLButtonElement>("[role=menuitem]:not(:disabled)") ?? []);
  useEffect(() => {
    if (!open) return;
    entries()[0]?.focus();
    const outside = (e: MouseEvent) => {
      const target = e.target as Node;
      if (!menu.current?.contains(target) && !button.current?.contains(target)) setOpen(false);
    };
    document.addEventListener("mousedown", outside);
    return () => document.removeEventListener("mousedown", outside);
  }, [open]);
  const close = () => {
    setOpen(false);
    button.current?.focus();
  };
  const onKey = (e: KeyboardEvent) => {
    const list = entries();
    const at = list.indexOf(document.activeElement as HTMLButtonElement);
    if (e.key === "Escape") {
      e.preventDefault();
      close();
    } else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      const step = e.key === "ArrowDown" ? 1 : -1;
      list[(at + step + list.length) % list.length]?.focus();
    } else if (e.key === "Home" || e.key === "End") {
      e.preventDefault();
      (e.key === "Home" ? list[0] : list.at(-1))?.focus();
    }
  };
  return (
    <div className="menu-anchor">
      <button
        ref={button}
        type="button"
        className="button button--secondary button--icon"
        data-testid="more-actions"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-label="More Actions"
        title="More Actions…"
        onClick={() => setOpen(!open)}
      >
        <span aria-hidden="true">⋯</span>
      </button>
      {open && (
        <div ref={menu} className="menu" role="menu" aria-label="More Actions" data-testid="more-menu" onKeyDown={onKey}>
          {items.map((item) => (
            <button
              key={item.id}
              type="button"
              role="menuitem"
              className="menu__item"
              data-testid={item.id}
              disabled={item.disabled}
              title={item.title}
              onClick={() => {
                close();
                item.run();
              }}
            >
              {item.label}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}
