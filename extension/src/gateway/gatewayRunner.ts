// Where the extension's gateway runs (issue 38). In the extension host the server and its engine
// run in a worker thread of their own (`GatewayThread`, gatewayWorker.ts): a request's parsing,
// counting and condensing, which for a 50 MB body takes seconds of the core's time, never holds the
// extension host's event loop, and the memory a large request made the engine grow (WebAssembly
// memory never shrinks) goes back to the system when the thread is replaced. The controller
// (gatewayCommands.ts) sees one interface, `GatewayRunner`; `InProcessGateway` runs the same
// server on the calling thread, for the tests that drive the controller with the engine holder's
// engines.
//
// Messages between the threads are typed here once (`ToWorker`, `FromWorker`) and checked on
// arrival by their `op`.

import { Worker } from "node:worker_threads";
import type { GatewayPreview, GatewayReport, GatewaySessionView, GatewaySetAside, GatewaySetup, GatewayStateChanges, GatewayVariable, LlmTarget } from "@context-condenser/protocol";
import type { CondenseEngine, Gateway } from "../../wasm/condense_wasm";
import { GatewayServer, type GatewayOptions, PortInUse } from "./gateway";
import { type SavedState, writeChanges } from "./stateFile";

/** What a started gateway says. */
export interface Started {
  port: number;
  stateRefused?: string;
  setAside: GatewaySetAside[];
}

/** The calls the controller and the view make on a running gateway, answered asynchronously
 *  (from the worker thread). */
export interface GatewayCalls {
  report(): Promise<GatewayReport>;
  session(name: string): Promise<GatewaySessionView>;
  preview(name: string): Promise<GatewayPreview>;
  condenseNext(name: string): Promise<void>;
  pause(name: string, paused: boolean): Promise<void>;
  undo(name: string): Promise<{ start: number; end: number }>;
  setup(base: string): Promise<GatewaySetup[]>;
  terminalVariables(base: string): Promise<GatewayVariable[]>;
}

export type CallName = keyof GatewayCalls;
const CALLS: readonly CallName[] = ["report", "session", "preview", "condenseNext", "pause", "undo", "setup", "terminalVariables"];

/** What the runner tells its controller. */
export interface RunnerHooks {
  /** A line for the Output log. */
  log(line: string): void;
  /** The state was saved (its figures may have changed). */
  saved(): void;
  /** The model that writes `native`'s summaries, with its key; rejects with why there is none. */
  summaryModel(): Promise<LlmTarget>;
  /** The folder the state is saved in (`state.json`, `sessions/`). */
  stateDir: string;
}

/** A gateway the controller starts, asks and stops. */
export interface GatewayRunner {
  /** The port listened on, 0 when stopped. */
  readonly port: number;
  /** The calls on the running gateway; undefined when stopped. */
  readonly calls: GatewayCalls | undefined;
  /** Starts it (`PortInUse` when the port is taken). */
  start(options: GatewayOptions, state: SavedState | undefined): Promise<Started>;
  /** Closes the port and saves the state. */
  stop(): Promise<void>;
  /** After a trap of the core's instance this runner's engine lives in: a fresh engine goes on
   *  from the state saved last. */
  revive(why: string): void;
  /** Frees what it holds (after `stop`). */
  dispose(): void;
}

function callsThrough(call: (name: CallName, args: unknown[]) => Promise<unknown>): GatewayCalls {
  const calls = {} as Record<CallName, (...args: unknown[]) => Promise<unknown>>;
  for (const name of CALLS) calls[name] = (...args: unknown[]) => call(name, args);
  return calls as unknown as GatewayCalls;
}

/** Answers a call on `server`'s running gateway. */
export function callOn(server: GatewayServer, name: CallName, args: unknown[]): unknown {
  const gw = server.gateway;
  if (!gw) throw new Error("the gateway is not running: start it first");
  return callGateway(gw, name, args);
}

function callGateway(gw: Gateway, name: CallName, args: unknown[]): unknown {
  const method = (gw as unknown as Record<string, (...a: unknown[]) => unknown>)[name];
  return method.apply(gw, args);
}

/** Writes the state's `changes` in `dir` (the gateway's `save` hook, on whichever thread runs
 *  it): the files that could not be written, logged. */
export function saveState(dir: string, changes: GatewayStateChanges, durable: boolean, log: (line: string) => void, saved: () => void): string[] {
  const { failed, error } = writeChanges(dir, changes, durable);
  if (error !== undefined) log(`gateway: cannot write its state in ${dir}: ${error}`);
  saved();
  return failed;
}

/** The gateway on the calling thread, with engines of `newEngine` (the tests' engine holder). */
export class InProcessGateway implements GatewayRunner {
  private readonly server: GatewayServer;
  private started = false;
  /** The calls on the gateway running now: the same object until another gateway (a revived
   *  one) takes its place; calls on one stopped fail as its calls do (`gateway_stopped`). */
  private bound: { gw: Gateway; calls: GatewayCalls } | undefined;

  constructor(newEngine: () => CondenseEngine, hooks: RunnerHooks) {
    this.server = new GatewayServer(newEngine, {
      log: hooks.log,
      save: (changes, durable) => saveState(hooks.stateDir, changes, durable, hooks.log, hooks.saved),
      summaryModel: hooks.summaryModel,
    });
  }

  get port(): number {
    return this.server.port;
  }

  get calls(): GatewayCalls | undefined {
    const gw = this.server.gateway;
    if (!this.started || !gw) return undefined;
    if (this.bound?.gw !== gw) this.bound = { gw, calls: callsThrough(async (name, args) => callGateway(gw, name, args)) };
    return this.bound.calls;
  }

  async start(options: GatewayOptions, state: SavedState | undefined): Promise<Started> {
    const started = await this.server.start(options, state);
    this.started = true;
    return started;
  }

  async stop(): Promise<void> {
    this.started = false;
    await this.server.stop();
  }

  revive(why: string): void {
    this.server.revive(this.server.engine, why);
  }

  dispose(): void {
    this.server.free();
  }
}

/** Main thread → worker. */
export type ToWorker =
  | { op: "start"; id: number; options: GatewayOptions; state: SavedState | undefined; stateDir: string }
  | { op: "stop"; id: number }
  | { op: "call"; id: number; name: CallName; args: unknown[] }
  | { op: "summaryModel"; id: number; target?: LlmTarget; error?: string };

/** What the main thread asks, before its id is given. */
type Asked =
  | { op: "start"; options: GatewayOptions; state: SavedState | undefined; stateDir: string }
  | { op: "stop" }
  | { op: "call"; name: CallName; args: unknown[] };

/** Worker → main thread. */
export type FromWorker =
  | { op: "reply"; id: number; value?: unknown; error?: { message: string; kind?: string; port?: number } }
  | { op: "log"; line: string }
  | { op: "saved" }
  | { op: "summaryModel"; id: number };

const isFromWorker = (m: unknown): m is FromWorker =>
  typeof m === "object" && m !== null && ["reply", "log", "saved", "summaryModel"].includes((m as { op?: unknown }).op as string);

/**
 * The gateway in a worker thread (gatewayWorker.ts, bundled beside the extension as
 * dist/gatewayWorker.js), with its own instance of the core. A thread that dies (its engine out of
 * memory, a bug) is said in the log and the gateway is stopped; Start Gateway starts a fresh one.
 */
export class GatewayThread implements GatewayRunner {
  private worker: Worker | undefined;
  private next = 0;
  private readonly waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private boundPort = 0;

  /** `script` is the worker's bundle; `wasmDir` the core's package folder. */
  constructor(
    private readonly script: string,
    private readonly wasmDir: string,
    private readonly hooks: RunnerHooks,
  ) {}

  get port(): number {
    return this.worker ? this.boundPort : 0;
  }

  get calls(): GatewayCalls | undefined {
    if (!this.worker || !this.boundPort) return undefined;
    return callsThrough((name, args) => this.ask({ op: "call", name, args }));
  }

  private ask(message: Asked): Promise<unknown> {
    const worker = this.worker;
    if (!worker) return Promise.reject(new Error("the gateway is not running: start it first"));
    const id = ++this.next;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ ...message, id } as ToWorker);
    });
  }

  private spawn(): Worker {
    const worker = new Worker(this.script, { workerData: { wasmDir: this.wasmDir } });
    worker.on("message", (m: unknown) => {
      if (!isFromWorker(m)) return;
      switch (m.op) {
        case "reply": {
          const waiting = this.waiting.get(m.id);
          this.waiting.delete(m.id);
          if (!waiting) return;
          if (!m.error) waiting.resolve(m.value);
          else if (m.error.port !== undefined) waiting.reject(new PortInUse(m.error.port));
          // The core's typed error keeps its kind (`gateway_stopped`, …) across the threads.
          else waiting.reject(Object.assign(new Error(m.error.message), m.error.kind ? { kind: m.error.kind } : {}));
          return;
        }
        case "log":
          this.hooks.log(m.line);
          return;
        case "saved":
          this.hooks.saved();
          return;
        case "summaryModel":
          this.hooks.summaryModel().then(
            (target) => worker.postMessage({ op: "summaryModel", id: m.id, target } satisfies ToWorker),
            (e: unknown) => worker.postMessage({ op: "summaryModel", id: m.id, error: (e as Error).message ?? String(e) } satisfies ToWorker),
          );
          return;
      }
    });
    const gone = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.boundPort = 0;
      for (const w of this.waiting.values()) w.reject(new Error(`the gateway's thread stopped: ${why}`));
      this.waiting.clear();
    };
    worker.on("error", (e) => {
      this.hooks.log(`gateway: its thread failed and the gateway stopped (start it again): ${e.message}`);
      gone(e.message);
    });
    worker.on("exit", (code) => gone(`exit code ${code}`));
    return worker;
  }

  async start(options: GatewayOptions, state: SavedState | undefined): Promise<Started> {
    await this.stop();
    this.worker = this.spawn();
    try {
      // Settings come as VS Code's proxies, which a message cannot carry: their JSON can.
      const plain = JSON.parse(JSON.stringify(options)) as GatewayOptions;
      const started = (await this.ask({ op: "start", options: plain, state, stateDir: this.hooks.stateDir })) as Started;
      this.boundPort = started.port;
      return started;
    } catch (e) {
      await this.terminate();
      throw e;
    }
  }

  async stop(): Promise<void> {
    if (!this.worker) return;
    try {
      await this.ask({ op: "stop" });
    } catch (e) {
      this.hooks.log(`gateway: stopping its thread: ${(e as Error).message}`);
    }
    await this.terminate();
  }

  private async terminate(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.boundPort = 0;
    await worker?.terminate();
  }

  revive(): void {
    // Its engine is an instance of its own, in its thread: another instance's trap is not its.
  }

  dispose(): void {
    void this.terminate();
  }
}
