// The gateway in the extension host (issue 28): Node's own `http` server on 127.0.0.1, with every
// decision the core's (`HostGateway` in wasm, as `condense gateway` runs it): who may ask, where a
// request goes, the bytes to forward, the retry after "prompt too long", the usage an answer
// reports (handed back with the request's bill, which the core's books price). This file only moves bytes and keeps time: it reads a request's body within the core's
// limit, sends what the core says to the upstream with Node's `http`/`https`, streams the answer
// back with back-pressure (the upstream is paused while the client's socket is full), and aborts
// the upstream request when the client goes away.
//
// No header is logged. The client's credentials reach the upstream through the core's header
// filter and nowhere else.
//
// With `native`, a request that crosses the threshold goes out with the ledger at once and hands
// out summary jobs: they are written here in the background, at most `SUMMARY_SLOTS` at a time,
// by the model `summaryModel` gives (the user's condensing profile, its key from SecretStorage),
// and the session's next request carries the summary.
//
// A condensation's hidden messages go to a recall file the core names in the condensation (under
// the `recallDir` it is started with): this host writes each file (0600, its folders 0700) before
// the request naming it is sent, and removes those the core evicts.
//
// A trap of the engine (a panic in Rust) does not stop the gateway: the request that met it goes
// out as the client sent it, and a fresh engine takes over on the same port from the state saved
// last (`revive`), as the chat's engine is replaced after one.

import { promises as fs } from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { NEVER_UPSTREAM, SESSION_HEADER, TOKEN_HEADER, type GatewayForward, type GatewayRecallOp, type GatewayRetry, type GatewayRouted, type GatewaySetAside, type GatewayStartInput, type GatewayStateChanges, type GatewaySummary, type LlmTarget } from "@context-condenser/protocol";
import type { CondenseEngine, Gateway } from "../../wasm/condense_wasm";
import { isTrap } from "../engine/engine";
import { asFailure } from "../engine/errors";
import type { SavedState } from "./stateFile";

/** How long each wait may last, as `condense gateway`'s flags (and the LLM layer's timeouts). */
export interface GatewayLimits {
  /** To connect to the upstream. */
  connectMs: number;
  /** From sending a request to the upstream's status and headers. */
  headersMs: number;
  /** Silence of the upstream once connected, its answer's stream included: a stream that keeps
   *  moving is never cut by it (`--stream-idle-secs`). */
  streamIdleMs: number;
  /** A whole answer's stream, however it moves; 0 is no cap (`--stream-max-secs`, off). */
  streamMaxMs: number;
  /** Silence of a client sending its body (`--client-idle-secs`); its headers have as long. */
  clientIdleMs: number;
}

export const DEFAULT_LIMITS: GatewayLimits = {
  connectMs: 30_000,
  headersMs: 600_000,
  streamIdleMs: 60_000,
  streamMaxMs: 0,
  clientIdleMs: 30_000,
};
/** How long after a change the state is saved: a burst of requests is one write. */
export const SAVE_DELAY_MS = 500;
/** Summaries written at once (`native`), as in `condense gateway`; more wait their turn, their
 *  sessions keeping the ledger meanwhile. */
export const SUMMARY_SLOTS = 2;
/** A request body this large grows the engine's memory, which WebAssembly never gives back: once
 *  nothing is in flight, a fresh instance of the core takes over from the state (`renew`). */
export const RENEW_AFTER_BYTES = 16 << 20;


/** A port already taken (the server did not start). */
export class PortInUse extends Error {
  override name = "PortInUse";
  constructor(readonly port: number) {
    super(`port ${port} is in use`);
  }
}

export interface GatewayOptions extends Omit<GatewayStartInput, "state" | "sessions" | "port"> {
  /** The port to listen on, on 127.0.0.1 (0 picks a free one). */
  port: number;
}

export interface GatewayHooks {
  /** One line per request: method, path without its query, status, session, what went out. */
  log(line: string): void;
  /** The state's files to write and remove (the index, the sessions that changed), a moment after
   *  each change; `durable` when a request carrying a new condensation waits on it: each written
   *  whole and flushed to the disk before it returns. Returns the session files that could not be
   *  written or removed (the next save does them again). */
  save(changes: GatewayStateChanges, durable: boolean): string[];
  /** The model that writes `native`'s summaries, with its key; rejects with why there is none. */
  summaryModel?(): Promise<LlmTarget>;
  /** Drops the core's instance, so that `newEngine` makes the next engine on a fresh one (and the
   *  old one's memory goes back to the system): given, the gateway renews its engine after a
   *  large request. */
  renew?(): void;
}

/** The client's headers as name/value pairs, names lower-case (Node joins repeated ones). */
function pairs(headers: http.IncomingHttpHeaders): [string, string][] {
  const out: [string, string][] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.push([name.toLowerCase(), v]);
  }
  return out;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

type Upstream = Extract<GatewayRouted, { kind: "upstream" }>;

/** Headers as they came, less those never passed on, when the core cannot be asked (it
 *  trapped): its list, generated into the protocol package. */
function untouched(headers: http.IncomingHttpHeaders): [string, string][] {
  return pairs(headers).filter(([name]) => !NEVER_UPSTREAM.includes(name));
}

/** Whether a thrown value says the engine itself failed (a trap, or the guard's `engine_crashed`),
 *  not that it refused the input. */
function engineFailed(e: unknown): boolean {
  return isTrap(e) || asFailure(e).kind === "engine_crashed";
}

export class GatewayServer {
  private server: http.Server | undefined;
  private readonly sockets = new Set<import("node:net").Socket>();
  private saveTimer: NodeJS.Timeout | undefined;
  private boundPort = 0;
  private current: CondenseEngine;
  /** The gateway the current engine runs while the port is open (the engine made it, `stop`
   *  stops it: its calls fail with `gateway_stopped` after). */
  private running: Gateway | undefined;
  /** The options started with, and the state as last saved: what a fresh engine starts from. */
  private options: GatewayOptions | undefined;
  /** The state as saved last (the index and every session's file): a fresh engine goes on from
   *  it. */
  private lastState: { index?: string; sessions: Map<string, string> } = { sessions: new Map() };
  /** Summary jobs waiting for a slot, each with the gateway that handed it out. */
  private readonly waiting: Array<{ gw: Gateway; job: number }> = [];
  private writing = 0;
  /** Requests being served, and whether a large one asks for a fresh engine once none is. */
  private inFlight = 0;
  private renewDue = false;

  private readonly limits: GatewayLimits;

  /** `newEngine` gives the engine to start with, and a fresh one after a trap. */
  constructor(
    private readonly newEngine: () => CondenseEngine,
    private readonly hooks: GatewayHooks,
    limits: Partial<GatewayLimits> = {},
  ) {
    this.current = newEngine();
    this.limits = { ...DEFAULT_LIMITS, ...limits };
  }

  /** The engine holding the gateway's sessions now (another one after a trap). */
  get engine(): CondenseEngine {
    return this.current;
  }

  /** The gateway running now (another one after a trap), or undefined when stopped. */
  get gateway(): Gateway | undefined {
    return this.running;
  }

  /** The port listened on, or 0 when stopped. */
  get port(): number {
    return this.server ? this.boundPort : 0;
  }

  /**
   * After a trap of `failed` (the engine in use or its gateway, else nothing is done): a fresh engine takes its
   * place and, while the port is open, starts the gateway from the state saved last, so the
   * sessions, their condensations and their figures go on (what changed since that save, at most
   * `SAVE_DELAY_MS` of it, is lost). Requests in flight finish with the bytes they had.
   */
  revive(failed: CondenseEngine | Gateway, why: string): void {
    if (failed !== this.current && failed !== this.running) return;
    this.takeOver(`the engine stopped on an internal error (${why})`);
  }

  /** A fresh engine in place of the current one, going on from the state saved last while the
   *  port is open; the log says `what` happened. */
  private takeOver(what: string): void {
    const dead = this.current;
    let engine: CondenseEngine;
    try {
      engine = this.newEngine();
    } catch (e) {
      this.hooks.log(`gateway: ${what} and a fresh engine could not be made: ${(e as Error).message}`);
      return;
    }
    const deadGateway = this.running;
    this.current = engine;
    this.running = undefined;
    // Freed, the old engine and its gateway refuse the calls of requests still in flight at once
    // rather than meeting the trapped instance again.
    try {
      deadGateway?.free();
      dead.free();
    } catch {
      // A trapped instance may refuse even this; it is dropped either way.
    }
    if (!this.server || !this.options) return;
    try {
      const gw = engine.startGateway({ ...this.options, port: this.boundPort, ...this.savedState() });
      gw.bound(this.boundPort);
      this.running = gw;
      const started = gw.started();
      const from = started.state_refused ? `afresh (the saved state was refused: ${started.state_refused})` : this.lastState.index !== undefined || this.lastState.sessions.size > 0 ? "from the state saved last" : "afresh (nothing was saved yet)";
      this.hooks.log(`gateway: ${what}; a fresh engine goes on ${from}`);
    } catch (e) {
      this.hooks.log(`gateway: ${what} and the fresh engine did not start: ${(e as Error).message}`);
    }
  }

  /** After a large request, once nothing is in flight (no request, no summary being written): the
   *  state saved, a fresh instance of the core takes over from it, and the memory the large
   *  request grew goes back to the system. */
  private renewWhenIdle(): void {
    const renew = this.hooks.renew;
    if (!renew || !this.renewDue || this.inFlight > 0 || this.writing > 0 || this.waiting.length > 0 || !this.running) return;
    this.renewDue = false;
    // Without the state as it is now, the fresh engine would go on from an older one.
    if (!this.saveNow()) return;
    renew();
    this.takeOver("a large request grew the engine's memory");
  }

  /** Whether `e`, thrown by `gw`, was the engine failing: then the gateway is revived. */
  private failed(gw: Gateway, e: unknown): boolean {
    if (!engineFailed(e)) return false;
    this.revive(gw, (e as Error).message ?? String(e));
    return true;
  }

  /** Starts the core's gateway (restoring `state` when it can) and listens on 127.0.0.1.
   *  Rejects with `PortInUse` when the port is taken; the core's refusal of an option
   *  otherwise. Returns why the saved state was not used, if it was not, and the saved sessions
   *  that could not be read (their text, to keep aside). */
  async start(options: GatewayOptions, state?: SavedState): Promise<{ port: number; stateRefused?: string; setAside: GatewaySetAside[] }> {
    await this.stop();
    const gw = this.current.startGateway({ ...options, port: options.port, state: state?.index, sessions: state?.sessions ?? [] });
    const started = gw.started();
    this.options = options;
    // A state refused stays on disk as it is (the host keeps it aside); the files set aside are
    // not the gateway's to go on from.
    const unread = new Set(started.set_aside.flatMap((s) => (s.file ? [s.file] : [])));
    this.lastState = started.state_refused
      ? { sessions: new Map() }
      : { index: state?.index, sessions: new Map((state?.sessions ?? []).filter((f) => !unread.has(f.name)).map((f) => [f.name, f.text])) };
    const server = http.createServer((req, res) => this.handle(req, res));
    // Slow clients: headers within the client idle time, as condense gateway (the body: `readBody`).
    server.headersTimeout = this.limits.clientIdleMs;
    server.requestTimeout = 0;
    server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
    try {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(options.port, "127.0.0.1", () => {
          server.off("error", reject);
          resolve();
        });
      });
    } catch (e) {
      gw.stop();
      if ((e as NodeJS.ErrnoException).code === "EADDRINUSE") throw new PortInUse(options.port);
      throw e;
    }
    this.server = server;
    this.boundPort = (server.address() as AddressInfo).port;
    this.running = gw;
    gw.bound(this.boundPort);
    return { port: this.boundPort, stateRefused: started.state_refused ?? undefined, setAside: started.set_aside ?? [] };
  }

  /** Closes the port (every open connection too) and saves the state. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.waiting.length = 0;
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    this.saveNow();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
    const gw = this.running;
    this.running = undefined;
    try {
      gw?.stop();
    } catch (e) {
      if (gw) this.failed(gw, e);
    }
  }

  /** Frees the engine (after `stop`: the server is done with). */
  free(): void {
    this.current.free();
  }

  /** The state as saved last, as the core's `startGateway` takes it. */
  private savedState(): { state?: string; sessions: { name: string; text: string }[] } {
    return { state: this.lastState.index, sessions: [...this.lastState.sessions].map(([name, text]) => ({ name, text })) };
  }

  /** Saves what changed of the state; false when the engine could not give it. */
  private saveNow(durable = false): boolean {
    const gw = this.running;
    if (!gw) return false;
    let changes: GatewayStateChanges;
    try {
      changes = gw.saveChanges();
    } catch (e) {
      if (!this.failed(gw, e)) this.hooks.log(`gateway: cannot save its state: ${(e as Error).message}`);
      return false;
    }
    this.lastState.index = changes.index;
    for (const file of changes.write) this.lastState.sessions.set(file.name, file.text);
    for (const name of changes.remove) this.lastState.sessions.delete(name);
    for (const name of this.hooks.save(changes, durable)) {
      try {
        gw.unsaved(name);
      } catch (e) {
        this.failed(gw, e);
      }
    }
    return true;
  }

  /** Saves now, durably, before a request carrying a new condensation leaves: a gateway killed
   *  once it left replays its bytes. A save pending is this one. */
  private saveBeforeSending(): void {
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    this.saveNow(true);
  }

  private changed(): void {
    if (this.saveTimer || !this.server) return;
    this.saveTimer = setTimeout(() => {
      this.saveTimer = undefined;
      if (this.server) this.saveNow();
    }, SAVE_DELAY_MS);
  }

  private answer(res: http.ServerResponse, status: number, body: string): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  }

  private log(method: string, url: string, status: number, session: string | undefined, what: string): void {
    const path = url.split("?")[0];
    this.hooks.log(`gateway: ${method} ${path} → ${status}${session ? ` [${session}]` : ""}: ${what}`);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.inFlight++;
    res.once("close", () => {
      this.inFlight--;
      this.renewWhenIdle();
    });
    const method = req.method ?? "GET";
    const url = req.url ?? "/";
    // A request is served by the gateway it met first: its answer's reader belongs to it.
    const gw = this.running;
    if (!gw) {
      this.answer(res, 503, JSON.stringify({ error: { message: "the gateway is stopping" } }));
      return;
    }
    let routed: GatewayRouted;
    try {
      routed = gw.route({
        method,
        path: url,
        host: single(req.headers.host),
        origin: single(req.headers.origin),
        token: single(req.headers[TOKEN_HEADER]),
      });
    } catch (e) {
      this.failed(gw, e);
      this.answer(res, 500, JSON.stringify({ error: { message: (e as Error).message } }));
      return;
    }
    if (routed.kind === "answer") {
      this.answer(res, routed.status, routed.body);
      return;
    }
    this.readBody(req, res, routed)
      .then(
        (body) => body && this.forward(gw, req, res, routed as Upstream, body),
        () => res.destroy(),
      )
      .catch((e: unknown) => {
        // A failure of this host's own code: said, and the client is not left waiting.
        const message = `the gateway failed on this request: ${(e as Error).message}`;
        this.hooks.log(`gateway: ${message}`);
        this.answer(res, 500, JSON.stringify({ error: { message } }));
      });
  }

  /** The request's body within the core's limit; undefined after answering 413. */
  private readBody(req: http.IncomingMessage, res: http.ServerResponse, routed: Upstream): Promise<Buffer | undefined> {
    const declared = Number(req.headers["content-length"]);
    if (Number.isFinite(declared) && declared > routed.max_body_bytes) {
      this.answer(res, 413, routed.too_large);
      req.resume();
      return Promise.resolve(undefined);
    }
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      // With its length declared, the body is read into one buffer of that size (its pages taken
      // as they are written), not gathered and then copied whole: one copy of a 50 MB body.
      const whole = Number.isSafeInteger(declared) && declared >= 0 ? Buffer.allocUnsafe(declared) : undefined;
      // A body that stops arriving (a `Content-Length` longer than what is sent) is given up after
      // the time its headers had: 408, and the connection closed.
      let idle: NodeJS.Timeout | undefined;
      const quiet = () => {
        clearTimeout(idle);
        idle = setTimeout(() => {
          chunks.length = 0;
          this.answer(res, 408, JSON.stringify({ error: { message: `the request's body stopped arriving for ${Math.round(this.limits.clientIdleMs / 1000)} s` } }));
          res.once("finish", () => req.destroy());
          resolve(undefined);
        }, this.limits.clientIdleMs);
      };
      quiet();
      req.on("close", () => clearTimeout(idle));
      req.on("data", (chunk: Buffer) => {
        quiet();
        size += chunk.length;
        if (size > routed.max_body_bytes) {
          clearTimeout(idle);
          this.answer(res, 413, routed.too_large);
          req.destroy();
          resolve(undefined);
          return;
        }
        // Node's parser ends a body at its declared length: it never outgrows `whole`.
        if (whole) chunk.copy(whole, size - chunk.length);
        else chunks.push(chunk);
      });
      req.on("end", () => {
        clearTimeout(idle);
        resolve(whole ? whole.subarray(0, size) : Buffer.concat(chunks));
      });
      req.on("error", (e) => {
        clearTimeout(idle);
        reject(e);
      });
    });
  }

  private forward(gw: Gateway, req: http.IncomingMessage, res: http.ServerResponse, routed: Upstream, body: Buffer): void {
    const method = req.method ?? "GET";
    if (body.length >= RENEW_AFTER_BYTES) this.renewDue = true;
    const url = req.url ?? "/";
    let forward: GatewayForward;
    try {
      forward = gw.request(
        {
          method,
          path: routed.path,
          wire: routed.wire,
          session: single(req.headers[SESSION_HEADER]),
          userAgent: single(req.headers["user-agent"]),
          headers: pairs(req.headers),
        },
        body,
      );
    } catch (e) {
      // The core failed: the client's request goes out as it came (fail open).
      this.hooks.log(`gateway: the core failed on a request: ${(e as Error).message}`);
      this.failed(gw, e);
      forward = { headers: untouched(req.headers), log: "forwarded untouched: the core failed", jobs: [], recall: [], condensed_now: false };
    }
    if (method === "POST") this.changed();
    const condensedNow = forward.condensed_now;
    if (forward.jobs.length > 0) this.summarize(gw, forward.jobs);
    if (forward.answer) {
      this.log(method, url, 200, undefined, forward.log);
      this.answer(res, 200, forward.answer);
      return;
    }
    const session = forward.session ?? undefined;
    // The request's bill goes back with its answer's usage: the core's books price it.
    let bill = forward.bill ?? undefined;
    const sent = forward.body != null ? Buffer.from(forward.body, "utf8") : body;
    const aborter = new AbortController();
    // The client went away before the answer ended: the upstream request is aborted.
    res.on("close", () => {
      if (!res.writableFinished) aborter.abort();
    });
    const send = (payload: Buffer, retried: boolean): void => {
      const upstream = this.request(routed.url, method, forward.headers, payload, aborter.signal);
      upstream.on("error", (e: NodeJS.ErrnoException) => {
        if (aborter.signal.aborted) return;
        const timeout = e.code === "ETIMEDOUT" || e.message.includes("timed out");
        const status = timeout ? 504 : 502;
        const why = timeout ? "the upstream did not answer in time" : "the upstream cannot be reached";
        this.log(method, url, status, session, forward.log);
        const message = `${why} (${routed.url.split("?")[0]}): ${e.message}`;
        let error: string;
        try {
          error = gw.errorBody(routed.wire, status, message);
        } catch (failure) {
          this.failed(gw, failure);
          error = JSON.stringify({ error: { message } });
        }
        this.answer(res, status, error);
      });
      upstream.on("response", (answer) => {
        const status = answer.statusCode ?? 502;
        if (session && !retried && (status === 400 || status === 413)) {
          // "Prompt too long" before any byte reached the client: condensed harder, retried once.
          const chunks: Buffer[] = [];
          answer.on("data", (c: Buffer) => chunks.push(c));
          answer.on("end", () => {
            const whole = Buffer.concat(chunks);
            let retry: GatewayRetry | undefined;
            let head: [string, string][];
            try {
              retry = gw.tooLong(session, status, whole, body);
              head = retry === undefined ? gw.answer({ session: undefined, headers: pairs(answer.headers) }).headers : [];
            } catch (e) {
              // The engine failed: the upstream's answer goes back as it came.
              this.failed(gw, e);
              retry = undefined;
              head = untouched(answer.headers);
            }
            if (retry !== undefined) {
              this.log(method, url, status, session, "prompt too long: condensed further, retrying once");
              forward = { ...forward, log: "condensed after the upstream's prompt too long" };
              bill = retry.bill;
              this.changed();
              const again = Buffer.from(retry.body, "utf8");
              void this.writeRecall(gw, session, retry.recall).then(() => {
                this.saveBeforeSending();
                send(again, true);
              });
              return;
            }
            this.log(method, url, status, session, forward.log);
            res.writeHead(status, Object.fromEntries(groupHeaders(head)));
            res.end(whole);
          });
          return;
        }
        this.log(method, url, status, session, forward.log);
        this.streamBack(gw, answer, res, session, bill);
      });
    };
    // The files a condensation names are on disk before the request naming them leaves, and so
    // is the condensation itself.
    void this.writeRecall(gw, session, forward.recall).then(() => {
      if (condensedNow) this.saveBeforeSending();
      send(sent, false);
    });
  }

  /** Does what the engine decided on disk for the recall files, in order: each written whole,
   *  readable by the user alone (its folders 0700), each removed one's folder removed once empty.
   *  A file not written is told to the engine (its figures say why) and logged. Never rejects. */
  private async writeRecall(gw: Gateway, session: string | undefined, ops: GatewayRecallOp[]): Promise<void> {
    for (const op of ops) {
      if (op.kind === "remove") {
        await fs.rm(op.path, { force: true }).catch(() => {});
        // Fails while the folder holds other files, as it should.
        await fs.rmdir(path.dirname(op.path)).catch(() => {});
        continue;
      }
      try {
        await fs.mkdir(path.dirname(op.path), { recursive: true, mode: 0o700 });
        await fs.writeFile(op.path, op.text, { mode: 0o600 });
        await fs.chmod(op.path, 0o600);
      } catch (e) {
        const why = (e as Error).message;
        this.hooks.log(`gateway: cannot write the recall file ${op.path}: ${why}`);
        try {
          if (session) gw.recallFailed(session, op.path, why);
        } catch (failure) {
          this.failed(gw, failure);
        }
      }
    }
  }

  /** Queues the summary jobs a request handed out (`native`) and starts what the slots allow. */
  private summarize(gw: Gateway, jobs: number[]): void {
    for (const job of jobs) this.waiting.push({ gw, job });
    while (this.writing < SUMMARY_SLOTS && this.waiting.length > 0) {
      const next = this.waiting.shift()!;
      // A job goes with its gateway: one stopped, or replaced after a trap, took its jobs along.
      if (next.gw !== this.running || !this.server) continue;
      this.writing++;
      void this.writeSummary(next.gw, next.job).finally(() => {
        this.writing--;
        this.summarize(next.gw, []);
        this.renewWhenIdle();
      });
    }
  }

  /** Writes one summary with the summary model and says how it went; a job without a model is
   *  given up (the ledger stays), and the figures count it as failed. */
  private async writeSummary(gw: Gateway, job: number): Promise<void> {
    let outcome: GatewaySummary;
    try {
      let llm: LlmTarget | undefined;
      let missing = "no model is set to write the summaries";
      try {
        llm = await this.hooks.summaryModel?.();
      } catch (e) {
        missing = asFailure(e).message;
      }
      outcome = llm ? await gw.summarize(job, llm) : gw.dropJob(job, missing);
    } catch (e) {
      // Stopped meanwhile (its work cancelled), or the engine failed.
      if (!this.failed(gw, e) && this.server) this.hooks.log(`gateway: a summary was not written: ${asFailure(e).message}`);
      return;
    }
    this.hooks.log(`gateway: ${outcome.line}`);
    this.changed();
  }

  /** The upstream request: deadlines to connect and for the answer's head, then a limit on
   *  silence only (and the total cap when set), so an answer that keeps moving is never cut;
   *  never follows redirects. */
  private request(
    url: string,
    method: string,
    headers: [string, string][],
    body: Buffer,
    signal: AbortSignal,
  ): http.ClientRequest {
    const target = new URL(url);
    const client = target.protocol === "https:" ? https : http;
    const outgoing: http.OutgoingHttpHeaders = {};
    for (const [name, value] of headers) {
      const had = outgoing[name];
      outgoing[name] = had === undefined ? value : [...(Array.isArray(had) ? had : [String(had)]), value];
    }
    outgoing["content-length"] = body.length;
    const { connectMs, headersMs, streamIdleMs, streamMaxMs } = this.limits;
    const request = client.request(target, { method, headers: outgoing, signal, timeout: connectMs });
    const timedOut = (what: string) => Object.assign(new Error(`timed out ${what}`), { code: "ETIMEDOUT" });
    request.on("socket", (socket) => {
      // A kept-alive socket is connected already: its idle limit applies at once (a listener for
      // a connect that never comes would pile up on it, one per request).
      if (socket.connecting) socket.once(target.protocol === "https:" ? "secureConnect" : "connect", () => request.setTimeout(streamIdleMs));
      else request.setTimeout(streamIdleMs);
    });
    request.on("timeout", () => request.destroy(timedOut("(no byte for a while)")));
    let deadline = setTimeout(() => request.destroy(timedOut("waiting for the answer")), headersMs);
    request.on("response", (answer) => {
      clearTimeout(deadline);
      if (streamMaxMs > 0) deadline = setTimeout(() => answer.destroy(timedOut("(the stream's total cap)")), streamMaxMs);
    });
    request.on("close", () => clearTimeout(deadline));
    request.end(body);
    return request;
  }

  /** The answer, streamed to the client as it comes, its usage read on the way. */
  private streamBack(gw: Gateway, answer: http.IncomingMessage, res: http.ServerResponse, session: string | undefined, bill: number | undefined): void {
    let headers: [string, string][];
    let reader: number | undefined;
    try {
      const head = gw.answer({ session, bill, headers: pairs(answer.headers) });
      headers = head.headers;
      reader = head.reader ?? undefined;
    } catch (e) {
      // The engine failed: the answer streams back as it came, its usage not read.
      this.failed(gw, e);
      headers = untouched(answer.headers);
    }
    res.writeHead(answer.statusCode ?? 502, Object.fromEntries(groupHeaders(headers)));
    /** Reads the usage on the way while the gateway that made the reader is the one running. */
    const read = (call: (reader: number) => void) => {
      if (reader === undefined) return;
      if (gw !== this.running) {
        reader = undefined;
        return;
      }
      try {
        call(reader);
      } catch (e) {
        reader = undefined;
        if (!this.failed(gw, e)) this.hooks.log(`gateway: the answer's usage could not be read: ${(e as Error).message}`);
      }
    };
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      read((r) => {
        gw.answerEnd(r);
        this.changed();
      });
    };
    answer.on("data", (chunk: Buffer) => {
      if (!res.write(chunk)) {
        answer.pause();
        res.once("drain", () => answer.resume());
      }
      read((r) => gw.answerChunk(r, chunk));
    });
    answer.on("end", () => {
      res.end();
      end();
    });
    answer.on("error", () => {
      res.destroy();
      end();
    });
    res.on("close", () => {
      if (!answer.complete) answer.destroy();
      end();
    });
  }
}

/** Header pairs as Node's `writeHead` takes them: repeated names as arrays. */
function groupHeaders(headers: [string, string][]): [string, string | string[]][] {
  const out = new Map<string, string | string[]>();
  for (const [name, value] of headers) {
    const had = out.get(name);
    out.set(name, had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value]);
  }
  return [...out];
}
