// API keys in the secret storage, each bound to where its profile pointed when it was stored. A key
// is found by its profile's id, and a profile is only settings: whoever can change a profile's
// base URL (a workspace's settings, an edit made in haste) could send the user's key to another
// server. So a key is stored with its origin — the profile's kind and base URL, the kind's default
// when it names none, normalized — under `contextCondenser.apiKeyOrigin.<id>` beside the key (in
// the secret storage, never in settings), and a key leaves only for that origin unless the user
// says so (secrets.ts asks). Pure but for the storage it is given: vitest runs it.

import type { HostMetadata, LlmProfile } from "@context-condenser/protocol";
import { SECTION } from "./settings";

/** The secret storage's name for a profile's key. */
export const secretName = (profileId: string) => `${SECTION}.apiKey.${profileId}`;

/** The secret storage's name for the origin a profile's key was stored for. */
export const originName = (profileId: string) => `${SECTION}.apiKeyOrigin.${profileId}`;

/** The button of the question before a key goes to a new origin. */
export const SEND_KEY_THERE = "Send Key There";

/** A base URL as a request reads it: parsed (scheme and host in lower case, no default port),
 *  without trailing slashes, as the core joins paths to it; kept as written when it is no URL. */
function normalizedUrl(url: string): string {
  const trimmed = url.trim();
  try {
    return new URL(trimmed).href.replace(/\/+$/, "");
  } catch {
    return trimmed.replace(/\/+$/, "");
  }
}

/**
 * Where a profile's requests go, as one readable string: `openai https://api.openai.com/v1`. The
 * base URL is the profile's, else its kind's default from the core (`hostMetadata().kinds`, as
 * the core's `LlmProfile::base_url` falls back), normalized, so that a trailing slash or the case
 * of a host changes nothing.
 */
export function profileOrigin(profile: Pick<LlmProfile, "kind" | "base_url">, kinds: HostMetadata["kinds"]): string {
  const base = profile.base_url ?? kinds.find((k) => k.kind === profile.kind)?.default_base_url ?? undefined;
  return base ? `${profile.kind} ${normalizedUrl(base)}` : `${profile.kind} (no base URL)`;
}

/** What to do before a stored key is sent: send it (recording its origin first when it had none),
 *  or ask the user, because it was stored for another origin or for none known. */
export type KeyCheck =
  | { send: true; bind: boolean }
  | { send: false; stored: string | undefined; now: string };

/**
 * Whether a key stored for `stored` may go to `now`. A key stored before origins were recorded
 * (`stored` undefined) is bound to the profile's origin without asking only when the profile is
 * the user's own (read from the user's settings: always so in a workspace not trusted, whose
 * values of `profiles` are ignored): the user wrote that base URL. When a workspace's settings
 * define the profile, the origin is the workspace's word, not the user's, so the user is asked —
 * once: the answer binds it.
 */
export function checkOrigin(stored: string | undefined, now: string, profileIsUsers: boolean): KeyCheck {
  if (stored === now) return { send: true, bind: false };
  if (stored === undefined) return profileIsUsers ? { send: true, bind: true } : { send: false, stored, now };
  return { send: false, stored, now };
}

/** The modal's question, naming both origins (or saying that the stored one is not known). */
export function originQuestion(profileId: string, check: Extract<KeyCheck, { send: false }>): { message: string; detail: string } {
  const message =
    check.stored === undefined
      ? `The key of profile "${profileId}" was stored before Context Condenser recorded where each key may go, and this workspace's settings define the profile; it points at ${check.now}. Send the key there?`
      : `The key of profile "${profileId}" was stored for ${check.stored}; the profile now points at ${check.now}. Send the key there?`;
  return {
    message,
    detail: `"${SEND_KEY_THERE}" sends it, and from now on the key belongs to ${check.now}. Cancel sends nothing.`,
  };
}

/** Why nothing was sent when the user did not agree (an `llm_config` failure's message). */
export function originRefusal(check: Extract<KeyCheck, { send: false }>): string {
  return check.stored === undefined
    ? `its API key was not sent to ${check.now}: the key was stored before Context Condenser recorded where it may go, and this workspace's settings define the profile. Set the key again (Set API Key…) to use it there`
    : `its API key was not sent to ${check.now}: the key was stored for ${check.stored}. Point the profile back, or set the key again for the new address (Set API Key…)`;
}

/** The part of VS Code's `SecretStorage` used here. */
export interface SecretStore {
  get(name: string): PromiseLike<string | undefined>;
  store(name: string, value: string): PromiseLike<void>;
  delete(name: string): PromiseLike<void>;
}

/** The keys and their origins, by profile id. */
export class KeyStore {
  constructor(private readonly storage: SecretStore) {}

  /** A profile's key, unchecked: only `Secrets.key` hands one to a request, after the check. */
  async get(profileId: string): Promise<string | undefined> {
    return (await this.storage.get(secretName(profileId))) ?? undefined;
  }

  async isSet(profileId: string): Promise<boolean> {
    return (await this.get(profileId)) !== undefined;
  }

  /** The origin the key was stored for; undefined for a key stored before origins were recorded. */
  async origin(profileId: string): Promise<string | undefined> {
    return (await this.storage.get(originName(profileId))) ?? undefined;
  }

  /** Stores a key for `origin` (the origin first: a key is never left with another's origin). */
  async set(profileId: string, key: string, origin: string): Promise<void> {
    await this.storage.store(originName(profileId), origin);
    await this.storage.store(secretName(profileId), key);
  }

  /** The key now belongs to `origin` (the user agreed, or it had none and the profile is theirs). */
  async bind(profileId: string, origin: string): Promise<void> {
    await this.storage.store(originName(profileId), origin);
  }

  /** Removes a key and its origin. */
  async remove(profileId: string): Promise<void> {
    await this.storage.delete(secretName(profileId));
    await this.storage.delete(originName(profileId));
  }

  /** A renamed profile: its key and the key's origin move to the new id. */
  async move(from: string, to: string): Promise<void> {
    const key = await this.get(from);
    const origin = await this.origin(from);
    if (key !== undefined) {
      if (origin === undefined) await this.storage.delete(originName(to));
      else await this.storage.store(originName(to), origin);
      await this.storage.store(secretName(to), key);
    }
    await this.remove(from);
  }
}
