// Loads the core (wasm) from the extension's own folder and gives it the host's capabilities:
// `fetch` with an abort signal, a monotonic clock, the log channel, and the command runner that
// `cli` profiles run their tools with (see runner.ts).

import * as path from "node:path";
import type { CondenseEngine, Host } from "../wasm/condense_wasm";
import { type RunnerOptions, locate, platformName, runCommand } from "./runner";

export interface LogSink {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

type WasmModule = typeof import("../wasm/condense_wasm");

let loaded: WasmModule | undefined;

/** The wasm package at `<extensionPath>/wasm`, instantiated once per extension host. */
export function loadCore(extensionPath: string): WasmModule {
  // A computed path: esbuild leaves it to Node, which reads the .wasm beside the .js.
  loaded ??= require(path.join(extensionPath, "wasm", "condense_wasm.js")) as WasmModule;
  return loaded;
}

/** The host object the engine calls back into; `runner.defaultCwd` is where tools run. */
export function makeHost(log: LogSink, runner: RunnerOptions = {}): Host {
  return {
    fetch: async (request, signal) => {
      const response = await fetch(request.url, {
        method: request.method,
        headers: request.headers,
        body: request.body,
        signal,
      });
      return { status: response.status, headers: response.headers, body: response.body };
    },
    now: () => performance.now(),
    log: (level, message) => log[level](message),
    platform: platformName(),
    envVar: (name) => process.env[name],
    locate: (program) => locate(program),
    run: (spec, signal) => runCommand(spec, signal, runner),
  };
}

export function newEngine(extensionPath: string, log: LogSink, runner: RunnerOptions = {}): CondenseEngine {
  return new (loadCore(extensionPath).CondenseEngine)(makeHost(log, runner));
}
