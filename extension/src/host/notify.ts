// The one way the extension shows a notification, a modal dialog or a progress notification:
// whatever the message says passes through `neutralize` (untrusted.ts) first, because most
// messages carry text the extension did not write (a file's parse error, a server's answer, a
// tool's output, a profile id). No other module calls `vscode.window.show*Message` or
// `withProgress` (`test/notify.test.ts` scans the sources). The buttons are the extension's own
// words, passed as they are: the answer is the button's text, which the caller compares.

import * as vscode from "vscode";
import { neutralize } from "./untrusted";

/** An information notification; resolves to the button pressed, if any. */
export function info(message: string, ...buttons: string[]): Thenable<string | undefined> {
  return vscode.window.showInformationMessage(neutralize(message), ...buttons);
}

/** A warning notification; resolves to the button pressed, if any. */
export function warn(message: string, ...buttons: string[]): Thenable<string | undefined> {
  return vscode.window.showWarningMessage(neutralize(message), ...buttons);
}

/** An error notification; resolves to the button pressed, if any. */
export function error(message: string, ...buttons: string[]): Thenable<string | undefined> {
  return vscode.window.showErrorMessage(neutralize(message), ...buttons);
}

/** A modal warning (the window waits for an answer; VS Code adds Cancel): the button pressed, or
 *  undefined when it was cancelled. */
export function modal(message: string, detail: string | undefined, ...buttons: string[]): Thenable<string | undefined> {
  return vscode.window.showWarningMessage(
    neutralize(message),
    { modal: true, ...(detail === undefined ? {} : { detail: neutralize(detail) }) },
    ...buttons,
  );
}

/** A cancellable progress notification titled `title` while `task` runs. */
export function progress<T>(title: string, task: (token: vscode.CancellationToken) => Thenable<T>): Thenable<T> {
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: neutralize(title), cancellable: true },
    (_progress, token) => task(token),
  );
}
