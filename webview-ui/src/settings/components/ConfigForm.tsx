// A provider's configuration form, generated from the schema the core sends with it: nothing here
// knows one provider from another.

import { useId, useState } from "react";
import { unhandled, type ConfigField, type ProfileSettings, type ProviderEntry } from "../../protocol";
import { checkChoice, checkInteger, MAX_TEXT, type Checked } from "../check";
import { fieldId } from "../state";
import type { Actions } from "./actions";
import { FieldError, NumberInput, Switch, TextInput } from "./controls";
import { visible } from "../../components/Visible";

interface Props {
  provider: ProviderEntry;
  shared: Readonly<Record<string, string>>;
  profiles: readonly ProfileSettings[];
  errors: Readonly<Record<string, string>>;
  act: Actions;
}

export function ConfigForm({ provider, shared, profiles, errors, act }: Props) {
  if (provider.schema.length === 0) return null;
  return (
    <div className="card__fields">
      {provider.schema.map((field) => (
        <ConfigFieldRow
          key={field.key}
          provider={provider}
          field={field}
          shared={shared}
          profiles={profiles}
          error={errors[fieldId.config(provider.id, field)]}
          act={act}
        />
      ))}
    </div>
  );
}

/** The value a field shows: the shared value, the provider's, or the field's default. */
export function fieldValue(provider: ProviderEntry, field: ConfigField, shared: Readonly<Record<string, string>>): unknown {
  if (field.shared) return shared[field.key] ?? "";
  const value = provider.config[field.key];
  if (value !== undefined && value !== null) return value;
  return field.optional ? null : field.default;
}

const hasTextDefault = (field: ConfigField): field is ConfigField & { default: string } =>
  typeof field.default === "string" && field.default !== "";

function ConfigFieldRow({
  provider,
  field,
  shared,
  profiles,
  error,
  act,
}: Omit<Props, "errors"> & { field: ConfigField; error: string | undefined }) {
  const id = useId();
  const descId = `${id}-desc`;
  const errId = `${id}-err`;
  const fid = fieldId.config(provider.id, field);
  const value = fieldValue(provider, field, shared);
  const describedBy = error ? `${descId} ${errId}` : descId;
  // A reset replaces what is being typed too.
  const [resets, setResets] = useState(0);

  const commit = (next: unknown) => {
    if (field.shared) act.post({ type: "setShared", key: field.key, value: typeof next === "string" ? next : "" });
    else act.post({ type: "updateProvider", id: provider.id, config: { [field.key]: next } });
  };
  const onChecked = (message: string | null) => act.checked(fid, message);

  let control;
  let state: string | null = null;
  let reset = null;
  switch (field.kind) {
    case "integer": {
      const placeholder = field.optional
        ? typeof field.default === "number"
          ? `${field.default} (default)`
          : "Default"
        : undefined;
      control = (
        <span className="with-unit">
          <NumberInput
            id={id}
            testId={`field-${field.key}`}
            aria-describedby={describedBy}
            invalid={Boolean(error)}
            saved={typeof value === "number" ? String(value) : ""}
            min={field.min ?? undefined}
            max={field.max ?? undefined}
            step={1}
            placeholder={placeholder}
            check={(t) => checkInteger(t, field)}
            onCommit={commit}
            onChecked={onChecked}
          />
          {field.unit && <span className="unit">{field.unit}</span>}
        </span>
      );
      break;
    }
    case "boolean":
      control = (
        <Switch
          id={id}
          testId={`field-${field.key}`}
          aria-describedby={describedBy}
          aria-invalid={Boolean(error) || undefined}
          checked={value === true}
          onSwitch={commit}
        />
      );
      break;
    case "text": {
      const text = typeof value === "string" ? value : "";
      const withDefault = hasTextDefault(field);
      // Empty means the default (for a prompt, the built-in one), shown as the placeholder.
      const atDefault = withDefault && (text === "" || (!field.shared && text === field.default));
      if (withDefault && text === "") state = field.multiline ? "(built-in prompt)" : "(default)";
      const check = (t: string): Checked<string | null> => {
        if (t.length > MAX_TEXT) return { ok: false, message: `Too long: at most ${MAX_TEXT.toLocaleString("en-US")} characters.` };
        if (t.trim() === "") return { ok: true, value: field.shared ? "" : field.optional ? null : "" };
        return { ok: true, value: t };
      };
      control = (
        <TextInput
          key={resets}
          id={id}
          testId={`field-${field.key}`}
          describedBy={describedBy}
          invalid={Boolean(error)}
          multiline={Boolean(field.multiline)}
          placeholder={withDefault && field.shared ? field.default : undefined}
          saved={text}
          check={check}
          onCommit={commit}
          onChecked={onChecked}
        />
      );
      if (withDefault) {
        reset = (
          <button
            type="button"
            className="button button--secondary button--small"
            data-testid={`reset-${field.key}`}
            disabled={atDefault}
            onClick={() => {
              setResets((n) => n + 1);
              onChecked(null);
              commit(field.shared ? "" : field.optional ? null : field.default);
            }}
          >
            Reset to default
          </button>
        );
      }
      break;
    }
    case "profile": {
      const current = typeof value === "string" ? value : "";
      const known = current === "" || profiles.some((p) => p.id === current);
      control = (
        <select
          id={id}
          className="select settings-select"
          data-testid={`field-${field.key}`}
          aria-describedby={describedBy}
          aria-invalid={Boolean(error) || undefined}
          value={current}
          onChange={(e) => commit(e.target.value)}
        >
          <option value="">(the chat profile)</option>
          {profiles.map((p) => (
            <option key={p.id} value={p.id}>
              {visible(`${p.id} · ${p.model}`)}
            </option>
          ))}
          {!known && <option value={current}>{current} (missing)</option>}
        </select>
      );
      break;
    }
    case "choice": {
      const current = typeof value === "string" ? value : "";
      const options = field.options ?? [];
      const known = current === "" || options.includes(current);
      const fallback = typeof field.default === "string" && field.default !== "" ? field.default : null;
      control = (
        <select
          id={id}
          className="select settings-select"
          data-testid={`field-${field.key}`}
          aria-describedby={describedBy}
          aria-invalid={Boolean(error) || undefined}
          value={current}
          onChange={(e) => {
            const checked = checkChoice(e.target.value, field);
            if (!checked.ok) return onChecked(checked.message);
            onChecked(null);
            commit(checked.value);
          }}
        >
          {(field.optional || current === "") && <option value="">{fallback ? `Default (${fallback})` : "Default"}</option>}
          {options.map((option) => (
            <option key={option} value={option}>
              {option}
            </option>
          ))}
          {!known && (
            <option value={current} disabled>
              {current} (unknown)
            </option>
          )}
        </select>
      );
      break;
    }
    default:
      return unhandled(field.kind);
  }

  const label = (
    <label className="setting__label" htmlFor={id}>
      {field.label}
    </label>
  );
  const meta = (
    <>
      {state && <span className="setting__state">{state}</span>}
      {field.shared && (
        <span className="tag" title="Stored once and used by every provider that has this field">
          shared
        </span>
      )}
    </>
  );
  return (
    <div className={`setting setting--${field.kind}`} data-field-key={field.key}>
      {field.kind === "boolean" ? (
        <div className="setting__switch-row">
          {control}
          {label}
          {meta}
        </div>
      ) : (
        <div className="setting__title">
          {label}
          {meta}
        </div>
      )}
      <p className="setting__description" id={descId}>
        {field.description}
      </p>
      {field.kind !== "boolean" && (
        <div className={`setting__control${field.multiline ? " setting__control--wide" : ""}`}>
          {control}
          {reset}
        </div>
      )}
      <FieldError id={errId} field={fid} message={error} />
    </div>
  );
}
