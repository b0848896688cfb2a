import type { Ref } from "react";
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
            type="button"
            className="button button--secondary"
            data-testid="condense-with"
            disabled={!canCondense}
            title="Condense this chat now with a provider you pick, for this run only"
            onClick={props.onCondenseWith}
          >
            Condense with…
          </button>
          <button
            type="button"
            className="button button--secondary"
            data-testid="preview-button"
            disabled={!canCondense}
            title="See what a condensation would hide and add, then apply or discard it"
            onClick={props.onPreview}
          >
            Preview
          </button>
          <button
            type="button"
            className="button button--secondary"
            data-testid="manual-button"
            disabled={!canCondense}
            title="Condense with any LLM you paste into: copy the summary request, paste the answer, preview and apply it"
            onClick={props.onManual}
          >
            Manual…
          </button>
          <button
            type="button"
            className="button button--secondary"
            data-testid="new-chat"
            title="Start a new chat"
            onClick={props.onNewChat}
          >
            New Chat
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
