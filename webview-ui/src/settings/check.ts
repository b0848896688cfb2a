// The page's own checks of what is typed into the settings panel, before anything is posted. The
// host checks again (through the core) and may still refuse a value. Pure.

import type { KindMetadata, Limits, ProfileKind, ProfileSettings } from "../protocol";

export type Checked<T> = { ok: true; value: T } | { ok: false; message: string };

export interface IntegerRule {
  min?: number | null | undefined;
  max?: number | null | undefined;
  /** Empty is allowed and reads as null. */
  optional?: boolean | undefined;
}

/** " from 10 to 100", " of 0 or more", … as the core words a range. */
export function rangeText({ min, max }: IntegerRule): string {
  const hasMin = typeof min === "number";
  const hasMax = typeof max === "number";
  if (hasMin && hasMax) return ` from ${min} to ${max}`;
  if (hasMin) return ` of ${min} or more`;
  if (hasMax) return ` of ${max} or less`;
  return "";
}

const INTEGER = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)$/;

/** A whole number typed in a field, in the rule's range; empty is null when the rule allows it. */
export function checkInteger(text: string, rule: IntegerRule): Checked<number | null> {
  const t = text.trim();
  const wanted = `a whole number${rangeText(rule)}`;
  if (t === "") return rule.optional ? { ok: true, value: null } : { ok: false, message: `Enter ${wanted}.` };
  const n = Number(t);
  if (!INTEGER.test(t) || !Number.isSafeInteger(n)) return { ok: false, message: `Must be ${wanted}.` };
  if ((typeof rule.min === "number" && n < rule.min) || (typeof rule.max === "number" && n > rule.max)) {
    return { ok: false, message: `Must be ${wanted}.` };
  }
  return { ok: true, value: n };
}

/** A whole number that must be there. */
export function checkRequiredInteger(text: string, rule: Omit<IntegerRule, "optional">): Checked<number> {
  const r = checkInteger(text, { ...rule, optional: false });
  return r.ok ? { ok: true, value: r.value ?? 0 } : r;
}

/** A number of zero or more, decimals allowed (a price); empty is null. */
export function checkPrice(text: string): Checked<number | null> {
  const t = text.trim();
  if (t === "") return { ok: true, value: null };
  const n = Number(t);
  if (!DECIMAL.test(t) || !Number.isFinite(n) || n < 0) return { ok: false, message: "Must be a number of 0 or more." };
  return { ok: true, value: n };
}

/** The largest text a shared value may hold (the contract's limit). */
export const MAX_TEXT = 100_000;

/** The range of a provider's priority (the core stores an i32). */
export const PRIORITY_RULE: IntegerRule = { min: -2_147_483_648, max: 2_147_483_647 };

/** The threshold's range, globally or per profile: the core's (the `state` message's `limits`). */
export const thresholdRule = (limits: Limits): { min: number; max: number } => ({ min: limits.threshold_min, max: limits.threshold_max });
export const MIN_GAIN_RULE: IntegerRule = { min: 0, max: 100 };

// ---- The profile editor ---------------------------------------------------------------------

export type { ProfileKind };

/** How the page names and explains each kind; which kinds there are, their order and their base
 *  URLs come from the core (the `state` message's `kinds`). */
export const KIND_TEXT: Readonly<Record<ProfileKind, { label: string; about: string }>> = {
  openai: { label: "OpenAI", about: "OpenAI's Chat Completions API." },
  anthropic: { label: "Anthropic", about: "Anthropic's Messages API." },
  "openai-compatible": {
    label: "OpenAI-compatible",
    about: "Any server with the OpenAI format: Ollama, LM Studio, llama.cpp, vLLM, OpenRouter.",
  },
  manual: { label: "Manual", about: "No API: prompts are copied to any chat by hand." },
};

/** What the base URL field shows when empty: the kind's default base URL, if it has one. */
export function baseUrlPlaceholder(kind: ProfileKind, kinds: readonly KindMetadata[]): string {
  const known = kinds.find((k) => k.kind === kind)?.default_base_url;
  if (known) return known;
  return kind === "openai-compatible" ? "Required, e.g. http://127.0.0.1:11434/v1" : "Not used: no API";
}

/** The editor's fields as typed. */
export interface ProfileDraft {
  id: string;
  kind: ProfileKind;
  baseUrl: string;
  model: string;
  contextWindow: string;
  maxOutput: string;
  priceIn: string;
  priceOut: string;
  globalThreshold: boolean;
  threshold: string;
}

export type DraftErrors = Partial<Record<keyof ProfileDraft, string>>;

const text = (n: number | undefined) => (n === undefined ? "" : String(n));

/** The editor's fields for a profile, or for a new one. */
export function draftOf(profile: ProfileSettings | null): ProfileDraft {
  const threshold = profile?.threshold_percent;
  const usesGlobal = threshold === undefined || threshold < 0;
  return {
    id: profile?.id ?? "",
    kind: profile?.kind ?? "openai",
    baseUrl: profile?.base_url ?? "",
    model: profile?.model ?? "",
    contextWindow: text(profile?.context_window),
    maxOutput: text(profile?.max_output),
    priceIn: text(profile?.price_input_per_mtok),
    priceOut: text(profile?.price_output_per_mtok),
    globalThreshold: usesGlobal,
    threshold: usesGlobal ? "" : String(threshold),
  };
}

/**
 * The profile the editor's fields describe, or what is wrong with them, by field. Empty optional
 * fields are left out; "use the global threshold" is `threshold_percent: -1`.
 */
export function checkProfile(
  draft: ProfileDraft,
  others: readonly ProfileSettings[],
  originalId: string | null,
  limits: Limits,
): { ok: true; profile: ProfileSettings } | { ok: false; errors: DraftErrors } {
  const errors: DraftErrors = {};
  const id = draft.id.trim();
  const model = draft.model.trim();
  const baseUrl = draft.baseUrl.trim();
  if (id === "") errors.id = "Enter an id.";
  else if (id !== originalId && others.some((p) => p.id === id)) errors.id = `A profile named “${id}” exists already.`;
  if (model === "") errors.model = "Enter the model id the API expects.";
  if (draft.kind === "openai-compatible" && baseUrl === "") {
    errors.baseUrl = "An OpenAI-compatible profile needs the server's base URL.";
  }
  const positive = { min: 1 };
  const window = checkRequiredInteger(draft.contextWindow, positive);
  if (!window.ok) errors.contextWindow = window.message;
  const maxOutput = checkInteger(draft.maxOutput, { ...positive, optional: true });
  if (!maxOutput.ok) errors.maxOutput = maxOutput.message;
  const priceIn = checkPrice(draft.priceIn);
  if (!priceIn.ok) errors.priceIn = priceIn.message;
  const priceOut = checkPrice(draft.priceOut);
  if (!priceOut.ok) errors.priceOut = priceOut.message;
  const threshold = draft.globalThreshold ? null : checkRequiredInteger(draft.threshold, thresholdRule(limits));
  if (threshold && !threshold.ok) errors.threshold = threshold.message;

  if (!window.ok || !maxOutput.ok || !priceIn.ok || !priceOut.ok || (threshold && !threshold.ok)) {
    return { ok: false, errors };
  }
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  const profile: ProfileSettings = { id, kind: draft.kind, model, context_window: window.value };
  if (baseUrl !== "") profile.base_url = baseUrl;
  if (maxOutput.value !== null) profile.max_output = maxOutput.value;
  if (priceIn.value !== null) profile.price_input_per_mtok = priceIn.value;
  if (priceOut.value !== null) profile.price_output_per_mtok = priceOut.value;
  profile.threshold_percent = threshold ? threshold.value : -1;
  return { ok: true, profile };
}
