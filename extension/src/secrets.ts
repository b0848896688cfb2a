// API keys: kept in VS Code's SecretStorage under one name per profile, never in settings and never
// logged. Reading a profile's key, and the Set API Key… command (a profile picked or given, the key
// typed or given; an empty key removes it).

import * as vscode from "vscode";
import type { EngineHolder } from "./engineHolder";
import { SECTION } from "./settings";
import * as notify from "./notify";
import { neutralize } from "./untrusted";

/** The secret storage's name for a profile's key. */
export const secretName = (profileId: string) => `${SECTION}.apiKey.${profileId}`;

export class Secrets {
  /** `changed` runs after a key was stored or removed (the settings panel shows which are set). */
  constructor(
    private readonly storage: vscode.SecretStorage,
    private readonly holder: EngineHolder,
    private readonly log: vscode.LogOutputChannel,
    private readonly changed: () => void,
  ) {}

  /** A profile's key, if one is stored. */
  async key(profileId: string): Promise<string | undefined> {
    return (await this.storage.get(secretName(profileId))) ?? undefined;
  }

  /** Stores a key for a profile (the first-run welcome's, after its test passed); never logged. */
  async store(profileId: string, key: string): Promise<void> {
    await this.storage.store(secretName(profileId), key);
    this.log.info(`API key stored for profile "${profileId}"`);
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
    if (!profiles.some((p) => p.id === id)) {
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
      await this.storage.delete(secretName(id));
      this.log.info(`API key removed for profile "${id}"`);
      this.changed();
      void notify.info(`Context Condenser: API key removed for "${id}".`);
    } else {
      await this.storage.store(secretName(id), value.trim());
      this.log.info(`API key stored for profile "${id}"`);
      this.changed();
      void notify.info(`Context Condenser: API key stored for "${id}".`);
    }
  }
}
