// Loads the core (wasm) from the extension's own folder and gives it the host's capabilities:
// `fetch` with an abort signal, a monotonic clock, the log channel, and the command runner that
// `cli` profiles run their tools with (see runner.ts).

import * as path from "node:path";
import type { CondenseEngine, Host } from "../../wasm/condense_wasm";
import { type RunnerOptions, locate, platformName, readText, runCommand } from "./runner";

export interface LogSink {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export type WasmModule = typeof import("../../wasm/condense_wasm");

/** A panic in the engine, as its panic hook reported it just before the instance trapped. */
export class EngineTrap extends Error {
  override name = "EngineTrap";
}

/** One instantiation of the wasm package: its number, and a promise that rejects with an
 *  `EngineTrap` if it ever panics. */
export interface CoreInstance {
  readonly generation: number;
  readonly trapped: Promise<never>;
}

/**
 * The wasm package at `<dir>/condense_wasm.js`, instantiated on first use. A panic in Rust traps
 * the WebAssembly instance (`RuntimeError: unreachable`) and may leave its memory half-updated (a
 * borrow never released, the promise task queue stopped, so a call's promise never settles). The
 * panic hook tells this loader first (`onPanic`), and after a trap the whole instance is dropped:
 * `discard()` forgets it and the next `get()` loads and instantiates the package afresh.
 */
export class Core {
  private module: WasmModule | undefined;
  private instance: CoreInstance | undefined;
  private generation = 0;
  private readonly file: string;

  constructor(dir: string) {
    this.file = path.join(dir, "condense_wasm.js");
  }

  get(): WasmModule {
    if (!this.module) {
      // A computed path: esbuild leaves it to Node, which reads the .wasm beside the .js.
      const module = require(this.file) as WasmModule;
      let reject: (e: EngineTrap) => void = () => {};
      const trapped = new Promise<never>((_, r) => (reject = r));
      trapped.catch(() => {}); // Observed by the guards; a trap with no call in flight is no error.
      // Called from inside the panic: record it, never call back into the engine.
      module.onPanic((message: string) => reject(new EngineTrap(message)));
      this.instance = { generation: ++this.generation, trapped };
      this.module = module;
    }
    return this.module;
  }

  /** The current instantiation (made now if there is none yet). */
  current(): CoreInstance {
    this.get();
    return this.instance!;
  }

  /** Drops the instance if it is still `generation`; the next `get()` builds a new one. */
  discard(generation: number): void {
    if (this.instance?.generation !== generation) return;
    const key = require.resolve(this.file);
    const loaded = require.cache[key];
    delete require.cache[key];
    // The module that required it keeps it among its children too, and with it the instance and
    // its memory, which would never be collected.
    const children: unknown[] | undefined = typeof module !== "undefined" ? module.children : undefined;
    if (loaded && Array.isArray(children)) {
      const at = children.indexOf(loaded);
      if (at >= 0) children.splice(at, 1);
    }
    this.module = undefined;
    this.instance = undefined;
  }
}

/** Whether a thrown value is a trap of the engine (a Rust panic), not an error it returned. */
export function isTrap(e: unknown): boolean {
  return e instanceof WebAssembly.RuntimeError || e instanceof EngineTrap;
}

/** Whether `value` is an instance of a class the wasm package exports (it owns a pointer into the
 *  instance and a `free`). */
function isWasmObject(value: unknown): value is object {
  return typeof value === "object" && value !== null && "__wbg_ptr" in value && typeof (value as { free?: unknown }).free === "function";
}

/**
 * The engine behind a guard: a trap in any of its methods or getters, thrown at once, or met by a
 * promise it returned (which would otherwise never settle), goes to `onTrap` (which replaces the
 * engine) and comes out as the error `onTrap` returns: a typed `engine_crashed` failure, never a
 * bare RuntimeError. What it makes (a `Gateway`) comes out behind the same guard.
 */
export function guardEngine<T extends object>(engine: T, instance: CoreInstance, onTrap: (e: unknown, what: string) => Error): T {
  const fail = (e: unknown, what: string): never => {
    throw isTrap(e) ? onTrap(e, what) : e;
  };
  return new Proxy(engine, {
    get(target, prop) {
      const what = String(prop);
      let value: unknown;
      try {
        value = Reflect.get(target, prop, target);
      } catch (e) {
        return fail(e, what);
      }
      if (typeof value !== "function" || prop === "constructor") return value;
      return (...args: unknown[]) => {
        let result: unknown;
        try {
          result = (value as (...a: unknown[]) => unknown).apply(target, args);
        } catch (e) {
          return fail(e, what);
        }
        if (result instanceof Promise) return Promise.race([result, instance.trapped]).catch((e: unknown) => fail(e, what));
        // An object the engine made (a `Gateway`) lives in the same instance: guarded the same way.
        if (isWasmObject(result)) return guardEngine(result, instance, onTrap);
        return result;
      };
    },
  });
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
    readText: (file, maxBytes) => readText(file, maxBytes),
    run: (spec, signal) => runCommand(spec, signal, runner),
  };
}

export function newEngine(core: Core, log: LogSink, runner: RunnerOptions = {}): CondenseEngine {
  return new (core.get().CondenseEngine)(makeHost(log, runner));
}
