// The extension's gateway under abuse (issue 38), as `condense gateway` is tested in
// crates/condense-cli/tests/reliability.rs: a body that stops arriving, an answer that keeps
// moving past every deadline, one that stalls, the optional total cap, and a condensation on disk
// before the request carrying it leaves. Real servers on 127.0.0.1, the real core (wasm); the
// limits are shortened by the options, and the tests assert what happened, never how long it took.
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { GatewayServer, type GatewayLimits } from "../src/gateway/gateway";
import { newTestEngine } from "./core";
import { SavedStates, toolSession } from "./gatewaySessions";
import type { SavedState } from "../src/gateway/stateFile";

const KEY = "sk-ant-gateway-limits-NEVER-STORED";
const MODEL = "tiny-model";
const HEADERS = { "x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json" };

interface Upstream {
  url: string;
  /** Each request's body, and the durable saves made before it arrived. */
  received: { body: string; durableSaves: number }[];
  close(): Promise<void>;
}

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

/** An Anthropic upstream on 127.0.0.1 that answers with `events` SSE events `every` ms apart,
 *  then (unless it stalls, holding the stream open) ends the stream. */
async function upstream(opts: { events: number; every: number; stall?: boolean; durableSaves?: () => number }): Promise<Upstream> {
  const received: Upstream["received"] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ body: Buffer.concat(chunks).toString("utf8"), durableSaves: opts.durableSaves?.() ?? 0 });
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(`event: message_start\ndata: ${JSON.stringify({ type: "message_start", message: { id: "msg_1", model: MODEL, usage: { input_tokens: 10, output_tokens: 0 } } })}\n\n`);
      let sent = 0;
      const tick = () => {
        if (res.destroyed) return;
        if (sent === opts.events) {
          if (opts.stall) return;
          res.end(`event: message_stop\ndata: {"type":"message_stop"}\n\n`);
          return;
        }
        res.write(`event: content_block_delta\ndata: ${JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: `tick ${sent} ` } })}\n\n`);
        sent++;
        const t = setTimeout(tick, opts.every);
        timers.add(t);
      };
      tick();
    });
  });
  const sockets = new Set<import("node:net").Socket>();
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const up: Upstream = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: async () => {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  open.push(up);
  return up;
}

interface Started {
  port: number;
  saves: SavedStates;
  gw: GatewayServer;
}

async function gateway(up: Upstream, limits: Partial<GatewayLimits>, window = 100_000, state?: SavedState, saves = new SavedStates()): Promise<Started> {
  const gw = new GatewayServer(newTestEngine, { log: () => {}, save: saves.save }, limits);
  const { port } = await gw.start({ port: 0, provider: "smart", thresholdPercent: 80, windows: { [MODEL]: window }, observe: false, anthropicUpstream: up.url, openaiUpstream: up.url, geminiUpstream: up.url }, state);
  open.push({ close: () => gw.stop() });
  return { port, saves, gw };
}

/** What the client receives for one request, and whether the stream ended cleanly. */
function send(port: number, body: string): Promise<{ status: number; text: string; whole: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path: "/anthropic/v1/messages", method: "POST", headers: { ...HEADERS, "content-length": Buffer.byteLength(body) } }, (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text, whole: true }));
      res.on("error", () => resolve({ status: res.statusCode ?? 0, text, whole: false }));
      res.on("aborted", () => resolve({ status: res.statusCode ?? 0, text, whole: false }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

const ask = (text: string) => JSON.stringify({ model: MODEL, max_tokens: 64, stream: true, messages: [{ role: "user", content: text }] });

describe("the extension's gateway under abuse", () => {
  test("an answer that keeps moving is never cut: 30 events over 3 s pass a 1 s idle limit and a 1 s wait for headers", async () => {
    const up = await upstream({ events: 30, every: 100 });
    const { port } = await gateway(up, { streamIdleMs: 1000, headersMs: 1000 });
    const r = await send(port, ask("count"));
    expect(r.status).toBe(200);
    expect(r.whole).toBe(true);
    expect(r.text).toContain("tick 29 ");
    expect(r.text).toContain("message_stop");
  });

  test("an answer that stalls is ended after the idle limit, short", async () => {
    const up = await upstream({ events: 3, every: 50, stall: true });
    const { port } = await gateway(up, { streamIdleMs: 500 });
    const r = await send(port, ask("stall"));
    expect(r.status).toBe(200);
    expect(r.text).toContain("tick 2 ");
    expect(r.text).not.toContain("message_stop");
  });

  test("the total cap, when set, cuts even a moving answer", async () => {
    const up = await upstream({ events: 200, every: 50 });
    const { port } = await gateway(up, { streamMaxMs: 1000 });
    const r = await send(port, ask("long"));
    expect(r.status).toBe(200);
    expect(r.text).toContain("tick 1 ");
    expect(r.text).not.toContain("message_stop");
  });

  test("a body that stops arriving is answered 408 after the client idle time, and nothing goes upstream", async () => {
    const up = await upstream({ events: 1, every: 10 });
    const { port } = await gateway(up, { clientIdleMs: 300 });
    const outcomes = await Promise.all(
      [0, 1, 2, 3].map(
        () =>
          new Promise<{ status: number; body: string }>((resolve, reject) => {
            const req = http.request({ host: "127.0.0.1", port, path: "/anthropic/v1/messages", method: "POST", headers: { ...HEADERS, "content-length": "100000" } }, (res) => {
              let body = "";
              res.on("data", (c) => (body += c));
              res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
            });
            req.on("error", reject);
            // Headers and a few bytes, then nothing more.
            req.write('{"model":"tiny-model",');
          }),
      ),
    );
    for (const o of outcomes) {
      expect(o.status).toBe(408);
      expect(o.body).toContain("stopped arriving");
    }
    expect(up.received).toHaveLength(0);
  });

  test("a condensation is saved, durably, before the request carrying it leaves; a gateway started from that save replays its bytes", async () => {
    const saves = new SavedStates();
    const up = await upstream({ events: 1, every: 1, durableSaves: () => saves.all.filter((s) => s.durable).length });
    const { port } = await gateway(up, {}, 6000, undefined, saves);
    const bodies = toolSession(24, MODEL);
    const MARK = "[Context Condenser";
    let first = -1;
    for (const [i, body] of bodies.entries()) {
      expect((await send(port, body)).status).toBe(200);
      if (up.received[i].body.includes(MARK)) {
        first = i;
        break;
      }
    }
    expect(first, "a request was condensed").toBeGreaterThan(0);
    // Before that request reached the upstream, the state holding its condensation was on disk.
    expect(up.received[first].durableSaves).toBeGreaterThan(0);
    expect(up.received.slice(0, first).every((r) => r.durableSaves === 0)).toBe(true);
    const durable = saves.all.filter((s) => s.durable).at(-1)!.state;
    // A gateway killed right after that request left, started again from that save alone: the
    // request and the next go out as the first gateway sent (and would send) them.
    const after = await upstream({ events: 1, every: 1 });
    const again = await gateway(after, {}, 6000, durable);
    for (const body of bodies.slice(first, first + 2)) expect((await send(again.port, body)).status).toBe(200);
    expect((await send(port, bodies[first + 1])).status).toBe(200);
    expect(after.received.map((r) => r.body)).toEqual([up.received[first].body, up.received[first + 1].body]);
    expect(durable).not.toContain(KEY);
  });
});
