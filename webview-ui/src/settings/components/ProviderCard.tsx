// One condensation provider: its registry entry (enabled, priority, default) and its form.

import { useId } from "react";
import type { ProfileSettings, ProviderEntry } from "../../protocol";
import { checkInteger, PRIORITY_RULE } from "../check";
import { fieldId } from "../state";
import type { Actions } from "./actions";
import { ConfigForm } from "./ConfigForm";
import { FieldError, NumberInput, Switch } from "./controls";

interface Props {
  provider: ProviderEntry;
  isDefault: boolean;
  shared: Readonly<Record<string, string>>;
  profiles: readonly ProfileSettings[];
  errors: Readonly<Record<string, string>>;
  act: Actions;
}

export function ProviderCard({ provider, isDefault, shared, profiles, errors, act }: Props) {
  const id = useId();
  const { id: providerId } = provider;
  const enabledField = fieldId.providerEnabled(providerId);
  const priorityField = fieldId.providerPriority(providerId);
  const enabledError = errors[enabledField];
  const priorityError = errors[priorityField];
  return (
    <section
      className={`card provider${isDefault ? " provider--default" : ""}`}
      data-testid="provider-card"
      data-provider={providerId}
      aria-labelledby={`${id}-name`}
    >
      <div className="card__head">
        <div className="card__title">
          <h3 className="card__name" id={`${id}-name`}>
            {provider.name}
          </h3>
          <code className="card__id">{providerId}</code>
          {isDefault && (
            <span className="badge" data-testid="default-badge">
              Default
            </span>
          )}
        </div>
        <div className="card__switch">
          <Switch
            id={`${id}-enabled`}
            testId="provider-enabled"
            checked={provider.enabled}
            aria-describedby={enabledError ? `${id}-enabled-err` : undefined}
            aria-invalid={Boolean(enabledError) || undefined}
            onSwitch={(enabled) => act.post({ type: "updateProvider", id: providerId, enabled })}
          />
          <label htmlFor={`${id}-enabled`}>Enabled</label>
        </div>
      </div>
      <p className="card__description">{provider.description}</p>
      <FieldError field={fieldId.provider(providerId)} message={errors[fieldId.provider(providerId)]} />
      <FieldError id={`${id}-enabled-err`} field={enabledField} message={enabledError} />
      {isDefault && !provider.enabled && (
        <p className="warning" data-testid="disabled-default-warning" role="status">
          Condense Now will fail: the default provider is disabled
        </p>
      )}
      <div className="card__row">
        <label className="inline-label" htmlFor={`${id}-priority`}>
          Priority
        </label>
        <NumberInput
          id={`${id}-priority`}
          testId="provider-priority"
          className="input--short"
          aria-describedby={priorityError ? `${id}-priority-hint ${id}-priority-err` : `${id}-priority-hint`}
          invalid={Boolean(priorityError)}
          step={1}
          saved={String(provider.priority)}
          check={(t) => checkInteger(t, PRIORITY_RULE)}
          onCommit={(priority) => priority !== null && act.post({ type: "updateProvider", id: providerId, priority })}
          onChecked={(error) => act.checked(priorityField, error)}
        />
        <span className="hint" id={`${id}-priority-hint`}>
          higher comes first
        </span>
        <span className="card__spacer" />
        <button
          type="button"
          className="button button--secondary"
          data-testid="provider-default"
          disabled={isDefault}
          title={isDefault ? "This is the default provider" : "Use this provider when none is chosen"}
          onClick={() => act.post({ type: "setDefault", id: providerId })}
        >
          Set as default
        </button>
      </div>
      <FieldError id={`${id}-priority-err`} field={priorityField} message={priorityError} />
      <ConfigForm provider={provider} shared={shared} profiles={profiles} errors={errors} act={act} />
    </section>
  );
}
