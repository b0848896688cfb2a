// What the settings and the keys make of an LLM run: the options of a chat turn (the chat profile,
// the condensing profile when it is another one, their keys from secrets.ts, the auto-condense
// settings), the same without keys to measure a chat, the profiles the chat's picker offers, and
// the LLM that writes summaries for Condense Now on a file and for the API.

import type { ChatOptions, LlmProfile, LlmTarget } from "@context-condenser/protocol";
import type { EngineHolder } from "../engine/engineHolder";
import { asFailure, type Failure } from "../engine/errors";
import type { ProfileOption } from "@context-condenser/protocol";
import type { Report } from "../host/report";
import type { Secrets } from "../settings/secrets";
import { autoCondense, chatProfile, condensingProfile } from "../settings/settings";

/** The profiles the chat can use (API profiles), for its picker. */
export function profileOptions(holder: EngineHolder): ProfileOption[] {
  return holder.settings.profiles
    .filter((p) => p.kind !== "manual")
    .map((p) => ({ id: p.id, model: p.model, context_window: p.context_window }));
}

/** Why the profile `id` cannot be the chat profile, as the core judges it (a `cli` profile whose
 *  tool does not list `chat`), or undefined. */
export function chatProfileProblem(holder: EngineHolder, id: string): string | undefined {
  const profile = holder.settings.profiles.find((p) => p.id === id);
  if (!profile) return `there is no LLM profile "${id}"`;
  return holder.engine.checkSetting({ setting: "profile_use", value: { profile, used: "chat" } }) ?? undefined;
}

/** The chat profile's model, which counts tokens; undefined without a chat profile. */
export function chatModel(holder: EngineHolder): string | undefined {
  return chatProfile(holder.settings)?.model;
}

/** The options of a chat turn without keys: enough to measure a chat. */
export function measureOptions(holder: EngineHolder): ChatOptions | undefined {
  const profile = chatProfile(holder.settings);
  return profile ? { llm: { profile }, auto: autoCondense(holder.settings), nowMs: Date.now() } : undefined;
}

/** The options of a chat turn, with the keys from the secret storage. Without a usable chat
 *  profile, or when a key was not let go where its profile now points, it reports why and throws
 *  the failure. */
export async function chatOptions(holder: EngineHolder, secrets: Secrets, report: Report): Promise<ChatOptions> {
  const profile = chatProfile(holder.settings);
  if (!profile || profile.kind === "manual") {
    const failure: Failure = {
      kind: "llm_config",
      message: profile
        ? `the chat profile "${profile.id}" is a manual profile; chats need an API profile`
        : "no chat profile: add an LLM profile in contextCondenser.profiles and choose it in contextCondenser.chatProfile (or in the chat's profile picker)",
    };
    report(failure);
    throw failure;
  }
  const options: ChatOptions = {
    llm: { profile, apiKey: await reportedKey(secrets, profile, report) },
    auto: autoCondense(holder.settings),
    nowMs: Date.now(),
  };
  const writer = condensingProfile(holder.settings);
  if (writer && writer.id !== profile.id && writer.kind !== "manual") {
    options.condensingLlm = { profile: writer, apiKey: await reportedKey(secrets, writer, report) };
  }
  return options;
}

/** The LLM that writes summaries, with its key from the secret storage; none when unset. Throws
 *  the `llm_config` failure of a key the user did not let go to the profile's new origin. */
export async function condensingLlm(holder: EngineHolder, secrets: Secrets): Promise<LlmTarget | undefined> {
  const profile = condensingProfile(holder.settings);
  if (!profile) return undefined;
  return { profile, apiKey: await secrets.key(profile) };
}

/** The model that writes the gateway's `native` summaries: the condensing profile (else the chat
 *  profile), with its key. Rejects with why there is none, or why it cannot write in the
 *  background (a manual profile waits for the user). */
export async function gatewaySummaryModel(holder: EngineHolder, secrets: Secrets): Promise<LlmTarget> {
  const profile = condensingProfile(holder.settings);
  if (!profile) {
    throw new Error("no condensing model: choose one in the settings panel (Condensing model), or set contextCondenser.condensingProfile");
  }
  if (profile.kind === "manual") {
    throw new Error(`the condensing profile "${profile.id}" is manual, and a summary in the background cannot wait for a paste: choose an API or CLI profile`);
  }
  return { profile, apiKey: await secrets.key(profile) };
}

/** A profile's key for a turn (secrets.ts checks where it goes); a key not sent is reported,
 *  then thrown. */
async function reportedKey(secrets: Secrets, profile: LlmProfile, report: Report): Promise<string | undefined> {
  try {
    return await secrets.key(profile);
  } catch (e) {
    report(asFailure(e), profile.id);
    throw e;
  }
}
