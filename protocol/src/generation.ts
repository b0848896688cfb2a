// A profile's per-phase generation settings (the chat phase's and the condense phase's output
// budget and temperature), checked the same way by the settings panel before it posts a profile
// and by the extension when it reads settings.json or saves a profile. The core clamps what it
// sends to the model's capabilities; these checks refuse what cannot be meant.

import { LlmProfile, type GenerationParams } from "./generated";

/** The two phases a profile sets generation parameters for. */
export const PHASES = ["chat", "condense"] as const;
export type Phase = (typeof PHASES)[number];

/** The widest temperature range a profile may set (OpenAI's; the core clamps Anthropic's to 0–1). */
export const TEMPERATURE_RANGE = { min: 0, max: 2 } as const;

/** The keys a phase's parameters may hold in settings. */
const PARAM_KEYS = new Set<string>(["max_input_tokens", "max_output_tokens", "temperature"]);

/** What the core uses for a phase the profile leaves out (the generated schema's default). */
export function phaseDefault(phase: Phase): GenerationParams {
  return LlmProfile.shape[phase].parse(undefined);
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Why a phase's output budget is not usable, or undefined. `window`: the profile's context window. */
export function outputBudgetProblem(n: unknown, window: number | undefined): string | undefined {
  if (typeof n !== "number" || !Number.isInteger(n) || n < 1) return "the output budget must be a whole number of tokens above 0";
  if (window !== undefined && n >= window) {
    return `the output budget (${n}) must be below the context window (${window})`;
  }
  return undefined;
}

/** Why a temperature is not usable, or undefined. */
export function temperatureProblem(t: unknown): string | undefined {
  const { min, max } = TEMPERATURE_RANGE;
  if (typeof t !== "number" || !Number.isFinite(t) || t < min || t > max) return `the temperature must be a number from ${min} to ${max}`;
  return undefined;
}

/**
 * Why a profile's `chat` or `condense` value (as settings hold it) is not usable, or undefined.
 * Absent values and nulls leave the default.
 */
export function phaseProblem(phase: Phase, value: unknown, window: number | undefined): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isObject(value)) return `${phase} must be an object with max_output_tokens and temperature`;
  for (const key of Object.keys(value)) {
    if (!PARAM_KEYS.has(key)) return `${phase} has an unknown field "${key}" (max_input_tokens, max_output_tokens, temperature)`;
  }
  const out = value.max_output_tokens;
  if (out !== undefined && out !== null) {
    const problem = outputBudgetProblem(out, window);
    if (problem) return `${phase}: ${problem}`;
  }
  const input = value.max_input_tokens;
  if (input !== undefined && input !== null && (typeof input !== "number" || !Number.isInteger(input) || input < 1)) {
    return `${phase}: max_input_tokens must be a whole number of tokens above 0`;
  }
  const t = value.temperature;
  if (t !== undefined && t !== null) {
    const problem = temperatureProblem(t);
    if (problem) return `${phase}: ${problem}`;
  }
  return undefined;
}
