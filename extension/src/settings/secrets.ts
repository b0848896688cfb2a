// API keys: kept in VS Code's SecretStorage under one name per profile, never in settings and never
// logged, each bound to the origin it was stored for (keys.ts). Reading a profile's key for a
// request — with a modal question first when the profile now points elsewhere —, storing one, and
// the Set API Key… command (a profile picked or given, the key typed or given; an empty key
// removes it).

import * as vscode from "vscode";
import type { LlmProfile } from "@context-condenser/protocol";
import { configuration } from "./config";
import type { EngineHolder } from "../engine/engineHolder";
import type { Failure } from "../engine/errors";
import { KeyStore, SEND_KEY_THERE, checkOrigin, originQuestion, originRefusal, profileOrigin } from "./keys";
import { SECTION } from "./settings";
import * as notify from "../host/notify";
import { neutralize } from "../host/untrusted";

/** The secret storage's name for a profile's key (kept in keys.ts). */
export { secretName } from "./keys";

/** What a key is checked against: the profile as the settings define it now. */
export type KeyedProfile = Pick<LlmProfile, "id" | "kind" | "base_url">;

export class Secrets {
  /** The keys and their origins. */
  readonly keys: KeyStore;

  /** `changed` runs after a key was stored or removed (the settings panel shows which are set). */
  constructor(
    storage: vscode.SecretStorage,
    private readonly holder: Pick<EngineHolder, "settings" | "engine">,
    private readonly log: Pick<vscode.LogOutputChannel, "info" | "warn">,
    private readonly changed: () => void,
  ) {
    this.keys = new KeyStore(storage);
  }

  /** Where a profile's requests go now (its kind and base URL, the kind's default from the core). */
  origin(profile: Pick<LlmProfile, "kind" | "base_url">): string {
    return profileOrigin(profile, this.holder.engine.hostMetadata().kinds);
  }

  /**
   * A profile's key for a request to it, if one is stored. A key stored for another origin than
   * the profile's now is sent only if the user says so in a modal question (which binds it to the
   * new origin); otherwise nothing is sent and this throws an `llm_config` failure saying why.
   */
  async key(profile: KeyedProfile): Promise<string | undefined> {
    const key = await this.keys.get(profile.id);
    if (key === undefined) return undefined;
    const now = this.origin(profile);
    const check = checkOrigin(await this.keys.origin(profile.id), now, !configuration().fromWorkspace("profiles"));
    if (check.send) {
      if (check.bind) {
        await this.keys.bind(profile.id, now);
        this.log.info(`API key of profile "${profile.id}" bound to ${now}, where its profile points (a key stored before origins were recorded)`);
      }
      return key;
    }
    const { message, detail } = originQuestion(profile.id, check);
    if ((await notify.modal(`Context Condenser: ${message}`, detail, SEND_KEY_THERE)) === SEND_KEY_THERE) {
      await this.keys.bind(profile.id, now);
      this.log.info(`API key of profile "${profile.id}" now bound to ${now} (was ${check.stored ?? "not recorded"}): the user agreed`);
      return key;
    }
    this.log.warn(`API key of profile "${profile.id}" not sent to ${now}: it was stored for ${check.stored ?? "an origin not recorded"}`);
    const failure: Failure = { kind: "llm_config", message: originRefusal(check) };
    throw failure;
  }

  /** Stores a key for a profile, bound to where the profile points (the first-run welcome's, after
   *  its test passed); never logged. */
  async store(profile: KeyedProfile, key: string): Promise<void> {
    await this.keys.set(profile.id, key, this.origin(profile));
    this.log.info(`API key stored for profile "${profile.id}"`);
    this.changed();
  }

  /** Stores a profile's key in the secret storage. Arguments allow scripted use; never logged. */
  async setApiKey(profileId?: string, key?: string): Promise<void> {
    const profiles = this.holder.settings.profiles.filter((p) => p.kind !== "manual");
    if (profiles.length === 0) {
      const choice = await notify.warn(
        "Context Condenser: add an LLM profile (contextCondenser.profiles) before setting its API key.",
        "Open Settings",
      );
      if (choice) void vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.profiles`);
      return;
    }
    const id =
      profileId ??
      (profiles.length === 1
        ? profiles[0].id
        : (
            await vscode.window.showQuickPick(
              // Ids and models come from settings: shown neutralized, the id kept as it is.
              profiles.map((p) => ({ label: neutralize(p.id), description: neutralize(`${p.kind} · ${p.model}`), id: p.id })),
              { title: "Set API Key…", placeHolder: "Which profile's key?" },
            )
          )?.id);
    if (!id) return;
    const profile = profiles.find((p) => p.id === id);
    if (!profile) {
      void notify.warn(`Context Condenser: there is no LLM profile "${id}".`);
      return;
    }
    const value =
      key ??
      (await vscode.window.showInputBox({
        title: neutralize(`API key for "${id}"`),
        prompt: "Kept in VS Code's secret storage, never in settings. Leave empty to remove the key.",
        password: true,
        ignoreFocusOut: true,
      }));
    if (value === undefined) return;
    if (value.trim() === "") {
      await this.keys.remove(id);
      this.log.info(`API key removed for profile "${id}"`);
      this.changed();
      void notify.info(`Context Condenser: API key removed for "${id}".`);
    } else {
      await this.store(profile, value.trim());
      void notify.info(`Context Condenser: API key stored for "${id}".`);
    }
  }
}
