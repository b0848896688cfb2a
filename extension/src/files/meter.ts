// The status-bar context meter's text. Pure. It shows only figures it was given: with no chat and
// no conversation file open it says so, and without a context window it shows the count alone.
// Where the figure comes from (a chat's title, a path) is neutralized (untrusted.ts).

import { compact } from "@context-condenser/protocol";
import { neutralize } from "../host/untrusted";

/** The one `compact`, shared with the webview. */
export { compact };

export interface MeterInput {
  /** Tokens of the conversation's API view, or undefined when there is nothing to measure. */
  tokens?: number;
  /** The chat profile's context window, when a profile is set. */
  contextWindow?: number;
  /** Where the figure comes from, for the tooltip. */
  source?: string;
}

export interface MeterText {
  text: string;
  tooltip: string;
  /** Whether to draw attention: at or past the auto-condense threshold. */
  warning: boolean;
}


/** `thresholdPercent` is null when automatic condensation is off. */
export function meterText(input: MeterInput, thresholdPercent: number | null): MeterText {
  if (input.tokens === undefined) {
    return {
      text: "$(symbol-ruler) ctx: no chat",
      tooltip: "Context Condenser: no chat yet. Open a conversation file (JSON) to measure it.",
      warning: false,
    };
  }
  // A chat's title or a file's path: the tooltip shows it as text.
  const source = input.source ? ` of ${neutralize(input.source)}` : "";
  if (!input.contextWindow) {
    return {
      text: `$(symbol-ruler) ctx ${compact(input.tokens)}`,
      tooltip: `Context Condenser: ${input.tokens.toLocaleString("en-US")} tokens${source}. Set a chat profile to see the share of its context window.`,
      warning: false,
    };
  }
  const percent = Math.round((input.tokens / input.contextWindow) * 100);
  return {
    text: `$(symbol-ruler) ctx ${percent}% · ${compact(input.tokens)}/${compact(input.contextWindow)}`,
    tooltip: `Context Condenser: ${input.tokens.toLocaleString("en-US")} of ${input.contextWindow.toLocaleString("en-US")} tokens${source} (${percent}%). ${thresholdPercent === null ? "Auto-condense is off." : `Auto-condense at ${thresholdPercent}%.`}`,
    warning: percent >= (thresholdPercent ?? 100),
  };
}
