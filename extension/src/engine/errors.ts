// What the user reads when something fails. Pure. The engine's errors carry a `kind` from the one
// closed set the core declares (`ErrorKind`, generated into the protocol package); each kind gets a
// sentence that says what to do, and the actions that help. The switch is exhaustive: a kind added
// in Rust fails this build until it is handled here.

import { ErrorKind, type ErrorInfo, unhandled } from "@context-condenser/protocol";

/** A failure as the engine reports it: the generated `ErrorInfo` (`{kind, message}`). */
export type Failure = ErrorInfo;

export interface Advice {
  /** One or two sentences for a notification. */
  text: string;
  /** Command titles to offer as buttons, with the command each runs. */
  actions: Array<{ title: string; command: string }>;
  /** Whether this is the user's setup (a warning) rather than a fault (an error). */
  severity: "warning" | "error";
}

const SET_KEY = { title: "Set API Key…", command: "contextCondenser.setApiKey" };
const SHOW_LOG = { title: "Show Log", command: "contextCondenser.showLog" };
const OPEN_SETTINGS = { title: "Open Settings", command: "contextCondenser.openSettings" };

/** A thrown value as a failure: engine errors keep their kind, anything else is `internal`. */
export function asFailure(e: unknown): Failure {
  if (typeof e === "object" && e !== null && "message" in e) {
    const parsed = "kind" in e ? ErrorKind.safeParse(e.kind) : undefined;
    const kind: ErrorKind = parsed?.success ? parsed.data : "internal";
    return { kind, message: String((e as { message: unknown }).message) };
  }
  return { kind: "internal", message: String(e) };
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

export function advise(f: Failure, profileId?: string): Advice {
  const profile = profileId ? ` for profile "${profileId}"` : "";
  switch (f.kind) {
    case "llm_auth":
      return {
        text: `The API key${profile} was rejected by the server. Set the key again. (${f.message})`,
        actions: [SET_KEY, SHOW_LOG],
        severity: "warning",
      };
    case "llm_config":
      return { text: `The LLM profile${profile} cannot be used: ${f.message}`, actions: [SET_KEY, SHOW_LOG], severity: "warning" };
    case "llm_rate_limit":
      return { text: `The LLM server is rate-limiting requests; try again shortly. (${f.message})`, actions: [SHOW_LOG], severity: "warning" };
    case "llm_tool_not_found":
      return { text: `The CLI tool${profile} is not installed where it was looked for: ${f.message}`, actions: [OPEN_SETTINGS, SHOW_LOG], severity: "warning" };
    case "llm_tool_unsupported":
      return { text: `The CLI tool${profile} cannot serve here: ${f.message}`, actions: [OPEN_SETTINGS], severity: "warning" };
    case "llm_tool_failed":
      return { text: `The CLI tool${profile} failed: ${f.message}`, actions: [SHOW_LOG], severity: "error" };
    case "llm_network":
    case "llm_timeout":
      return { text: `The LLM server could not be reached or stopped answering: ${f.message}`, actions: [SHOW_LOG], severity: "error" };
    case "llm_cancelled":
      return { text: "Condensation cancelled; the conversation is unchanged.", actions: [], severity: "warning" };
    case "degenerate_summary":
      return {
        text:
          `The condensing model wrote a summary that repeats itself or stops before its sections, so it was not applied; the conversation is unchanged. ` +
          `Choose a larger condensing model in the settings, or condense with the smart provider, which falls back to truncation. (${f.message})`,
        actions: [OPEN_SETTINGS, SHOW_LOG],
        severity: "warning",
      };
    case "target_below_floor":
      return {
        text: `${capitalize(f.message)}. Set a higher target, or fewer messages kept at the end, in the settings.`,
        actions: [OPEN_SETTINGS],
        severity: "warning",
      };
    case "nothing_to_condense":
    case "nothing_to_undo":
    case "context_grew":
      return { text: f.message, actions: [], severity: "warning" };
    case "provider_disabled":
      return {
        text: `${capitalize(f.message)}. Enable it or choose another default provider in the settings.`,
        actions: [OPEN_SETTINGS],
        severity: "warning",
      };
    case "provider_not_found":
      return { text: `${capitalize(f.message)}.`, actions: [OPEN_SETTINGS], severity: "warning" };
    case "invalid_input":
    case "invalid_config":
      return { text: f.message, actions: [SHOW_LOG], severity: "warning" };
    case "engine_crashed":
      return { text: `${capitalize(f.message)}.`, actions: [SHOW_LOG], severity: "error" };
    case "insufficient_gain":
    case "busy":
    case "internal":
    // The host answers this one itself (it sends the full task); it reaches a user only as a bug.
    case "unknown_task":
    // A call on a gateway the host stopped: the gateway host never makes one but by a bug.
    case "gateway_stopped":
    case "llm_context_overflow":
    case "llm_bad_request":
    case "llm_server":
    case "llm_malformed_stream":
    case "llm_response_too_large":
      return { text: `Condensation failed (${f.kind}): ${f.message}`, actions: [SHOW_LOG], severity: "error" };
    default:
      return unhandled(f.kind);
  }
}
