// Condense with…: the provider is the user's choice for one run. A quick pick of the enabled
// providers, highest priority first, each with its one-line description from the engine; the
// default (the settings panel's, which this does not change) is marked and offered first. Then
// Condense Now runs with the one picked, on the conversation file in the editor or on the chat.

import * as vscode from "vscode";
import type { ProviderEntry } from "@context-condenser/protocol";
import * as notify from "../host/notify";
import { neutralize } from "../host/untrusted";

/** A provider as the quick pick shows it. */
export interface ProviderPick extends vscode.QuickPickItem {
  id: string;
}

/** The enabled providers as quick-pick items: the default first, then the engine's order. Pure. */
export function providerPicks(entries: readonly ProviderEntry[], defaultProvider: string): ProviderPick[] {
  const enabled = entries.filter((e) => e.enabled);
  const ordered = [...enabled.filter((e) => e.id === defaultProvider), ...enabled.filter((e) => e.id !== defaultProvider)];
  return ordered.map((e) => ({
    id: e.id,
    label: neutralize(e.id),
    description: neutralize(e.id === defaultProvider ? `${e.name} · the default` : e.name),
    detail: neutralize(e.description),
  }));
}

/** Asks which provider; undefined when the user dismissed the pick (or none is enabled, said). */
export async function pickProvider(entries: readonly ProviderEntry[], defaultProvider: string, what?: string): Promise<string | undefined> {
  const picks = providerPicks(entries, defaultProvider);
  if (picks.length === 0) {
    void notify.info("Context Condenser: every provider is disabled; enable one in the settings panel.");
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(picks, {
    title: what ? `Condense ${what} with…` : "Condense with…",
    placeHolder: "Which provider, for this run only? (The default stays the settings panel's.)",
    matchOnDescription: true,
    matchOnDetail: true,
  });
  return picked?.id;
}
