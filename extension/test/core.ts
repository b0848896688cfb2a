// The real core for tests: the wasm package the extension ships, loaded in Node, and one engine
// with no network. Tests take the limits and defaults from it, never from copies. And the one
// guarded engine of the test build that panics on a marker, for the tests of a trap.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { HostMetadata } from "@context-condenser/protocol";
import type { CondenseEngine } from "../wasm/condense_wasm";
import { Core, type CoreInstance, guardEngine, newEngine } from "../src/engine/engine";

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

/** The test build of the wasm package (scripts/build-wasm --test-panic, into
 *  target/wasm-test-panic/; never shipped): its engine panics on an input carrying `PANIC_MARKER`. */
export const PANIC_PACKAGE = path.join(__dirname, "..", "..", "target", "wasm-test-panic");
export const PANIC_MARKER = "__context_condenser_test_panic__";

/** The test build's core; fails at once, saying how to build it, when it is missing. */
export function panicCore(): Core {
  if (!existsSync(path.join(PANIC_PACKAGE, "condense_wasm.js"))) {
    throw new Error(`${PANIC_PACKAGE} is missing: build it with \`bash scripts/build-wasm --test-panic\``);
  }
  return new Core(PANIC_PACKAGE);
}

/** A trap a guarded test engine met: the call it met it in, and what was thrown. */
export interface Trap {
  what: string;
  e: unknown;
}

/** An engine of `core` behind the guard, as the engine holder builds one: a trap drops the
 *  instance and fails the call with `engine_crashed`; `traps` gets each trap. */
export function guardedEngine(core: Core, traps: Trap[]): { engine: CondenseEngine; instance: CoreInstance } {
  const instance = core.current();
  const raw = newEngine(core, { info: () => {}, warn: () => {}, error: () => {} });
  const engine = guardEngine(raw, instance, (e, what) => {
    traps.push({ what, e });
    core.discard(instance.generation);
    return Object.assign(new Error(`the engine stopped during ${what}`), { kind: "engine_crashed" });
  });
  return { engine, instance };
}
