// The LLM profiles: a row each (with its API key and a connection test), and the editor that adds
// or changes one. An API key goes from its input straight into the `setKey` message: it is never
// held in React state, saved with the view's state or shown; the page only knows whether one is set.

import { useEffect, useId, useRef, useState, type ReactNode } from "react";
import { compact } from "../../format";
import type { GenerationParams } from "@context-condenser/protocol";
import type { ProfileSettings, SettingsSnapshot } from "../../protocol";
import { KIND_TEXT } from "../check";
import { fieldId, type Editor, type TestStatus } from "../state";
import type { Actions } from "./actions";
import { FieldError } from "./controls";
import { Visible } from "../../components/Visible";
import { ProfileEditor } from "./ProfileEditor";

interface Props {
  snapshot: SettingsSnapshot;
  errors: Readonly<Record<string, string>>;
  tests: Readonly<Record<string, TestStatus>>;
  editor: Editor | null;
  act: Actions;
  onEdit: (originalId: string | null) => void;
  onSave: (profile: ProfileSettings, originalId: string | null) => void;
  onCloseEditor: () => void;
  onTest: (profileId: string) => void;
}

export function ProfilesSection(props: Props) {
  const { snapshot, errors, editor, onEdit } = props;
  const id = useId();
  const adding = editor !== null && editor.originalId === null;
  const section = useRef<HTMLElement>(null);
  // When the editor closes and took the focus with it, the focus goes back to what opened it.
  const edited = useRef<string | null | undefined>(undefined);
  useEffect(() => {
    const closed = edited.current !== undefined && editor === null;
    if (closed && (document.activeElement === null || document.activeElement === document.body)) {
      const opener =
        edited.current === null
          ? section.current?.querySelector<HTMLElement>('[data-testid="add-profile"]')
          : [...(section.current?.querySelectorAll<HTMLElement>('[data-testid="profile-row"]') ?? [])]
              .find((r) => r.dataset["profile"] === edited.current)
              ?.querySelector<HTMLElement>('[data-testid="profile-edit"]');
      opener?.focus();
    }
    edited.current = editor ? editor.originalId : undefined;
  }, [editor]);
  const editorFor = (profile: ProfileSettings | null) => (
    <ProfileEditor
      key={profile?.id ?? "new"}
      profile={profile}
      profiles={snapshot.profiles}
      limits={snapshot.limits}
      kinds={snapshot.kinds}
      tools={snapshot.tools}
      rejection={errors[fieldId.profile(profile?.id ?? null)]}
      saving={editor?.saving != null}
      onSave={(p) => props.onSave(p, profile?.id ?? null)}
      onCancel={props.onCloseEditor}
    />
  );
  return (
    <section ref={section} className="settings-section" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>LLM profiles</h2>
      <p className="section-description">
        The models that chats and LLM summaries use. API keys are kept in VS Code's secret storage: this page never shows
        them.
      </p>
      {snapshot.profiles.length === 0 && !adding && <p className="empty-note">No profiles yet.</p>}
      {snapshot.profiles.length > 0 && (
        <ul className="profiles">
          {snapshot.profiles.map((profile) => (
            <ProfileRow
              key={profile.id}
              profile={profile}
              isChatProfile={snapshot.chatProfile === profile.id}
              keySet={snapshot.keys[profile.id] === true}
              test={props.tests[profile.id]}
              error={errors[fieldId.profile(profile.id)]}
              keyError={errors[fieldId.key(profile.id)]}
              editing={editor?.originalId === profile.id}
              editor={editor?.originalId === profile.id ? editorFor(profile) : null}
              act={props.act}
              onEdit={() => onEdit(profile.id)}
              onTest={() => props.onTest(profile.id)}
            />
          ))}
        </ul>
      )}
      {adding ? (
        <div className="card">{editorFor(null)}</div>
      ) : (
        <button type="button" className="button" data-testid="add-profile" onClick={() => onEdit(null)}>
          Add profile
        </button>
      )}
    </section>
  );
}

const kindLabel = (kind: ProfileSettings["kind"]) => KIND_TEXT[kind].label;

/** 0.6 → "$0.60", 0.075 → "$0.075". */
const price = (n: number | undefined) => (n === undefined ? null : `$${Number.isInteger(n * 100) ? n.toFixed(2) : String(n)}`);

interface RowProps {
  profile: ProfileSettings;
  isChatProfile: boolean;
  keySet: boolean;
  test: TestStatus | undefined;
  error: string | undefined;
  keyError: string | undefined;
  editing: boolean;
  editor: ReactNode;
  act: Actions;
  onEdit: () => void;
  onTest: () => void;
}

/** "summaries: 3k tokens, temperature 0.2", for a phase the profile sets. */
function phaseFact(name: string, params: GenerationParams | undefined): string | null {
  if (!params) return null;
  const parts = [
    typeof params.max_output_tokens === "number" ? `${compact(params.max_output_tokens)} tokens` : null,
    typeof params.temperature === "number" ? `temperature ${params.temperature}` : null,
  ].filter(Boolean);
  return parts.length > 0 ? `${name}: ${parts.join(", ")}` : null;
}

function ProfileRow({ profile, isChatProfile, keySet, test, error, keyError, editing, editor, act, onEdit, onTest }: RowProps) {
  const id = useId();
  const [confirming, setConfirming] = useState(false);
  const usesApi = profile.kind !== "manual";
  // A cli profile's tool holds its own login: no key, but Test Connection runs it once.
  const usesKey = usesApi && profile.kind !== "cli";
  const threshold =
    profile.threshold_percent !== undefined && profile.threshold_percent >= 0
      ? `threshold ${profile.threshold_percent}%`
      : "global threshold";
  const prices = [price(profile.price_input_per_mtok), price(profile.price_output_per_mtok)];
  const facts = [
    profile.kind === "cli" && profile.tool ? `${kindLabel(profile.kind)}: ${profile.tool}` : kindLabel(profile.kind),
    profile.model,
    `${compact(profile.context_window)} window`,
    profile.max_output ? `${compact(profile.max_output)} max output` : "max output from the window",
    prices.some(Boolean) ? `${prices[0] ?? "$0"} in / ${prices[1] ?? "$0"} out per 1M tokens` : null,
    cacheFact(profile),
    threshold,
    phaseFact("chat", profile.chat),
    phaseFact("summaries", profile.condense),
  ].filter((f): f is string => f !== null);

  return (
    <li className="card profile" data-testid="profile-row" data-profile={profile.id} aria-labelledby={`${id}-name`}>
      <div className="card__head">
        <div className="card__title">
          <h3 className="card__name" id={`${id}-name`}>
            <Visible text={profile.id} />
          </h3>
          {isChatProfile && (
            <span className="tag" title="Chats use this profile">
              chat profile
            </span>
          )}
          {usesKey && (
            <span className={`badge ${keySet ? "badge--ok" : "badge--missing"}`} data-testid="key-status" data-set={String(keySet)}>
              {keySet ? "key set" : "key not set"}
            </span>
          )}
        </div>
        <div className="card__actions">
          {usesApi && (
            <button
              type="button"
              className="button button--secondary"
              data-testid="profile-test"
              disabled={test?.state === "testing"}
              onClick={onTest}
            >
              Test Connection
            </button>
          )}
          <button type="button" className="button button--secondary" data-testid="profile-edit" disabled={editing} onClick={onEdit}>
            Edit
          </button>
          <button
            type="button"
            className="button button--secondary"
            data-testid="profile-remove"
            aria-expanded={confirming}
            onClick={() => setConfirming(!confirming)}
          >
            Remove
          </button>
        </div>
      </div>
      <p className="profile__facts">
        {facts.map((fact, i) => (
          <span key={i} className={i === 1 ? "profile__model" : undefined}>
            {fact}
          </span>
        ))}
      </p>
      {confirming && (
        <div className="confirm" role="group" aria-label={`Remove ${profile.id}`}>
          <span>
            Remove the profile “{profile.id}”{isChatProfile ? ", which chats use" : ""}?
          </span>
          <button
            type="button"
            className="button button--danger"
            data-testid="profile-remove-confirm"
            onClick={() => {
              setConfirming(false);
              act.post({ type: "removeProfile", id: profile.id });
            }}
          >
            Remove
          </button>
          <button type="button" className="button button--secondary" onClick={() => setConfirming(false)}>
            Cancel
          </button>
        </div>
      )}
      {test && <TestResult test={test} />}
      {!editing && <FieldError field={fieldId.profile(profile.id)} message={error} />}
      {usesKey && !editing && <KeyRow profileId={profile.id} keySet={keySet} error={keyError} act={act} />}
      {!usesApi && !editing && <p className="hint">Manual: no API and no key; prompts are copied by hand.</p>}
      {profile.kind === "cli" && !editing && <p className="hint">CLI tool: no key here; the tool uses its own login.</p>}
      {editor}
    </li>
  );
}

function TestResult({ test }: { test: TestStatus }) {
  let text;
  switch (test.state) {
    case "testing":
      text = "Testing…";
      break;
    case "passed":
      text = `✓ ${Math.round(test.report.latencyMs)} ms · ${test.report.model}`;
      break;
    case "failed":
      text = `✗ ${test.error.kind}: ${test.error.message}`;
      break;
  }
  return (
    <p className={`test-result test-result--${test.state}`} data-testid="test-result" data-state={test.state} role="status">
      {test.state === "testing" && <span className="spinner" aria-hidden="true" />}
      <Visible text={text} />
    </p>
  );
}

/** The API key input. Uncontrolled on purpose: the key stays in the DOM input until Save. */
function KeyRow({ profileId, keySet, error, act }: { profileId: string; keySet: boolean; error: string | undefined; act: Actions }) {
  const id = useId();
  const input = useRef<HTMLInputElement>(null);
  const [filled, setFilled] = useState(false);
  const field = fieldId.key(profileId);
  const save = () => {
    const el = input.current;
    if (!el) return;
    const key = el.value.trim();
    el.value = "";
    setFilled(false);
    if (key === "") return;
    if (key.length > 10_000) {
      act.checked(field, "That is not an API key: it is longer than 10,000 characters.");
      return;
    }
    act.checked(field, null);
    act.post({ type: "setKey", profileId, key });
  };
  return (
    <div className="key">
      <label className="inline-label" htmlFor={`${id}-key`}>
        API key
      </label>
      <input
        ref={input}
        id={`${id}-key`}
        type="password"
        className="input key__input"
        data-testid="key-input"
        autoComplete="off"
        spellCheck={false}
        aria-invalid={Boolean(error) || undefined}
        aria-describedby={error ? `${id}-key-err` : undefined}
        placeholder={keySet ? "Paste a new key to replace the stored one" : "Paste the key"}
        onChange={(e) => setFilled(e.target.value !== "")}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.nativeEvent.isComposing) {
            e.preventDefault();
            save();
          }
        }}
      />
      <button type="button" className="button" data-testid="key-save" disabled={!filled} onClick={save}>
        Save key
      </button>
      {keySet && (
        <button
          type="button"
          className="button button--secondary"
          data-testid="key-clear"
          onClick={() => act.post({ type: "clearKey", profileId })}
        >
          Remove key
        </button>
      )}
      <FieldError id={`${id}-key-err`} field={field} message={error} />
    </div>
  );
}

/** "cache $3.75 write / $0.3 read · cache-aware": the cache's prices and the policy they choose. */
function cacheFact(profile: ProfileSettings): string | null {
  const write = price(profile.price_cache_write_per_mtok);
  const read = price(profile.price_cache_read_per_mtok);
  const cached = write !== null || read !== null;
  const policy = profile.condense_policy ?? (cached ? "cache-aware" : null);
  if (!cached && !policy) return null;
  const prices = cached ? `cache ${write ?? "input price"} write / ${read ?? "input price"} read` : null;
  return [prices, policy === "cache-aware" ? "cache-aware" : policy === "threshold" ? "condenses at the threshold" : null]
    .filter(Boolean)
    .join(" · ");
}
