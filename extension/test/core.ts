// The real core for tests: the wasm package the extension ships, loaded in Node, and one engine
// with no network. Tests take the limits and defaults from it, never from copies.
import { createRequire } from "node:module";
import path from "node:path";
import type { HostMetadata } from "@context-condenser/protocol";
import type { CondenseEngine } from "../wasm/condense_wasm";

const require = createRequire(import.meta.url);
export const wasm = require(path.join(__dirname, "..", "wasm", "condense_wasm.js")) as typeof import("../wasm/condense_wasm");

/** A fresh engine whose `fetch` always fails. */
export function newTestEngine(): CondenseEngine {
  return new wasm.CondenseEngine({
    fetch: () => Promise.reject(new Error("no network in this test")),
    now: () => 0,
    log: () => {},
  });
}

/** The core's limits, defaults and profile kinds. */
export const meta: HostMetadata = newTestEngine().hostMetadata();

const judgeEngine = newTestEngine();
/** The real core's judge of a setting (`checkSetting`). */
export const check = (change: Parameters<CondenseEngine["checkSetting"]>[0]): string | undefined =>
  judgeEngine.checkSetting(change) ?? undefined;
