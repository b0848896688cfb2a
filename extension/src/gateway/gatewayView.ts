// The Gateway view (issue 28) in the Context Condenser container: one row per live session with
// its figures and meter, its condensations drawn by the chat's row, and the session's controls
// (Preview next condensation, Condense now, Pause, Undo last condensation). The view's messages
// are validated on arrival (webviewApp.ts); every figure and decision is the core's, read through
// the running gateway (in its thread).

import * as vscode from "vscode";
import { type GatewayToHost, type GatewayToWebview, parseGatewayToHost } from "@context-condenser/protocol";
import type { GatewayController } from "./gatewayCommands";
import { loadApp, receiveFromWebview } from "../host/webviewApp";

/** How often the view may be sent a new state while the gateway is busy. */
const STATE_EVERY_MS = 500;

export class GatewayView implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly id = "contextCondenser.gateway";
  private view: vscode.WebviewView | undefined;
  private pending: NodeJS.Timeout | undefined;
  private readonly subscription: vscode.Disposable;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly gateway: GatewayController,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscription = gateway.onDidChange(() => this.schedule());
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    loadApp(view.webview, this.extensionUri, "gateway", "Context Condenser Gateway");
    view.webview.onDidReceiveMessage((raw: unknown) =>
      receiveFromWebview(raw, "gateway view", parseGatewayToHost, (m) => this.handle(m), (e) => this.post(e), this.log),
    );
    view.onDidChangeVisibility(() => void (view.visible && this.sendState()));
    view.onDidDispose(() => (this.view = undefined));
  }

  private post(message: GatewayToWebview): void {
    void this.view?.webview.postMessage(message);
  }

  /** Sends the state soon: a burst of requests is one message. */
  private schedule(): void {
    if (this.pending || !this.view?.visible) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      void this.sendState().catch((e: unknown) => this.log.warn(`gateway view: ${(e as Error).message}`));
    }, STATE_EVERY_MS);
  }

  private async sendState(): Promise<void> {
    const running = this.gateway.running;
    if (!running) {
      this.post({ type: "state", port: null, report: null, sessions: [] });
      return;
    }
    const report = await running.gateway.report();
    const sessions = await Promise.all(Object.keys(report.sessions).map((name) => running.gateway.session(name)));
    this.post({ type: "state", port: running.port, report, sessions });
  }

  private live() {
    const running = this.gateway.running;
    if (!running) throw new Error("the gateway is not running: start it first");
    return running.gateway;
  }

  private async handle(message: GatewayToHost): Promise<void> {
    switch (message.type) {
      case "ready":
        await this.sendState();
        return;
      case "start":
        await this.gateway.start();
        return;
      case "stop":
        await this.gateway.stop();
        return;
      case "copySetup":
        await this.gateway.copySetup();
        return;
      case "preview":
        this.post({ type: "preview", preview: await this.live().preview(message.session) });
        return;
      case "condenseNext":
        await this.live().condenseNext(message.session);
        this.log.info(`gateway: [${message.session}] the next request will be condensed (asked in the view)`);
        break;
      case "pause":
        await this.live().pause(message.session, message.paused);
        this.log.info(`gateway: [${message.session}] ${message.paused ? "paused: requests go out as sent" : "resumed"}`);
        break;
      case "undo": {
        const undone = await this.live().undo(message.session);
        this.log.info(`gateway: [${message.session}] undid the condensation of messages ${undone.start}..${undone.end}; the next request goes out without it`);
        break;
      }
    }
    await this.sendState();
  }

  dispose(): void {
    if (this.pending) clearTimeout(this.pending);
    this.subscription.dispose();
  }
}
