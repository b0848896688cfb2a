// The first-run welcome's host side: what it offers (the local servers answering on their default
// ports, the CLI agents the engine knows) and what its choice does — the key asked for in an
// input box and kept in the secret storage, one Test Connection, then the profile written to
// `contextCondenser.profiles` and `contextCondenser.chatProfile`. Nothing is saved unless the test
// passed.

import * as vscode from "vscode";
import type { LocalServer, SetupState, ToolStatus } from "@context-condenser/protocol";
import type { EngineHolder } from "../engine/engineHolder";
import { asFailure } from "../engine/errors";
import { type SetupChoice, detectedAgents, keyNeeded, probeLocalServers, profileFor } from "./firstRun";
import type { Secrets } from "./secrets";
import { configuration } from "./config";
import { SECTION } from "./settings";
import { neutralize } from "../host/untrusted";

export interface SetupOutcome {
  state: SetupState;
  message: string;
}

export class FirstRun {
  constructor(
    private readonly holder: EngineHolder,
    private readonly secrets: Secrets,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** The local servers that answer, the CLI agents, and the agents the gateway can condense,
   *  for the welcome. */
  async offers(): Promise<{ servers: LocalServer[]; tools: ToolStatus[]; agents: string[] }> {
    const servers = await probeLocalServers((url, init) => fetch(url, init));
    let tools: ToolStatus[] = [];
    try {
      tools = this.holder.engine.tools();
    } catch (e) {
      this.log.warn(`first run: cannot list the CLI agents: ${asFailure(e).message}`);
    }
    this.log.info(`first run: ${servers.length} local server(s) answered (${servers.map((s) => s.name).join(", ") || "none"})`);
    const agents = detectedAgents(tools, (id) => vscode.extensions.getExtension(id) !== undefined);
    return { servers, tools, agents };
  }

  /**
   * Sets up the choice: asks for its key where one is needed, tests it (`testing` goes to
   * `progress`), and saves it as the chat profile when the test passed.
   */
  async setUp(choice: SetupChoice, progress: (o: SetupOutcome) => void): Promise<SetupOutcome> {
    const config = vscode.workspace.getConfiguration(SECTION);
    // The profiles as the extension reads them: in a workspace not trusted, the user's only, so
    // that none of the workspace's is copied into the user's settings below.
    const raw = configuration().get("profiles");
    const existing = Array.isArray(raw) ? raw : [];
    const ids = existing.map((p) => (typeof p === "object" && p !== null ? String((p as { id?: unknown }).id) : ""));
    const tool = choice.kind === "cli" ? this.holder.engine.tools().find((t) => t.id === choice.tool) : undefined;
    const kinds = this.holder.engine.hostMetadata().kinds;
    const profile = profileFor(choice, ids, kinds, tool?.contextWindow ?? undefined);

    let apiKey: string | undefined;
    const need = keyNeeded(choice.kind, kinds);
    if (need !== "none") {
      const where = choice.kind === "openai-compatible" ? (profile.base_url ?? "the server") : choice.kind === "openai" ? "OpenAI" : "Anthropic";
      const typed = await vscode.window.showInputBox({
        title: neutralize(`API key for ${where}`),
        prompt:
          need === "required"
            ? "Kept in VS Code's secret storage, never in settings."
            : "Leave empty if the server needs no key. Kept in VS Code's secret storage, never in settings.",
        password: true,
        ignoreFocusOut: true,
      });
      if (typed === undefined || (need === "required" && typed.trim() === "")) {
        return { state: "failed", message: "No key was given; nothing was saved." };
      }
      apiKey = typed.trim() || undefined;
    }

    progress({ state: "testing", message: `Testing ${profile.model}…` });
    try {
      // The chat profile: a CLI tool whose entry leaves out `chat` is refused before it runs.
      const report = await this.holder.engine.testConnection({ profile, apiKey, maxRetries: 0 }, "first-run", ["chat"]);
      this.log.info(`first run: "${profile.id}" answered in ${Math.round(report.latencyMs)} ms (model ${report.model})`);
    } catch (e) {
      const { kind, message } = asFailure(e);
      this.log.warn(`first run: test connection of "${profile.id}" failed: ${kind}: ${message}`);
      return { state: "failed", message: `Test Connection failed (${kind}): ${message}. Nothing was saved.` };
    }
    // The key is bound to where the profile points (its base URL, or its kind's default).
    if (apiKey) await this.secrets.store(profile, apiKey);
    await config.update("profiles", [...existing, profile], vscode.ConfigurationTarget.Global);
    await config.update("chatProfile", profile.id, vscode.ConfigurationTarget.Global);
    this.log.info(`first run: profile "${profile.id}" saved as the chat profile`);
    return { state: "connected", message: `Connected: "${profile.id}" (${profile.model}) is the chat's profile.` };
  }
}
