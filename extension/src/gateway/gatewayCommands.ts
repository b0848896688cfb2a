// The gateway as VS Code shows it (issue 28): the `contextCondenser.gateway.*` settings, the
// commands Start Gateway, Stop Gateway and Copy Gateway Setup…, the status bar item, and the
// state kept in the extension's global storage (0600, written whole), as the chats are. The
// server itself is gateway.ts, run in a worker thread of its own (gatewayRunner.ts); every
// decision is the core's.

import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { moneySaved, usd, type GatewayReport, type GatewaySetAside, type GatewaySetup, type GatewayVariable, type LlmTarget } from "@context-condenser/protocol";
import type { CondenseEngine } from "../../wasm/condense_wasm";
import { configuration } from "../settings/config";
import { SECTION } from "../settings/settings";
import { type GatewayOptions, PortInUse } from "./gateway";
import { type GatewayCalls, type GatewayRunner, InProcessGateway, type RunnerHooks } from "./gatewayRunner";
import * as notify from "../host/notify";
import { claudeCodeExtensionHere, claudeCodeHas, writeClaudeCodeEntry } from "./agentSettings";
import { SESSIONS, type SavedState, readState } from "./stateFile";

export const DEFAULT_PORT = 4141;
/** The `contextCondenser.gateway.*` settings (package.json contributes each; a test checks). */
export const GATEWAY_SETTINGS = [
  "enabled",
  "port",
  "terminals",
  "observe",
  "provider",
  "threshold",
  "policy",
  "windows",
  "anthropicUpstream",
  "openaiUpstream",
  "geminiUpstream",
] as const;
/** How often the status bar reads the figures while the gateway runs. */
const STATUS_EVERY_MS = 2_000;

/** The gateway's settings, as the extension may use them (a workspace not trusted cannot set
 *  where requests go, nor open a port). */
export function gatewayOptions(): GatewayOptions & { enabled: boolean } {
  const get = configuration().get;
  const windows = get("gateway.windows");
  return {
    enabled: get("gateway.enabled") === true,
    port: Number(get("gateway.port") ?? DEFAULT_PORT),
    provider: String(get("gateway.provider") ?? "smart"),
    thresholdPercent: Number(get("gateway.threshold") ?? 80),
    policy: get("gateway.policy") === "threshold" ? "threshold" : "cache-aware",
    windows: windows && typeof windows === "object" ? (windows as Record<string, number>) : {},
    observe: get("gateway.observe") === true,
    anthropicUpstream: String(get("gateway.anthropicUpstream") ?? "https://api.anthropic.com"),
    openaiUpstream: String(get("gateway.openaiUpstream") ?? "https://api.openai.com"),
    geminiUpstream: String(get("gateway.geminiUpstream") ?? "https://generativelanguage.googleapis.com"),
  };
}

/** Whether new terminals get the gateway's variables while it runs (`gateway.terminals`). */
const terminalsOn = (): boolean => configuration().get("gateway.terminals") === true;

/** The memento key under which the first-run welcome and Start Gateway remember that the person
 *  was asked whether to set up the terminals: asked once in all, by whichever came first. */
const TERMINALS_OFFERED = "contextCondenser.gateway.terminalsOffered";
/** Who reads the variables new terminals get (the core's `terminalVariables`), as the offers say. */
const TERMINALS_AGENTS = "Claude Code and Gemini CLI";

/** Where the variables of new terminals go: the extension's environment variable collection
 *  (`ExtensionContext.environmentVariableCollection`), and where the offer is remembered. */
export interface TerminalHost {
  readonly collection: Pick<vscode.GlobalEnvironmentVariableCollection, "replace" | "clear"> & {
    description: string | vscode.MarkdownString | undefined;
    persistent: boolean;
  };
  readonly memento: Pick<vscode.Memento, "get" | "update">;
}

/** Keeps `text` (a saved state, or one saved session, that the gateway could not read) in the
 *  first free `state.set-aside.N.json` beside the state file, readable by the user alone, as
 *  `condense gateway` does: never lost, never overwritten. Returns the file's path. */
export function keepAside(dir: string, text: string): string {
  fs.mkdirSync(dir, { recursive: true });
  return firstFree(dir, (n) => `state.set-aside.${n}.json`, (file) => fs.writeFileSync(file, text, { mode: 0o600, flag: "wx" }));
}

/** Moves the folder `name` of `dir` to the first free `name.set-aside.N`: its path. */
export function keepFolderAside(dir: string, name: string): string {
  return firstFree(dir, (n) => `${name}.set-aside.${n}`, (to) => {
    if (fs.existsSync(to)) throw Object.assign(new Error(`${to} exists`), { code: "EEXIST" });
    fs.renameSync(path.join(dir, name), to);
  });
}

/** Does `place` at the first `dir/name(n)`, n = 1, 2, …, that it does not find taken (it throws
 *  `EEXIST` there): that path. */
function firstFree(dir: string, name: (n: number) => string, place: (to: string) => void): string {
  for (let n = 1; ; n++) {
    const to = path.join(dir, name(n));
    try {
      place(to);
      return to;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
  }
}

/** One line of figures for the status bar's tooltip: the money condensing saved, negative (with
 *  when it pays back) while it has cost more. */
export function summaryLine(report: GatewayReport): string {
  const sessions = Object.keys(report.sessions).length;
  const saved = Math.max(0, report.totals.tokens_client - report.totals.tokens_forwarded);
  const money = moneySaved(report.totals);
  return `${sessions} session${sessions === 1 ? "" : "s"}, ${report.totals.condensations} condensation${report.totals.condensations === 1 ? "" : "s"}, ${saved.toLocaleString("en-US")} tokens not sent${money ? `; ${money}` : ""}`;
}

/** The status bar's text: the port, the sessions, the tokens not sent and the money saved (with
 *  its sign: a loss shows as one). */
export function statusText(port: number, report: GatewayReport): string {
  const sessions = Object.keys(report.sessions).length;
  if (!sessions) return `$(radio-tower) Gateway :${port}`;
  const saved = Math.max(0, report.totals.tokens_client - report.totals.tokens_forwarded);
  const compact = saved >= 1_000_000 ? `${(saved / 1_000_000).toFixed(1)}M` : saved >= 1000 ? `${Math.round(saved / 1000)}k` : String(saved);
  const money = report.totals.cost_saved_usd !== 0 ? ` · ${usd(report.totals.cost_saved_usd)}` : "";
  return `$(radio-tower) Gateway :${port} · ${sessions} · ${compact} not sent${money}`;
}

export class GatewayController implements vscode.Disposable {
  private server: GatewayRunner | undefined;
  private readonly status: vscode.StatusBarItem;
  private readonly crashes: vscode.Disposable;
  private timer: NodeJS.Timeout | undefined;
  private readonly changedEmitter = new vscode.EventEmitter<void>();
  /** Fired when the gateway starts, stops, or its figures may have changed. */
  readonly onDidChange = this.changedEmitter.event;

  /** `newEngine` gives an engine of the core's instance on this thread (for the setup lines of a
   *  gateway not running); `runner` where the gateway runs (the extension: its worker thread;
   *  by default this thread, with engines of `newEngine`). `onCrash` fires when the core's
   *  instance trapped (whichever engine met it): a gateway on that instance is revived.
   *  `summaryModel` gives the model that writes `native`'s summaries, or rejects with why there
   *  is none. */
  constructor(
    private readonly newEngine: () => CondenseEngine,
    onCrash: vscode.Event<void>,
    private readonly summaryModel: () => Promise<LlmTarget>,
    private readonly storageDir: string,
    private readonly log: vscode.LogOutputChannel,
    private readonly terminals?: TerminalHost,
    private readonly runner: (hooks: RunnerHooks) => GatewayRunner = (hooks) => new InProcessGateway(newEngine, hooks),
  ) {
    // Never kept across a restart: a gateway not started again must not leave terminals
    // pointing at a closed port.
    if (terminals) terminals.collection.persistent = false;
    this.status = vscode.window.createStatusBarItem("contextCondenser.gateway", vscode.StatusBarAlignment.Right, 99);
    this.status.name = "Context Condenser Gateway";
    this.status.command = "contextCondenser.copyGatewaySetup";
    this.crashes = onCrash(() => {
      const server = this.server;
      if (!server) return;
      server.revive("the core's instance trapped");
      void this.refresh();
    });
  }

  private get stateDir(): string {
    return path.join(this.storageDir, "gateway");
  }

  /** The running gateway (the view reads and controls sessions through it), and its port. */
  get running(): { gateway: GatewayCalls; port: number } | undefined {
    const gateway = this.server?.calls;
    return this.server && gateway ? { gateway, port: this.server.port } : undefined;
  }

  /** The options the settings give (on `port` when given): each condensation's hidden messages
   *  go beside the state, for the agent to read (0600). */
  private options(port?: number): GatewayOptions {
    const { enabled: _enabled, ...settings } = gatewayOptions();
    const recallDir = path.join(this.storageDir, "gateway", "recall");
    return { ...settings, recallDir, ...(port === undefined ? {} : { port }) };
  }

  /** Starts the gateway with the settings (on `port` when given). A port in use says so and
   *  offers a free one. */
  async start(port?: number): Promise<boolean> {
    await this.stop();
    const options = this.options(port);
    if (options.provider === "native" && !options.observe) {
      // Asked now, so that a missing model says so at the start, not at the first condensation.
      try {
        const writer = await this.summaryModel();
        this.log.info(`gateway: summaries written by ${writer.profile.model} (profile "${writer.profile.id}")`);
      } catch (e) {
        const why = (e as Error).message;
        this.log.error(`gateway: did not start: the native provider needs a model to write its summaries: ${why}`);
        void notify.error(`Context Condenser Gateway did not start: the native provider needs a model to write its summaries: ${why}`);
        return false;
      }
    }
    const state = readState(this.stateDir);
    const server = this.runner({
      log: (line) => this.log.info(line),
      saved: () => this.changedEmitter.fire(),
      summaryModel: this.summaryModel,
      stateDir: this.stateDir,
    });
    try {
      const started = await server.start(options, state);
      this.keepUnread(state, started);
      this.server = server;
      this.log.info(`gateway: listening on http://127.0.0.1:${started.port} (${options.observe ? "observe mode" : options.provider})`);
      this.timer = setInterval(() => void this.refresh(), STATUS_EVERY_MS);
      await this.refresh();
      await this.applyTerminals();
      this.changedEmitter.fire();
      void this.offerTerminals();
      return true;
    } catch (e) {
      server.dispose();
      if (e instanceof PortInUse) {
        this.log.warn(`gateway: ${e.message}`);
        const other = "Use a Free Port";
        const pick = await notify.warn(`Context Condenser Gateway: port ${e.port} is in use by another program.`, other);
        if (pick === other) return this.start(0);
        return false;
      }
      this.log.error(`gateway: did not start: ${(e as Error).message}`);
      void notify.error(`Context Condenser Gateway did not start: ${(e as Error).message}`);
      return false;
    }
  }

  /** Keeps what the started gateway could not read (the whole saved state, or some of its
   *  sessions) aside before anything saves over it. The gateway runs either way: a failed write
   *  is logged and shown, not thrown into the start (whose server already listens). */
  private keepUnread(state: SavedState | undefined, started: { stateRefused?: string; setAside: GatewaySetAside[] }): void {
    const dir = this.stateDir;
    const refused = started.stateRefused;
    const unread = [
      ...(refused && state?.index !== undefined ? [{ text: state.index, what: `the saved state (${refused})`, whole: true, file: undefined }] : []),
      ...started.setAside.map((s) => ({ text: s.raw, what: `saved session ${s.index}${s.file ? ` (${s.file})` : ""}: ${s.why}`, whole: false, file: s.file ?? undefined })),
    ];
    for (const { text, what, whole, file } of unread) {
      try {
        const aside = keepAside(dir, text);
        // Kept aside, a session's file leaves the folder read at start.
        if (file) fs.rmSync(path.join(dir, SESSIONS, path.basename(file)), { force: true });
        this.log.warn(`gateway: ${what} could not be read; it was kept aside as ${aside}`);
        if (whole) {
          void notify.warn(`Context Condenser Gateway started afresh: its saved state could not be used (${refused}); it was kept aside as ${path.basename(aside)}.`);
        }
      } catch (e) {
        this.log.error(`gateway: ${what} could not be read, nor kept aside: ${(e as Error).message}`);
        void notify.error(`Context Condenser Gateway: what it could not read of its saved state could not be kept aside either (${(e as Error).message}); it will be saved over.`);
      }
    }
    // A state refused whole (a newer version's): its session files go aside with it, as a folder.
    if (refused && (state?.sessions.length ?? 0) > 0) {
      try {
        const aside = keepFolderAside(dir, SESSIONS);
        this.log.warn(`gateway: the saved sessions of the refused state were kept aside in ${aside}`);
      } catch (e) {
        this.log.error(`gateway: the saved sessions of the refused state could not be kept aside: ${(e as Error).message}`);
      }
    }
  }

  /** Stops the gateway: the port closes and the state is saved. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const server = this.server;
    this.server = undefined;
    if (server) {
      await server.stop();
      server.dispose();
      this.log.info("gateway: stopped");
    }
    await this.applyTerminals();
    this.status.hide();
    this.changedEmitter.fire();
  }

  /**
   * Gives new integrated terminals the gateway's variables (the core's list: who reads each is
   * in the description VS Code shows on the terminal) while it runs and `gateway.terminals` is
   * on; takes them out otherwise, and VS Code marks the terminals opened before as needing a
   * relaunch.
   */
  async applyTerminals(): Promise<void> {
    const collection = this.terminals?.collection;
    if (!collection) return;
    collection.clear();
    const running = this.running;
    if (!running || !terminalsOn()) {
      collection.description = undefined;
      return;
    }
    const base = `http://127.0.0.1:${running.port}`;
    let variables: GatewayVariable[];
    try {
      variables = await running.gateway.terminalVariables(base);
    } catch (e) {
      this.log.warn(`gateway: the terminals' variables cannot be read: ${(e as Error).message}`);
      return;
    }
    for (const v of variables) collection.replace(v.name, v.value);
    collection.description = `Context Condenser's gateway at ${base}: ${variables.map((v) => `${v.name} for ${v.read_by}`).join("; ")}`;
    this.log.info(`gateway: new terminals get ${variables.map((v) => v.name).join(", ")}`);
  }

  /** Whether the person is still to be asked about the terminals: not asked yet (by the welcome
   *  or Start Gateway), and the setting not on already. */
  private terminalsUnasked(): boolean {
    const memento = this.terminals?.memento;
    return memento !== undefined && !terminalsOn() && !memento.get<boolean>(TERMINALS_OFFERED);
  }

  /** Remembers that the person was asked about the terminals. */
  private markTerminalsAsked(): Thenable<void> | undefined {
    return this.terminals?.memento.update(TERMINALS_OFFERED, true);
  }

  /** The person said yes: `gateway.terminals` on, in the user's settings. */
  private turnOnTerminals(): Thenable<void> {
    return vscode.workspace.getConfiguration(SECTION).update("gateway.terminals", true, vscode.ConfigurationTarget.Global);
  }

  /** Once, after the gateway first started (unless the welcome asked before): offers to set up
   *  the terminals (off until the person says yes). */
  private async offerTerminals(): Promise<void> {
    if (!this.terminalsUnasked()) return;
    // Remembered before the answer: a gateway restarted meanwhile does not ask again.
    await this.markTerminalsAsked();
    const yes = "Set Up Terminals";
    const pick = await notify.info(
      `Context Condenser Gateway is running. Send ${TERMINALS_AGENTS} started in VS Code's new terminals through it, with no setup of their own?`,
      yes,
      "Not Now",
    );
    if (pick === yes) await this.turnOnTerminals();
  }

  /** The welcome's question before it starts the gateway (unless Start Gateway asked before):
   *  start it alone, or with the terminals set up too. Resolves to false when the person
   *  dismissed it (nothing starts, and the question stays to be asked). */
  private async askStart(): Promise<boolean> {
    if (!this.terminalsUnasked()) return true;
    const alone = { label: "Start the Gateway", detail: "New terminals are left as they are (contextCondenser.gateway.terminals stays off).", terminals: false };
    const withTerminals = {
      label: "Start the Gateway and Set Up Terminals",
      detail: `${TERMINALS_AGENTS} started in VS Code's new terminals go through it, with no setup of their own (turns on contextCondenser.gateway.terminals in your user settings).`,
      terminals: true,
    };
    const pick = await vscode.window.showQuickPick([alone, withTerminals], {
      title: "Condense the Agent You Already Use",
      placeHolder: "Send agents started in VS Code's new terminals through the gateway too?",
    });
    if (!pick) return false;
    await this.markTerminalsAsked();
    if (pick.terminals) await this.turnOnTerminals();
    return true;
  }

  /** Shows the gateway's state and the live sessions' saving. */
  async refresh(): Promise<void> {
    const running = this.running;
    if (!running) {
      this.status.hide();
      return;
    }
    let report: GatewayReport;
    try {
      report = await running.gateway.report();
    } catch (e) {
      this.log.warn(`gateway: its figures cannot be read: ${(e as Error).message}`);
      return;
    }
    this.status.text = statusText(running.port, report);
    this.status.tooltip = `Context Condenser Gateway on 127.0.0.1:${running.port}${report.config.observe ? " (observe mode)" : ""}: ${summaryLine(report)}. Click to copy the setup for an agent.`;
    this.status.show();
    this.changedEmitter.fire();
  }

  /** "Condense the agent you already use" (the welcome): starts the gateway (asking first, once
   *  in all, whether new terminals go through it too), shows its view, and offers the setup of
   *  the agents found here first. */
  async useFor(agents: string[]): Promise<void> {
    if (!this.running && !((await this.askStart()) && (await this.start()))) return;
    await vscode.commands.executeCommand("contextCondenser.gateway.focus");
    await this.copySetup(agents);
  }

  /** A quick pick of the clients (those in `first`, by name, on top), copying the chosen one's
   *  lines with the port filled in. For Claude Code, with its VS Code extension here, it then
   *  offers to write the gateway's base URL into that extension's settings (agentSettings.ts). */
  async copySetup(first: string[] = []): Promise<void> {
    const port = this.running?.port ?? gatewayOptions().port;
    const base = `http://127.0.0.1:${port}`;
    let setups: GatewaySetup[];
    let variables: GatewayVariable[];
    if (this.running) {
      setups = await this.running.gateway.setup(base);
      variables = await this.running.gateway.terminalVariables(base);
    } else {
      // Not running: the lines of a gateway as the settings would start it.
      const engine = this.newEngine();
      try {
        const gateway = engine.startGateway(this.options(port));
        setups = gateway.setup(base);
        variables = gateway.terminalVariables(base);
        gateway.stop();
      } finally {
        engine.free();
      }
    }
    const found = (name: string) => first.includes(name);
    const ordered = [...setups.filter((s) => found(s.name)), ...setups.filter((s) => !found(s.name))];
    const pick = await vscode.window.showQuickPick(
      ordered.map((s) => ({
        label: s.name,
        description: found(s.name) ? `found here · ${s.place}` : s.place,
        detail: s.lines.split("\n")[0],
        setup: s,
      })),
      { title: "Copy Gateway Setup", placeHolder: "The agent to point at the gateway" },
    );
    if (!pick) return;
    await vscode.env.clipboard.writeText(pick.setup.lines);
    const note = this.running ? "" : " The gateway is not running: start it with Context Condenser: Start Gateway.";
    const copied = `Copied the setup for ${pick.setup.name}.${note}`;
    // The URL the core gives Claude Code (as it gives new terminals); the entry carries nothing else.
    const anthropic = variables.find((v) => v.name === "ANTHROPIC_BASE_URL");
    if (pick.setup.id !== "claude-code" || !anthropic || !claudeCodeExtensionHere()) {
      void notify.info(copied);
      return;
    }
    const entry = { name: anthropic.name, value: anthropic.value };
    if (claudeCodeHas(entry)) {
      void notify.info(`${copied} The Claude Code extension's settings point at the gateway already.`);
      return;
    }
    const more = "Set Up the Claude Code Extension…";
    if ((await notify.info(`${copied} The Claude Code extension can go through the gateway too.`, more)) !== more) return;
    if (await writeClaudeCodeEntry(entry)) {
      void notify.info(`The Claude Code extension's new sessions go through the gateway (${entry.name} in your user settings).`);
    }
  }

  /** Follows the settings: starts or stops when `gateway.enabled` changed; a running gateway
   *  restarts with another changed setting (a stopped one stays stopped). */
  async settingsChanged(enabledChanged: boolean): Promise<void> {
    if (enabledChanged) {
      if (gatewayOptions().enabled) await this.start();
      else if (this.running) await this.stop();
      return;
    }
    if (this.running) await this.start();
  }

  dispose(): void {
    void this.stop();
    this.crashes.dispose();
    this.status.dispose();
    this.changedEmitter.dispose();
  }
}
