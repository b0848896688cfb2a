// The gateway in the extension host (issue 28): Node's own `http` server on 127.0.0.1, with every
// decision the core's (`HostGateway` in wasm, as `condense gateway` runs it): who may ask, where a
// request goes, the bytes to forward, the retry after "prompt too long", the usage an answer
// reports. This file only moves bytes and keeps time: it reads a request's body within the core's
// limit, sends what the core says to the upstream with Node's `http`/`https`, streams the answer
// back with back-pressure (the upstream is paused while the client's socket is full), and aborts
// the upstream request when the client goes away.
//
// No header is logged. The client's credentials reach the upstream through the core's header
// filter and nowhere else.

import * as http from "node:http";
import * as https from "node:https";
import type { AddressInfo } from "node:net";
import type { GatewayForward, GatewayRouted, GatewayStartInput } from "@context-condenser/protocol";
import type { CondenseEngine } from "../wasm/condense_wasm";

/** Upstream deadlines, as the LLM layer's: to connect, without a byte, and for a whole request. */
export const CONNECT_TIMEOUT_MS = 30_000;
export const IDLE_TIMEOUT_MS = 60_000;
export const DEADLINE_MS = 600_000;
/** How long after a change the state is saved: a burst of requests is one write. */
export const SAVE_DELAY_MS = 500;

const SESSION_HEADER = "x-context-condenser-session";
const TOKEN_HEADER = "x-context-condenser-token";

/** A port already taken (the server did not start). */
export class PortInUse extends Error {
  override name = "PortInUse";
  constructor(readonly port: number) {
    super(`port ${port} is in use`);
  }
}

export interface GatewayOptions extends Omit<GatewayStartInput, "state" | "port"> {
  /** The port to listen on, on 127.0.0.1 (0 picks a free one). */
  port: number;
}

export interface GatewayHooks {
  /** One line per request: method, path without its query, status, session, what went out. */
  log(line: string): void;
  /** The state to keep (JSON), a moment after each change. */
  save(state: string): void;
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

/** What never goes upstream when the core cannot be asked (it trapped): the hop-by-hop headers,
 *  the body's length, the gateway's own. */
const UNFORWARDED = [
  "host", "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
  "transfer-encoding", "upgrade", "content-length", "expect", SESSION_HEADER, TOKEN_HEADER,
];

export class GatewayServer {
  private server: http.Server | undefined;
  private readonly sockets = new Set<import("node:net").Socket>();
  private saveTimer: NodeJS.Timeout | undefined;
  private boundPort = 0;

  constructor(
    private readonly engine: CondenseEngine,
    private readonly hooks: GatewayHooks,
  ) {}

  /** The port listened on, or 0 when stopped. */
  get port(): number {
    return this.server ? this.boundPort : 0;
  }

  /** Starts the core's gateway (restoring `state` when it can) and listens on 127.0.0.1.
   *  Rejects with `PortInUse` when the port is taken; the core's refusal of an option
   *  otherwise. Returns why the saved state was not used, if it was not. */
  async start(options: GatewayOptions, state?: string): Promise<{ port: number; stateRefused?: string }> {
    await this.stop();
    const started = this.engine.gatewayStart({ ...options, port: options.port, state });
    const server = http.createServer((req, res) => this.handle(req, res));
    // Slow clients: headers within 30 s, as condense gateway.
    server.headersTimeout = 30_000;
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
      this.engine.gatewayStop();
      if ((e as NodeJS.ErrnoException).code === "EADDRINUSE") throw new PortInUse(options.port);
      throw e;
    }
    this.server = server;
    this.boundPort = (server.address() as AddressInfo).port;
    this.engine.gatewayBound(this.boundPort);
    return { port: this.boundPort, stateRefused: started.state_refused ?? undefined };
  }

  /** Closes the port (every open connection too) and saves the state. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    if (this.saveTimer) clearTimeout(this.saveTimer);
    this.saveTimer = undefined;
    this.saveNow();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
    this.engine.gatewayStop();
  }

  private saveNow(): void {
    try {
      this.hooks.save(this.engine.gatewaySave());
    } catch (e) {
      this.hooks.log(`gateway: cannot save its state: ${(e as Error).message}`);
    }
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
    const method = req.method ?? "GET";
    const url = req.url ?? "/";
    let routed: GatewayRouted;
    try {
      routed = this.engine.gatewayRoute({
        method,
        path: url,
        host: single(req.headers.host),
        origin: single(req.headers.origin),
        token: single(req.headers[TOKEN_HEADER]),
      });
    } catch (e) {
      this.answer(res, 500, JSON.stringify({ error: { message: (e as Error).message } }));
      return;
    }
    if (routed.kind === "answer") {
      this.answer(res, routed.status, routed.body);
      return;
    }
    this.readBody(req, res, routed).then(
      (body) => body && this.forward(req, res, routed as Upstream, body),
      () => res.destroy(),
    );
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
      req.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > routed.max_body_bytes) {
          this.answer(res, 413, routed.too_large);
          req.destroy();
          resolve(undefined);
          return;
        }
        chunks.push(chunk);
      });
      req.on("end", () => resolve(Buffer.concat(chunks)));
      req.on("error", reject);
    });
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse, routed: Upstream, body: Buffer): void {
    const method = req.method ?? "GET";
    const url = req.url ?? "/";
    let forward: GatewayForward;
    try {
      forward = this.engine.gatewayRequest(
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
      const kept = pairs(req.headers).filter(([name]) => !UNFORWARDED.includes(name));
      forward = { headers: kept, log: "forwarded untouched: the core failed" };
    }
    if (method === "POST") this.changed();
    if (forward.answer) {
      this.log(method, url, 200, undefined, forward.log);
      this.answer(res, 200, forward.answer);
      return;
    }
    const session = forward.session ?? undefined;
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
        this.answer(res, status, this.engine.gatewayErrorBody(routed.wire, status, message));
      });
      upstream.on("response", (answer) => {
        const status = answer.statusCode ?? 502;
        if (session && !retried && (status === 400 || status === 413)) {
          // "Prompt too long" before any byte reached the client: condensed harder, retried once.
          const chunks: Buffer[] = [];
          answer.on("data", (c: Buffer) => chunks.push(c));
          answer.on("end", () => {
            const whole = Buffer.concat(chunks);
            const retry = this.engine.gatewayTooLong(session, status, whole, body);
            if (retry !== undefined) {
              this.log(method, url, status, session, "prompt too long: condensed further, retrying once");
              forward = { ...forward, log: "condensed after the upstream's prompt too long" };
              this.changed();
              send(Buffer.from(retry, "utf8"), true);
              return;
            }
            this.log(method, url, status, session, forward.log);
            const head = this.engine.gatewayAnswer({ session: undefined, headers: pairs(answer.headers) });
            res.writeHead(status, Object.fromEntries(groupHeaders(head.headers)));
            res.end(whole);
          });
          return;
        }
        this.log(method, url, status, session, forward.log);
        this.streamBack(answer, res, session);
      });
    };
    send(sent, false);
  }

  /** The upstream request: connect, idle and whole-request deadlines; never follows redirects. */
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
    const request = client.request(target, { method, headers: outgoing, signal, timeout: CONNECT_TIMEOUT_MS });
    request.on("socket", (socket) => {
      socket.once(target.protocol === "https:" ? "secureConnect" : "connect", () => request.setTimeout(IDLE_TIMEOUT_MS));
    });
    request.on("timeout", () => request.destroy(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" })));
    const deadline = setTimeout(
      () => request.destroy(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" })),
      DEADLINE_MS,
    );
    request.on("close", () => clearTimeout(deadline));
    request.end(body);
    return request;
  }

  /** The answer, streamed to the client as it comes, its usage read on the way. */
  private streamBack(answer: http.IncomingMessage, res: http.ServerResponse, session: string | undefined): void {
    const head = this.engine.gatewayAnswer({ session, headers: pairs(answer.headers) });
    res.writeHead(answer.statusCode ?? 502, Object.fromEntries(groupHeaders(head.headers)));
    const reader = head.reader ?? undefined;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      if (reader !== undefined) {
        this.engine.gatewayAnswerEnd(reader);
        this.changed();
      }
    };
    answer.on("data", (chunk: Buffer) => {
      if (!res.write(chunk)) {
        answer.pause();
        res.once("drain", () => answer.resume());
      }
      if (reader !== undefined) this.engine.gatewayAnswerChunk(reader, chunk);
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
