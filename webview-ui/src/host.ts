// The VS Code webview API. `acquireVsCodeApi` may be called only once per page, so it is called
// here, on first use, and the rest of the UI talks to the `Host` interface (which tests fake).
// One page hosts one app (the chat view or the settings panel), each with its own messages.

import type { ChatViewToHost } from "./protocol";

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState<T>(state: T): T;
}

declare global {
  function acquireVsCodeApi(): VsCodeApi;
}

/** The extension as an app sees it; `Out` is what the app posts (`ChatViewToHost`, `SettingsToHost`). */
export interface Host<Out = ChatViewToHost> {
  post(message: Out): void;
  /** The state VS Code keeps for this view while it is hidden. */
  getState(): unknown;
  setState(state: unknown): void;
}

let host: Host<unknown> | undefined;

/** The page's one host; the app that calls it says which messages it posts. */
export function vscodeHost<Out = ChatViewToHost>(): Host<Out> {
  if (!host) {
    const api = acquireVsCodeApi();
    host = {
      post: (message) => api.postMessage(message),
      getState: () => api.getState(),
      setState: (state) => void api.setState(state),
    };
  }
  return host;
}
