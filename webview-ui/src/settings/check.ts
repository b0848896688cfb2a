// The page's own checks of what is typed into the settings panel, before anything is posted. The
// host checks again (through the core) and may still refuse a value. Pure.

import { phaseDefault, type GenerationParams, type Phase } from "@context-condenser/protocol";
import type { KindMetadata, Limits, ProfileKind, ProfileSettings, ToolStatus } from "../protocol";

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

/** A choice among a field's options; empty is null (the provider's default) when the field is
 *  optional. */
export function checkChoice(value: string, field: { options?: readonly string[] | undefined; optional: boolean }): Checked<string | null> {
  const options = field.options ?? [];
  if (value === "") {
    return field.optional ? { ok: true, value: null } : { ok: false, message: `Choose one of ${options.join(", ")}.` };
  }
  if (!options.includes(value)) return { ok: false, message: `Must be one of ${options.join(", ")}.` };
  return { ok: true, value };
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
  cli: {
    label: "CLI tool",
    about: "A CLI agent you are logged in to (Claude Code, Codex, Gemini CLI), run as a program: no API key.",
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
  /** A cli profile's tool. */
  tool: string;
  model: string;
  contextWindow: string;
  maxOutput: string;
  priceIn: string;
  priceOut: string;
  priceCacheWrite: string;
  priceCacheRead: string;
  /** "" (the default for the prices), "threshold" or "cache-aware". */
  policy: "" | "threshold" | "cache-aware";
  globalThreshold: boolean;
  threshold: string;
  chatMaxOutput: string;
  chatTemperature: string;
  condenseMaxOutput: string;
  condenseTemperature: string;
  /** The profile's phases as saved: what the editor does not show (`max_input_tokens`) is kept. */
  saved: Partial<Record<Phase, GenerationParams>>;
}

export type DraftErrors = Partial<Record<keyof ProfileDraft, string>>;

const text = (n: number | null | undefined) => (n === undefined || n === null ? "" : String(n));

/** The temperature's range: the core's (the `state` message's `limits`). */
export const temperatureRule = (limits: Limits): { min: number; max: number } => ({ min: limits.temperature_min, max: limits.temperature_max });

/** A temperature typed in a field, within the core's range; empty is null (the default). */
export function checkTemperature(t: string, limits: Limits): Checked<number | null> {
  const typed = t.trim();
  if (typed === "") return { ok: true, value: null };
  const n = Number(typed);
  const { min, max } = temperatureRule(limits);
  if (!DECIMAL.test(typed) || !Number.isFinite(n) || n < min || n > max) return { ok: false, message: `Must be a number from ${min} to ${max}.` };
  return { ok: true, value: n };
}

/** What a phase's empty field means: the core's default for it, if it has one. */
export function phasePlaceholder(phase: Phase, key: "max_output_tokens" | "temperature"): string {
  const value = phaseDefault(phase)[key];
  if (value !== null && value !== undefined) return `${value} (default)`;
  // No cap of the phase's own: answers are limited by the profile's max output.
  return key === "max_output_tokens" ? "Profile's max output" : "Model default";
}

/** The editor's fields for a profile, or for a new one. */
export function draftOf(profile: ProfileSettings | null): ProfileDraft {
  const threshold = profile?.threshold_percent;
  const usesGlobal = threshold === undefined || threshold < 0;
  return {
    id: profile?.id ?? "",
    kind: profile?.kind ?? "openai",
    baseUrl: profile?.base_url ?? "",
    tool: profile?.tool ?? "",
    model: profile?.model ?? "",
    contextWindow: text(profile?.context_window),
    maxOutput: text(profile?.max_output),
    priceIn: text(profile?.price_input_per_mtok),
    priceOut: text(profile?.price_output_per_mtok),
    priceCacheWrite: text(profile?.price_cache_write_per_mtok),
    priceCacheRead: text(profile?.price_cache_read_per_mtok),
    policy: profile?.condense_policy ?? "",
    globalThreshold: usesGlobal,
    threshold: usesGlobal ? "" : String(threshold),
    chatMaxOutput: text(profile?.chat?.max_output_tokens),
    chatTemperature: text(profile?.chat?.temperature),
    condenseMaxOutput: text(profile?.condense?.max_output_tokens),
    condenseTemperature: text(profile?.condense?.temperature),
    saved: { ...(profile?.chat && { chat: profile.chat }), ...(profile?.condense && { condense: profile.condense }) },
  };
}

type PhaseKeys = { maxOutput: "chatMaxOutput" | "condenseMaxOutput"; temperature: "chatTemperature" | "condenseTemperature" };
const PHASE_FIELDS: Record<Phase, PhaseKeys> = {
  chat: { maxOutput: "chatMaxOutput", temperature: "chatTemperature" },
  condense: { maxOutput: "condenseMaxOutput", temperature: "condenseTemperature" },
};

/**
 * A phase's parameters from the editor's fields: null when nothing is set (the core's default for
 * the whole phase). A field left empty beside one that is set takes the core's default for it, as
 * its placeholder says; `max_input_tokens`, which the editor does not show, is kept.
 */
function phaseParams(
  phase: Phase,
  draft: ProfileDraft,
  window: number | null,
  errors: DraftErrors,
  limits: Limits,
): GenerationParams | null | undefined {
  const keys = PHASE_FIELDS[phase];
  const out = checkInteger(draft[keys.maxOutput], { min: 1, optional: true });
  if (!out.ok) errors[keys.maxOutput] = out.message;
  else if (out.value !== null && window !== null && out.value >= window) {
    errors[keys.maxOutput] = `Must be below the context window (${window.toLocaleString("en-US")} tokens).`;
  }
  const temperature = checkTemperature(draft[keys.temperature], limits);
  if (!temperature.ok) errors[keys.temperature] = temperature.message;
  if (!out.ok || !temperature.ok || errors[keys.maxOutput]) return undefined;
  const kept = draft.saved[phase]?.max_input_tokens ?? null;
  if (out.value === null && temperature.value === null && kept === null) return null;
  const fallback = phaseDefault(phase);
  const params: GenerationParams = {};
  if (kept !== null) params.max_input_tokens = kept;
  const anySet = out.value !== null || temperature.value !== null;
  const maxOutput = out.value ?? (anySet ? fallback.max_output_tokens : null);
  const temp = temperature.value ?? (anySet ? fallback.temperature : null);
  if (maxOutput !== null && maxOutput !== undefined) params.max_output_tokens = maxOutput;
  if (temp !== null && temp !== undefined) params.temperature = temp;
  return params;
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
  tools: readonly Pick<ToolStatus, "id" | "models">[] = [],
): { ok: true; profile: ProfileSettings } | { ok: false; errors: DraftErrors } {
  const errors: DraftErrors = {};
  const id = draft.id.trim();
  const model = draft.model.trim();
  const cli = draft.kind === "cli";
  // A cli profile runs a program: it has a tool and no base URL.
  const baseUrl = cli ? "" : draft.baseUrl.trim();
  const tool = cli ? draft.tool.trim() : "";
  if (id === "") errors.id = "Enter an id.";
  else if (id !== originalId && others.some((p) => p.id === id)) errors.id = `A profile named “${id}” exists already.`;
  if (cli) {
    const entry = tools.find((t) => t.id === tool);
    if (tool === "") errors.tool = "Choose a tool.";
    else if (!entry) errors.tool = `There is no tool “${tool}”.`;
    if (model === "") errors.model = "Choose one of the tool's models.";
    else if (entry && !entry.models.includes(model)) errors.model = `${tool} has no model “${model}”.`;
  } else if (model === "") errors.model = "Enter the model id the API expects.";
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
  const priceCacheWrite = checkPrice(draft.priceCacheWrite);
  if (!priceCacheWrite.ok) errors.priceCacheWrite = priceCacheWrite.message;
  const priceCacheRead = checkPrice(draft.priceCacheRead);
  if (!priceCacheRead.ok) errors.priceCacheRead = priceCacheRead.message;
  const threshold = draft.globalThreshold ? null : checkRequiredInteger(draft.threshold, thresholdRule(limits));
  if (threshold && !threshold.ok) errors.threshold = threshold.message;
  const chat = phaseParams("chat", draft, window.ok ? window.value : null, errors, limits);
  const condense = phaseParams("condense", draft, window.ok ? window.value : null, errors, limits);

  if (!window.ok || !maxOutput.ok || !priceIn.ok || !priceOut.ok || !priceCacheWrite.ok || !priceCacheRead.ok || (threshold && !threshold.ok)) {
    return { ok: false, errors };
  }
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  const profile: ProfileSettings = { id, kind: draft.kind, model, context_window: window.value };
  if (baseUrl !== "") profile.base_url = baseUrl;
  if (tool !== "") profile.tool = tool;
  if (maxOutput.value !== null) profile.max_output = maxOutput.value;
  if (priceIn.value !== null) profile.price_input_per_mtok = priceIn.value;
  if (priceOut.value !== null) profile.price_output_per_mtok = priceOut.value;
  if (priceCacheWrite.value !== null) profile.price_cache_write_per_mtok = priceCacheWrite.value;
  if (priceCacheRead.value !== null) profile.price_cache_read_per_mtok = priceCacheRead.value;
  if (draft.policy !== "") profile.condense_policy = draft.policy;
  profile.threshold_percent = threshold ? threshold.value : -1;
  if (chat) profile.chat = chat;
  if (condense) profile.condense = condense;
  return { ok: true, profile };
}
