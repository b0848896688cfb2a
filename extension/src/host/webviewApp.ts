// What both webviews (the chat view and the settings panel) share on the extension's side: the
// one bundle loaded as the app they host, and how a message from them is taken — validated
// against the shared schema first (an invalid one is logged and answered with an `error`, never
// acted on), then handled; a failure is logged and answered the same way, so a webview never
// waits on a crash.

import * as vscode from "vscode";
import { asFailure } from "../engine/errors";
import type { Parsed } from "@context-condenser/protocol";
import { webviewHtml } from "./webviewHtml";

/** Loads the webview bundle (`webview/chat.js`, `chat.css`) into `webview` as the app `view`,
 *  under the strict CSP, with scripts on and nothing readable outside the bundle's folder. */
export function loadApp(webview: vscode.Webview, extensionUri: vscode.Uri, view: "chat" | "settings" | "gateway", title: string): void {
  const root = vscode.Uri.joinPath(extensionUri, "webview");
  webview.options = { enableScripts: true, localResourceRoots: [root] };
  webview.html = webviewHtml({
    cspSource: webview.cspSource,
    script: webview.asWebviewUri(vscode.Uri.joinPath(root, "chat.js")).toString(),
    style: webview.asWebviewUri(vscode.Uri.joinPath(root, "chat.css")).toString(),
    title,
    view,
  });
}

export async function receiveFromWebview<T extends { type: string }>(
  raw: unknown,
  where: string,
  parse: (raw: unknown) => Parsed<T>,
  handle: (message: T) => Promise<void>,
  reply: (error: { type: "error"; message: string }) => void,
  log: vscode.LogOutputChannel,
): Promise<void> {
  const parsed = parse(raw);
  if (!parsed.ok) {
    log.warn(`${where}: ${parsed.error}`);
    reply({ type: "error", message: parsed.error });
    return;
  }
  try {
    await handle(parsed.value);
  } catch (e) {
    const failure = asFailure(e);
    log.error(`${where}: ${parsed.value.type} failed: ${failure.kind}: ${failure.message}`);
    reply({ type: "error", message: failure.message });
  }
}
