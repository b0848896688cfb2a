// How the extension takes a message from one of its webviews: validated against the shared
// schema first (an invalid one is logged and answered with an `error`, never acted on), then
// handled; a failure is logged and answered the same way, so a webview never waits on a crash.

import type * as vscode from "vscode";
import { asFailure } from "./errors";
import type { Parsed } from "./ipc";

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
