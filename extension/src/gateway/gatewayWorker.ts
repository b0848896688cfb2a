// The extension's gateway in a worker thread (issue 38): gateway.ts's server with an engine of its
// own instance of the core, so that what a request costs the core is this thread's time and
// memory, never the extension host's. It answers the main thread's messages (gatewayRunner.ts:
// `ToWorker`), writes the state file itself (a request carrying a new condensation waits for it
// on disk), and asks the main thread for what lives there: the summary model and its key.

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { parentPort, workerData } from "node:worker_threads";
import type { LlmTarget } from "@context-condenser/protocol";
import { Core, guardEngine, newEngine } from "../engine/engine";
import { GatewayServer, PortInUse } from "./gateway";
import { type FromWorker, type ToWorker, callOn, saveState } from "./gatewayRunner";

const port = parentPort;
if (!port) throw new Error("gatewayWorker.js runs as a worker thread");
const post = (message: FromWorker): void => port.postMessage(message);
const log = (line: string): void => post({ op: "log", line });

const core = new Core((workerData as { wasmDir: string }).wasmDir);
let stateDir = "";
let server: GatewayServer | undefined;

/** An engine behind the guard: a trap drops the instance (the next engine is a fresh one) and
 *  fails the call with `engine_crashed`, which the server answers by reviving. A trap met outside
 *  a call (a promise's task) revives it too. */
function engine() {
  const instance = core.current();
  const raw = newEngine(core, { info: (m) => log(`gateway: ${m}`), warn: (m) => log(`gateway: ${m}`), error: (m) => log(`gateway: ${m}`) });
  const guarded = guardEngine(raw, instance, (_e, what) => {
    core.discard(instance.generation);
    return Object.assign(new Error(`the engine stopped during ${what}`), { kind: "engine_crashed" });
  });
  instance.trapped.catch(() => {
    core.discard(instance.generation);
    server?.revive(guarded, "the core's instance trapped");
  });
  return guarded;
}

let nextModel = 0;
const models = new Map<number, { resolve(t: LlmTarget): void; reject(e: Error): void }>();

server = new GatewayServer(engine, {
  log,
  save: (changes, durable) => saveState(stateDir, changes, durable, log, () => post({ op: "saved" })),
  summaryModel: () =>
    new Promise<LlmTarget>((resolve, reject) => {
      const id = ++nextModel;
      models.set(id, { resolve, reject });
      post({ op: "summaryModel", id });
    }),
  // After a large request: the next engine is made on a fresh instance, and the old one's memory
  // goes back to the system once it is collected, which is asked for as soon as the fresh one has
  // taken over (nothing else would make this thread collect soon: it allocates little JS).
  renew: () => {
    core.discard(core.current().generation);
    setImmediate(collect);
  },
});

/** A full collection of this thread's heap (V8's `gc`, exposed for this thread alone). */
const collect: () => void = (() => {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  setFlagsFromString("--no-expose-gc");
  return gc;
})();

const reply = (id: number, value: unknown): void => post({ op: "reply", id, value });
const refuse = (id: number, e: unknown): void => {
  const kind = (e as { kind?: unknown }).kind;
  const error = e instanceof PortInUse ? { message: e.message, port: e.port } : { message: (e as Error).message ?? String(e), ...(typeof kind === "string" ? { kind } : {}) };
  post({ op: "reply", id, error });
};

port.on("message", (message: ToWorker) => {
  const gateway = server;
  if (!gateway || typeof message !== "object" || message === null) return;
  switch (message.op) {
    case "start":
      stateDir = message.stateDir;
      gateway.start(message.options, message.state).then(
        (started) => reply(message.id, started),
        (e: unknown) => refuse(message.id, e),
      );
      return;
    case "stop":
      gateway.stop().then(
        () => {
          gateway.free();
          server = undefined;
          reply(message.id, undefined);
        },
        (e: unknown) => refuse(message.id, e),
      );
      return;
    case "call":
      try {
        reply(message.id, callOn(gateway, message.name, message.args));
      } catch (e) {
        refuse(message.id, e);
      }
      return;
    case "summaryModel": {
      const waiting = models.get(message.id);
      models.delete(message.id);
      if (message.target) waiting?.resolve(message.target);
      else waiting?.reject(new Error(message.error ?? "no model"));
      return;
    }
  }
});
