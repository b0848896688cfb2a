// The VS Code webview API. `acquireVsCodeApi` may be called only once per page, so it is called
// here, on first use, and the rest of the UI talks to the `Host` interface (which tests fake).

import type { ToHost } from "./protocol";

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState<T>(state: T): T;
}

declare global {
  function acquireVsCodeApi(): VsCodeApi;
}

export interface Host {
  post(message: ToHost): void;
  /** The state VS Code keeps for this view while it is hidden. */
  getState(): unknown;
  setState(state: unknown): void;
}

let host: Host | undefined;

export function vscodeHost(): Host {
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
