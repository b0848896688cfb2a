// A profile's per-phase generation settings (the chat phase's and the condense phase's output
// budget and temperature): the phases and each one's default, from the generated schema. What
// cannot be meant is refused by the core (`LlmProfile::validate`, through `checkSetting`); the
// temperature's range is in the engine's limits.

import { LlmProfile, type GenerationParams } from "./generated";

/** The two phases a profile sets generation parameters for. */
export const PHASES = ["chat", "condense"] as const;
export type Phase = (typeof PHASES)[number];

/** What the core uses for a phase the profile leaves out (the generated schema's default). */
export function phaseDefault(phase: Phase): GenerationParams {
  return LlmProfile.shape[phase].parse(undefined);
}
