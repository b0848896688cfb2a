// How a failure reaches the user: one notification with the advice of errors.ts and its buttons
// (each runs its command), and a log line unless the core already logged the failed run. Whatever
// failed, the conversation was not touched.

import * as vscode from "vscode";
import { advise, type Failure } from "../engine/errors";
import * as notify from "./notify";

/** Reports a failure; `logged` when the core logged it already (the failed runs it reports). */
export type Report = (failure: Failure, profileId?: string, options?: { logged?: boolean }) => void;

export function reporter(log: vscode.LogOutputChannel): Report {
  return (failure, profileId, { logged = false } = {}) => {
    const advice = advise(failure, profileId);
    if (!logged) log[advice.severity === "error" ? "error" : "warn"](`${failure.kind}: ${failure.message}`);
    const show = advice.severity === "error" ? notify.error : notify.warn;
    void show(`Context Condenser: ${advice.text}`, ...advice.actions.map((a) => a.title)).then((choice) => {
      const action = advice.actions.find((a) => a.title === choice);
      if (action) void vscode.commands.executeCommand(action.command);
    });
  };
}
