// The chat's first run, without settings.json: which local OpenAI-compatible servers answer on
// their default ports, and the profile the welcome's choice becomes. Pure but for the `fetch` it
// is given: vitest runs it. The chat view (chatView.ts) asks for the key, runs Test Connection
// and writes the settings.

import type { KeyNeed, KindMetadata, LlmKind, LlmProfileInput, LocalServer } from "@context-condenser/protocol";

/** The local servers people run, on their default ports (OpenAI-compatible under `/v1`). */
export const LOCAL_SERVERS: ReadonlyArray<{ name: string; id: string; port: number }> = [
  { name: "Ollama", id: "ollama", port: 11434 },
  { name: "LM Studio", id: "lm-studio", port: 1234 },
  { name: "llama.cpp server", id: "llama-cpp", port: 8080 },
];

type Fetch = (url: string, init: { signal: AbortSignal }) => Promise<{ ok: boolean; json(): Promise<unknown> }>;

/** The model ids of an OpenAI `/models` answer (`{data: [{id}]}`), or undefined when it is not one. */
export function modelIds(body: unknown): string[] | undefined {
  if (typeof body !== "object" || body === null || !Array.isArray((body as { data?: unknown }).data)) return undefined;
  return ((body as { data: unknown[] }).data)
    .map((m) => (typeof m === "object" && m !== null ? (m as { id?: unknown }).id : undefined))
    .filter((id): id is string => typeof id === "string" && id.length > 0);
}

/** GET `<base>/models` with a short timeout: the models listed, or undefined when nothing (or
 *  something else) answers. */
export async function listModels(fetchFn: Fetch, baseUrl: string, timeoutMs = 800): Promise<string[] | undefined> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  try {
    const response = await fetchFn(`${baseUrl.replace(/\/+$/, "")}/models`, { signal: abort.signal });
    if (!response.ok) return undefined;
    return modelIds(await response.json());
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

/** The local servers answering on 127.0.0.1, probed side by side. */
export async function probeLocalServers(fetchFn: Fetch, timeoutMs = 800): Promise<LocalServer[]> {
  const found = await Promise.all(
    LOCAL_SERVERS.map(async (s) => {
      const base_url = `http://127.0.0.1:${s.port}/v1`;
      const models = await listModels(fetchFn, base_url, timeoutMs);
      return models ? { name: s.name, base_url, models } : undefined;
    }),
  );
  return found.filter((s): s is LocalServer => s !== undefined);
}

/** What the welcome sends: a kind, a model, a base URL for a server, a tool for a CLI agent. */
export interface SetupChoice {
  kind: LlmKind;
  model: string;
  baseUrl?: string;
  tool?: string;
}

/** What the core says of a kind (`engine.hostMetadata().kinds`), which lists every kind. */
function kindOf(kind: LlmKind, kinds: readonly KindMetadata[]): KindMetadata {
  const found = kinds.find((k) => k.kind === kind);
  if (!found) throw new Error(`the core lists no profile kind "${kind}"`);
  return found;
}

/** Whether a choice needs an API key before it can be tested: the core's word for its kind. */
export const keyNeeded = (kind: LlmKind, kinds: readonly KindMetadata[]): KeyNeed => kindOf(kind, kinds).key;

/**
 * The profile a choice becomes, with an id not yet taken (`openai`, `openai-2`, …): named after
 * the local server on its default port, the tool, or the kind.
 */
export function profileFor(
  choice: SetupChoice,
  takenIds: readonly string[],
  kinds: readonly KindMetadata[],
  toolWindow?: number,
): LlmProfileInput {
  const local = LOCAL_SERVERS.find((s) => choice.baseUrl?.startsWith(`http://127.0.0.1:${s.port}/`));
  const stem = choice.kind === "cli" ? (choice.tool ?? "cli") : choice.kind === "openai-compatible" ? (local?.id ?? "local") : choice.kind;
  let id = stem;
  for (let n = 2; takenIds.includes(id); n++) id = `${stem}-${n}`;
  const profile: LlmProfileInput = {
    id,
    kind: choice.kind,
    model: choice.model.trim(),
    // The tool's own window, else the core's default for the kind.
    context_window: (choice.kind === "cli" ? toolWindow : undefined) ?? kindOf(choice.kind, kinds).default_context_window,
  };
  if (choice.kind === "openai-compatible" && choice.baseUrl) profile.base_url = choice.baseUrl.trim().replace(/\/+$/, "");
  if (choice.kind === "cli" && choice.tool) profile.tool = choice.tool;
  return profile;
}

/** Why the chat cannot be used yet, or undefined when its profile can be. */
export function blockedReason(profiles: readonly { id: string; kind: LlmKind }[], chatProfileId: string): string | undefined {
  if (profiles.length === 0) return "No model is set up yet: choose one above, then chat.";
  const chosen = profiles.find((p) => p.id === chatProfileId);
  if (!chosen) return "Choose the chat's profile above (or set up another model).";
  if (chosen.kind === "manual") return `The profile "${chosen.id}" is a manual profile; chats need a model that answers.`;
  return undefined;
}

/** The VS Code agents the gateway can condense, by extension id (ids are case-insensitive). */
export const AGENT_EXTENSIONS: ReadonlyArray<{ id: string; name: string }> = [
  { id: "saoudrizwan.claude-dev", name: "Cline" },
  { id: "rooveterinaryinc.roo-cline", name: "Roo Code" },
  { id: "continue.continue", name: "Continue" },
];

/** The agents found here that the gateway can condense: Claude Code and Codex when their CLI was
 *  found, then the agent extensions installed. */
export function detectedAgents(tools: ReadonlyArray<{ id: string; found?: string | null }>, installed: (extensionId: string) => boolean): string[] {
  const cli = [
    { tool: "claude-code", name: "Claude Code" },
    { tool: "codex", name: "Codex" },
  ].filter((a) => tools.some((t) => t.id === a.tool && t.found));
  return [...cli.map((a) => a.name), ...AGENT_EXTENSIONS.filter((e) => installed(e.id)).map((e) => e.name)];
}
