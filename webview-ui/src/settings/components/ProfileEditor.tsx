// The form that adds a profile or changes one. It checks what it can (ids, models, numbers); the
// host checks the rest (a base URL, for one) and answers `rejected` for `profile.<id>`, shown under
// the form, which stays open with what was typed. A `cli` profile picks a tool and one of its
// models from the tools the host found, and has no base URL (nor key).

import { useId, useState, type ReactNode } from "react";
import type { KindMetadata, Limits, ProfileSettings, ToolStatus } from "../../protocol";
import {
  baseUrlPlaceholder,
  checkProfile,
  draftOf,
  KIND_TEXT,
  phasePlaceholder,
  temperatureRule,
  thresholdRule,
  type DraftErrors,
  type ProfileDraft,
} from "../check";
import { fieldId } from "../state";
import { FieldError } from "./controls";

interface Props {
  /** The profile edited; null for a new one. */
  profile: ProfileSettings | null;
  profiles: readonly ProfileSettings[];
  /** The core's ranges. */
  limits: Limits;
  /** The kinds of profile, in order, with their default base URLs. */
  kinds: readonly KindMetadata[];
  /** The CLI tools a `cli` profile may run. */
  tools: readonly ToolStatus[];
  /** The host's message about the last Save. */
  rejection: string | undefined;
  saving: boolean;
  onSave: (profile: ProfileSettings) => void;
  onCancel: () => void;
}

export function ProfileEditor({ profile, profiles, limits, kinds, tools, rejection, saving, onSave, onCancel }: Props) {
  const id = useId();
  const threshold = thresholdRule(limits);
  const temperature = temperatureRule(limits);
  const originalId = profile?.id ?? null;
  const formField = fieldId.profile(originalId);
  const [draft, setDraft] = useState<ProfileDraft>(() => draftOf(profile));
  const [errors, setErrors] = useState<DraftErrors>({});
  const set = <K extends keyof ProfileDraft>(key: K, value: ProfileDraft[K]) => {
    setDraft((d) => ({ ...d, [key]: value }));
    if (errors[key]) setErrors(({ [key]: _, ...rest }) => rest);
  };

  /** Picks a tool: its first model unless the one typed is among its models, and its context
   *  window when the field is empty or still holds the previous tool's. */
  const chooseTool = (toolId: string) => {
    const next = tools.find((t) => t.id === toolId);
    setDraft((d) => {
      const previous = tools.find((t) => t.id === d.tool);
      const windowUntouched = d.contextWindow === "" || d.contextWindow === String(previous?.contextWindow ?? "");
      return {
        ...d,
        tool: toolId,
        model: next && !next.models.includes(d.model) ? (next.models[0] ?? "") : d.model,
        contextWindow: next?.contextWindow && windowUntouched ? String(next.contextWindow) : d.contextWindow,
      };
    });
    setErrors(({ tool: _t, model: _m, contextWindow: _w, ...rest }) => rest);
  };
  const chooseKind = (kind: ProfileDraft["kind"]) => {
    set("kind", kind);
    // A new cli profile starts with the first tool that was found (else the first one).
    if (kind === "cli" && draft.tool === "") {
      const first = tools.find((t) => t.found !== null) ?? tools[0];
      if (first) chooseTool(first.id);
    }
  };
  const tool = tools.find((t) => t.id === draft.tool);

  const save = () => {
    const checked = checkProfile(draft, profiles, originalId, limits, tools);
    if (!checked.ok) {
      setErrors(checked.errors);
      const first = Object.keys(checked.errors)[0];
      if (first) document.getElementById(`${id}-${first}`)?.focus();
      return;
    }
    setErrors({});
    onSave(checked.profile);
  };

  /** One labelled input with its inline message. */
  const row = (key: keyof ProfileDraft, label: string, input: ReactNode, hint?: string, wide = false) => (
    <div className={`editor__field${wide ? " editor__field--wide" : ""}`}>
      <label className="editor__label" htmlFor={`${id}-${key}`}>
        {label}
      </label>
      {input}
      {hint && (
        <span className="hint" id={`${id}-${key}-hint`}>
          {hint}
        </span>
      )}
      <FieldError id={`${id}-${key}-err`} field={`${formField}.${key}`} message={errors[key]} />
    </div>
  );
  const described = (key: keyof ProfileDraft, hint = false) =>
    [hint ? `${id}-${key}-hint` : "", errors[key] ? `${id}-${key}-err` : ""].filter(Boolean).join(" ") || undefined;
  const text = (key: "id" | "baseUrl" | "model", testId: string, placeholder?: string, hint = false) => (
    <input
      autoFocus={key === "id"}
      id={`${id}-${key}`}
      type="text"
      className="input"
      data-testid={testId}
      aria-invalid={Boolean(errors[key]) || undefined}
      aria-describedby={described(key, hint)}
      spellCheck={false}
      autoComplete="off"
      placeholder={placeholder}
      value={draft[key]}
      onChange={(e) => set(key, e.target.value)}
    />
  );
  const number = (
    key: NumberKey,
    testId: string,
    unit: string,
    options: { step?: string; placeholder?: string; disabled?: boolean } = {},
  ) => (
    <span className="with-unit">
      <input
        id={`${id}-${key}`}
        type="number"
        className="input input--number"
        data-testid={testId}
        aria-invalid={Boolean(errors[key]) || undefined}
        aria-describedby={described(key)}
        min={key === "threshold" ? threshold.min : key.startsWith("price") || isTemperature(key) ? 0 : 1}
        max={key === "threshold" ? threshold.max : isTemperature(key) ? temperature.max : undefined}
        step={options.step ?? "1"}
        placeholder={options.placeholder}
        disabled={options.disabled}
        value={draft[key]}
        onChange={(e) => set(key, e.target.value)}
      />
      <span className="unit">{unit}</span>
    </span>
  );

  return (
    <form
      className="editor"
      data-testid="profile-editor"
      aria-labelledby={`${id}-title`}
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        save();
      }}
      aria-busy={saving || undefined}
    >
      <h3 className="editor__title" id={`${id}-title`}>
        {profile ? `Edit profile “${profile.id}”` : "New profile"}
      </h3>
      <div className="editor__grid">
        {row("id", "Id", text("id", "profile-id", "e.g. gpt-4o-mini"))}
        {row(
          "kind",
          "Kind",
          <select
            id={`${id}-kind`}
            className="select settings-select"
            data-testid="profile-kind"
            aria-describedby={`${id}-kind-hint`}
            value={draft.kind}
            onChange={(e) => chooseKind(e.target.value as ProfileDraft["kind"])}
          >
            {kinds.map((k) => (
              <option key={k.kind} value={k.kind}>
                {KIND_TEXT[k.kind].label}
              </option>
            ))}
          </select>,
          KIND_TEXT[draft.kind].about,
        )}
        {draft.kind === "cli" ? (
          <>
            {row(
              "tool",
              "Tool",
              <select
                id={`${id}-tool`}
                className="select settings-select"
                data-testid="profile-tool"
                aria-invalid={Boolean(errors.tool) || undefined}
                aria-describedby={described("tool", true)}
                value={draft.tool}
                onChange={(e) => chooseTool(e.target.value)}
              >
                {draft.tool === "" && <option value="">Choose a tool</option>}
                {draft.tool !== "" && !tool && <option value={draft.tool}>{draft.tool} (unknown)</option>}
                {tools.map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.name} ({t.id}){t.found === null ? " — not found" : ""}
                  </option>
                ))}
              </select>,
              tool ? (tool.found ? `Found at ${tool.found}` : `Not found: looked at ${tool.searched.join(", ")}`) : undefined,
              true,
            )}
            {row(
              "model",
              "Model",
              <select
                id={`${id}-model`}
                className="select settings-select"
                data-testid="profile-tool-model"
                aria-invalid={Boolean(errors.model) || undefined}
                aria-describedby={described("model")}
                value={draft.model}
                onChange={(e) => set("model", e.target.value)}
              >
                {(draft.model === "" || !tool?.models.includes(draft.model)) && (
                  <option value={draft.model}>{draft.model === "" ? "Choose a model" : `${draft.model} (not a model of this tool)`}</option>
                )}
                {(tool?.models ?? []).map((m) => (
                  <option key={m} value={m}>
                    {m}
                  </option>
                ))}
              </select>,
              undefined,
              true,
            )}
          </>
        ) : (
          <>
            {row(
              "baseUrl",
              "Base URL",
              text("baseUrl", "profile-base-url", baseUrlPlaceholder(draft.kind, kinds), draft.kind !== "manual"),
              draft.kind === "openai-compatible"
                ? "Required for this kind."
                : draft.kind === "manual"
                  ? undefined
                  : "Optional: empty uses the one shown.",
              true,
            )}
            {row("model", "Model", text("model", "profile-model", "The model id the API expects"), undefined, true)}
          </>
        )}
        {row("contextWindow", "Context window", number("contextWindow", "profile-window", "tokens"))}
        {row("maxOutput", "Max output", number("maxOutput", "profile-max-output", "tokens", { placeholder: "Default" }))}
        {row("priceIn", "Input price", number("priceIn", "profile-price-in", "$ / 1M tokens", { step: "any", placeholder: "0" }))}
        {row("priceOut", "Output price", number("priceOut", "profile-price-out", "$ / 1M tokens", { step: "any", placeholder: "0" }))}
        {row(
          "priceCacheWrite",
          "Cache write price",
          number("priceCacheWrite", "profile-price-cache-write", "$ / 1M tokens", { step: "any", placeholder: "Input price" }),
          "Anthropic: 1.25× the input price.",
        )}
        {row(
          "priceCacheRead",
          "Cache read price",
          number("priceCacheRead", "profile-price-cache-read", "$ / 1M tokens", { step: "any", placeholder: "Input price" }),
          "Anthropic: 0.1× the input price; OpenAI: half or less.",
        )}
        {row(
          "policy",
          "When to condense",
          <select
            id={`${id}-policy`}
            className="select settings-select"
            data-testid="profile-policy"
            value={draft.policy}
            onChange={(e) => set("policy", e.target.value as ProfileDraft["policy"])}
          >
            <option value="">Default: cache-aware with a cache price, else at the threshold</option>
            <option value="threshold">At the threshold</option>
            <option value="cache-aware">Cache-aware: when it pays for the cache it rewrites</option>
          </select>,
          "Cache-aware condenses earlier when the saving over the next turns pays for the summary and the cache written again; always at the threshold.",
          true,
        )}
        <fieldset className="editor__field editor__field--wide editor__threshold">
          <legend className="editor__label">Condensation threshold</legend>
          <div className="editor__threshold-row">
            <label className="checkbox-label">
              <input
                type="checkbox"
                className="checkbox"
                data-testid="profile-global-threshold"
                checked={draft.globalThreshold}
                onChange={(e) => set("globalThreshold", e.target.checked)}
              />
              Use the global threshold
            </label>
            <label className="visually-hidden" htmlFor={`${id}-threshold`}>
              Threshold for this profile
            </label>
            {number("threshold", "profile-threshold", "%", {
              disabled: draft.globalThreshold,
              placeholder: draft.globalThreshold ? "global" : `${threshold.min}–${threshold.max}`,
            })}
          </div>
          <FieldError id={`${id}-threshold-err`} field={`${formField}.threshold`} message={errors.threshold} />
        </fieldset>
        {PHASE_TEXT.map(({ phase, legend, about }) => (
          <fieldset key={phase} className="editor__field editor__field--wide editor__phase" data-testid={`profile-${phase}-params`}>
            <legend className="editor__label">{legend}</legend>
            <span className="hint">{about}</span>
            <div className="editor__grid">
              {row(
                `${phase}MaxOutput`,
                "Max output",
                number(`${phase}MaxOutput`, `profile-${phase}-max-output`, "tokens", {
                  placeholder: phasePlaceholder(phase, "max_output_tokens"),
                }),
              )}
              {row(
                `${phase}Temperature`,
                "Temperature",
                number(`${phase}Temperature`, `profile-${phase}-temperature`, `${temperature.min}–${temperature.max}`, {
                  step: "0.1",
                  placeholder: phasePlaceholder(phase, "temperature"),
                }),
              )}
            </div>
          </fieldset>
        ))}
      </div>
      <FieldError className="editor__rejection" field={formField} message={rejection} />
      <div className="editor__actions">
        <button type="submit" className="button" data-testid="profile-save">
          Save
        </button>
        <button type="button" className="button button--secondary" data-testid="profile-cancel" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

type NumberKey =
  | "contextWindow"
  | "maxOutput"
  | "priceIn"
  | "priceOut"
  | "priceCacheWrite"
  | "priceCacheRead"
  | "threshold"
  | "chatMaxOutput"
  | "chatTemperature"
  | "condenseMaxOutput"
  | "condenseTemperature";

const isTemperature = (key: NumberKey) => key === "chatTemperature" || key === "condenseTemperature";

/** The two phases whose generation settings a profile holds, as the editor names them. */
const PHASE_TEXT = [
  { phase: "chat", legend: "Chat requests", about: "The answer's budget and temperature when you chat with this profile." },
  {
    phase: "condense",
    legend: "Summaries",
    about: "The summary's budget and temperature when this profile condenses. Empty fields keep the default.",
  },
] as const;
