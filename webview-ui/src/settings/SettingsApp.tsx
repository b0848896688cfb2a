// The settings panel: renders from the extension's `state` message (the providers with their
// forms, the automatic condensation settings, the LLM profiles) and posts each change as it is
// made. Every message that arrives is checked against the contract first.

import { useEffect, useMemo, useReducer } from "react";
import type { Host } from "../host";
import { parseSettingsToWebview, type SettingsToHost } from "../protocol";
import type { Actions } from "./components/actions";
import { AutoSection } from "./components/AutoSection";
import { ProfilesSection } from "./components/ProfilesSection";
import { ProviderCard } from "./components/ProviderCard";
import { ToolsSection } from "./components/ToolsSection";
import { FieldError } from "./components/controls";
import { fieldId, initialSettings, reduceSettings } from "./state";
import "./settings.css";

export function SettingsApp({ host }: { host: Host<SettingsToHost> }) {
  const [view, dispatch] = useReducer(reduceSettings, initialSettings);

  useEffect(() => {
    const onMessage = (event: MessageEvent<unknown>) => {
      const parsed = parseSettingsToWebview(event.data);
      if (!parsed.ok) {
        console.error(`Context Condenser settings: ${parsed.error}`);
        host.post({ type: "error", message: parsed.error });
        dispatch({ type: "unreadable", error: parsed.error });
        return;
      }
      dispatch({ type: "received", message: parsed.value });
    };
    window.addEventListener("message", onMessage);
    host.post({ type: "ready" });
    return () => window.removeEventListener("message", onMessage);
  }, [host]);

  const act = useMemo<Actions>(
    () => ({
      post: (message) => host.post(message),
      checked: (field, error) => dispatch({ type: "checked", field, error }),
    }),
    [host],
  );

  const { snapshot, errors } = view;
  return (
    <main className="settings" data-testid="settings">
      <header className="settings__header">
        <h1>Context Condenser settings</h1>
        <p className="settings__intro">
          How chats are condensed when their context fills up, and the LLM profiles that chat and summarize. Changes are
          saved to your settings as you make them.
        </p>
        {snapshot && snapshot.problems.length > 0 && (
          <div className="problems" data-testid="problems" role="alert">
            <p className="problems__title">Some values in settings.json could not be used:</p>
            <ul>
              {snapshot.problems.map((p, i) => (
                <li key={i}>
                  <code>{p.setting}</code>: {p.message}
                </li>
              ))}
            </ul>
          </div>
        )}
        {view.notices.map((notice) => (
          <div key={notice.id} className="notice-error" data-testid="error" role="alert">
            <p>{notice.text}</p>
            <button
              type="button"
              className="button button--secondary button--small"
              onClick={() => dispatch({ type: "dismiss", id: notice.id })}
            >
              Dismiss
            </button>
          </div>
        ))}
      </header>

      {!snapshot ? (
        <p className="empty-note" data-testid="loading">
          Loading settings…
        </p>
      ) : (
        <>
          <AutoSection auto={snapshot.auto} limits={snapshot.limits} errors={errors} act={act} />

          <section className="settings-section" aria-labelledby="providers-title">
            <h2 id="providers-title">Providers</h2>
            <p className="section-description">
              The ways a chat can be condensed, highest priority first. The default provider is used when none is
              chosen.
            </p>
            <FieldError field={fieldId.default} message={errors[fieldId.default]} />
            {snapshot.providers.length === 0 && <p className="empty-note">No providers are registered.</p>}
            {snapshot.providers.map((provider) => (
              <ProviderCard
                key={provider.id}
                provider={provider}
                isDefault={provider.id === snapshot.defaultProvider}
                shared={snapshot.shared}
                profiles={snapshot.profiles}
                errors={errors}
                act={act}
              />
            ))}
          </section>

          <ProfilesSection
            snapshot={snapshot}
            errors={errors}
            tests={view.tests}
            editor={view.editor}
            act={act}
            onEdit={(originalId) => dispatch({ type: "edit", originalId })}
            onSave={(profile, originalId) => {
              dispatch({ type: "saving", profile });
              host.post(originalId === null ? { type: "saveProfile", profile } : { type: "saveProfile", profile, originalId });
            }}
            onCloseEditor={() => dispatch({ type: "closeEditor" })}
            onTest={(profileId) => {
              dispatch({ type: "testing", profileId });
              host.post({ type: "testConnection", profileId });
            }}
          />

          <ToolsSection tools={snapshot.tools} errors={snapshot.toolErrors} />
        </>
      )}
    </main>
  );
}
