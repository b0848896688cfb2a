// The extension's gateway under abuse (issue 38): the Node host of extension/src/gateway/gateway.ts
// in its worker thread (gatewayRunner.ts, gatewayWorker.ts) with the wasm package the extension
// ships, in this process as in the extension host (`--in-process`: on this thread, as before the
// worker), in front of an upstream on 127.0.0.1 that reads each request whole and answers a short
// JSON message.
// What `cargo bench -p condense-cli --bench abuse` measures for `condense gateway`, for the
// extension host:
//
//   - time per request for one Anthropic request of N short messages (5k to 80k), the first of its
//     session, and the longest stall of the event loop meanwhile (a setImmediate ticker: every
//     extension waits that long);
//   - peak memory (VmHWM, a fresh process each) for one request of each body kind and size, and the
//     resident memory after it, against the budget of 4× the body + 64 MB;
//   - the state after twelve sessions of 20 MB (an agent's session of 2,000 tool rounds): the saved
//     state's size and the process's memory;
//   - head-of-line: a small request of another session every 20 ms, alone and while 50 MB bodies
//     are sent one after another; p50 and p99.
//
// A benchmark, never a test: nothing here asserts a time.
//
//   node --expose-gc benches/gateway-host.mjs [--quick] [--in-process] [--only time|memory|state|head]
//
// It bundles the runner and the worker with esbuild into target/bench-gateway-host/ first (after
// `bash scripts/build-wasm`). RELIABILITY.md ("The gateway under abuse") holds the results.
// Memory is the process's (VmHWM, VmRSS): the worker thread's included.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stalls } from "./ticker.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const arg = (name) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const quick = process.argv.includes("--quick");
const only = arg("--only");
const run = (section) => !only || only === section;

if (typeof globalThis.gc !== "function") {
  // What the bench itself builds (bodies of 20 and 50 MB) is collected before memory is read.
  console.error("benches: run as node --expose-gc benches/gateway-host.mjs");
  process.exit(2);
}
const inProcess = process.argv.includes("--in-process");
const out = path.join(root, "target/bench-gateway-host");
const wasmDir = path.join(root, "extension/wasm");
if (!process.argv.includes("--one")) {
  // Bundled as the extension's build bundles them (extension/bundleOptions.mjs).
  const { build } = await import("esbuild");
  const { bundleOptions } = await import(path.join(root, "extension/bundleOptions.mjs"));
  for (const [entry, file] of [["gatewayRunner.ts", "runner.cjs"], ["gatewayWorker.ts", "gatewayWorker.js"]]) {
    await build({ ...bundleOptions, entryPoints: [path.join(root, "extension/src/gateway", entry)], outfile: path.join(out, file) });
  }
}
const { GatewayThread, InProcessGateway } = require(path.join(out, "runner.cjs"));
const wasm = require(path.join(wasmDir, "condense_wasm.js"));
const newEngine = () => new wasm.CondenseEngine({ fetch: () => Promise.reject(new Error("no network")), now: () => performance.now(), log: () => {} });

const OK = JSON.stringify({ id: "msg_ok", type: "message", role: "assistant", content: [{ type: "text", text: "Done." }], usage: { input_tokens: 7, output_tokens: 2 } });

/** The upstream: reads each request whole, answers OK. */
async function upstream() {
  const server = http.createServer((req, res) => {
    req.on("data", () => {});
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(OK) });
      res.end(OK);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

/** The gateway on a free port, as the extension runs it (in its thread); `stateDir` where it
 *  saves. */
async function gateway(up) {
  const stateDir = path.join(out, `state-${process.pid}-${Math.random().toString(36).slice(2)}`);
  const hooks = { log: () => {}, saved: () => {}, summaryModel: () => Promise.reject(new Error("no model")), stateDir };
  const gw = inProcess ? new InProcessGateway(newEngine, hooks) : new GatewayThread(path.join(out, "gatewayWorker.js"), wasmDir, hooks);
  const { port } = await gw.start({ port: 0, provider: "smart", thresholdPercent: 80, windows: {}, observe: false, anthropicUpstream: up.url, openaiUpstream: up.url, geminiUpstream: up.url }, undefined);
  return { gw, port, stateDir };
}

/** The bytes of the state saved in `dir`: the index and every session's file. */
function stateBytes(dir) {
  const sessions = path.join(dir, "sessions");
  const files = existsSync(sessions) ? readdirSync(sessions).map((n) => path.join(sessions, n)) : [];
  return [path.join(dir, "state.json"), ...files].reduce((sum, f) => sum + statSync(f).size, 0);
}

/** POSTs `body` for `session`; the time to the whole answer, in ms. */
function post(port, session, body) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path: "/anthropic/v1/messages", method: "POST", agent: false, headers: { "x-api-key": "k", "x-context-condenser-session": session, "content-type": "application/json", "content-length": body.length } }, (res) => {
      res.resume();
      res.on("end", () => (res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`status ${res.statusCode}`))));
    });
    req.on("error", reject);
    req.end(body);
  });
}

function messagesBody(n) {
  const messages = Array.from({ length: n }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `message ${i}` }));
  return Buffer.from(JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 8, messages }));
}

function bodyOf(kind, mb) {
  const n = mb << 20;
  const one = (text) => Buffer.from(JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 8, messages: [{ role: "user", content: text }] }));
  switch (kind) {
    case "one character repeated":
      return one("a".repeat(n));
    case "base64":
      return one(randomBytes(Math.floor((n * 3) / 4)).toString("base64"));
    case "one message of words":
      return one("the quick brown fox jumps over the lazy dog ".repeat(Math.floor(n / 44)));
    case "100k small messages": {
      const words = "word ".repeat(Math.max(0, Math.floor(n / 100_000) - 40) / 5);
      const messages = Array.from({ length: 100_000 }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `${i} ${words}` }));
      return Buffer.from(JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 8, messages }));
    }
  }
  throw new Error(kind);
}

/** An agent's session of about `mb` MB: its task, then tool rounds of 5 KB results. */
function sessionBody(mb, seed) {
  const rounds = Math.floor((mb << 20) / 5150);
  const messages = [{ role: "user", content: `Task ${seed}: fix the failing tests in crate ${seed}.` }];
  for (let r = 0; r < rounds; r++) {
    const id = `toolu_${seed}_${r}`;
    messages.push({ role: "assistant", content: [{ type: "tool_use", id, name: "Read", input: { file_path: `/repo/src/m${r}.rs` } }] });
    let lines = "";
    for (let l = 0; l < 120; l++) lines += `${String(l).padStart(6)}\tlet v_${r}_${l} = compute(${seed}, ${l});\n`;
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: id, content: lines }] });
  }
  return Buffer.from(JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 8, messages }));
}

function status() {
  const text = readFileSync("/proc/self/status", "utf8");
  const kb = (name) => Number(text.match(new RegExp(`${name}:\\s+(\\d+)`))?.[1] ?? 0) / 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}


const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const percentile = (xs, p) => [...xs].sort((a, b) => a - b)[Math.round((xs.length - 1) * p)];

if (process.argv.includes("--one")) {
  // One row of the memory table, in a fresh process: `--one KIND MB`.
  const i = process.argv.indexOf("--one");
  const [kind, mb] = [process.argv[i + 1], Number(process.argv[i + 2])];
  const up = await upstream();
  const { gw, port } = await gateway(up);
  const body = bodyOf(kind, mb);
  const idle = status();
  const { longest } = await stalls(() => post(port, "big", body));
  const peak = status().hwm;
  // The fresh instance that takes over after a large request; the old one collected.
  await new Promise((r) => setTimeout(r, 2000));
  globalThis.gc();
  const after = status().rss;
  await gw.stop();
  gw.dispose();
  await up.close();
  console.log(JSON.stringify({ size: body.length / (1 << 20), idle: idle.rss, peak, after, longest }));
  process.exit(0);
}

const up = await upstream();

if (run("time")) {
  console.log("## Time per request and the longest stall of the event loop: one request of N short messages\n");
  console.log("| messages | body | through the gateway | longest stall | directly |");
  console.log("| ---: | ---: | ---: | ---: | ---: |");
  const { gw, port } = await gateway(up);
  for (const n of quick ? [5_000, 10_000, 20_000, 40_000] : [5_000, 10_000, 20_000, 40_000, 80_000]) {
    const body = messagesBody(n);
    const through = [];
    const stall = [];
    const direct = [];
    for (let round = 0; round < 5; round++) {
      const s = await stalls(() => post(port, `n${n}-${round}`, body));
      through.push(s.value);
      stall.push(s.longest);
      direct.push(await post(Number(new URL(up.url).port), "-", body));
    }
    console.log(`| ${n} | ${(body.length / 1e6).toFixed(1)} MB | ${median(through).toFixed(0)} ms | ${median(stall).toFixed(0)} ms | ${median(direct).toFixed(0)} ms |`);
  }
  await gw.stop();
  gw.dispose();
  console.log("");
}

if (run("memory")) {
  console.log("## Peak memory of the extension host's gateway for one request (VmHWM, a fresh Node process each)\n");
  console.log("| body | size | idle | peak | resident after | × body (peak − idle) | budget (4× + 64 MB) | longest stall |");
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const kind of ["one character repeated", "base64", "one message of words", "100k small messages"]) {
    for (const mb of quick ? [10] : [10, 50]) {
      const args = ["--expose-gc", "--max-old-space-size=8192", fileURLToPath(import.meta.url), "--one", kind, String(mb), ...(inProcess ? ["--in-process"] : [])];
      const child = spawnSync(process.execPath, args, { encoding: "utf8", maxBuffer: 1 << 20 });
      const row = JSON.parse(child.stdout.trim().split("\n").at(-1) || "{}");
      if (!row.peak) {
        console.log(`| ${kind} | ${mb} MB | failed: ${child.stderr.split("\n").slice(-3).join(" ")} |`);
        continue;
      }
      console.log(`| ${kind} | ${row.size.toFixed(0)} MB | ${row.idle.toFixed(0)} MB | ${row.peak.toFixed(0)} MB | ${row.after.toFixed(0)} MB | ${((row.peak - row.idle) / row.size).toFixed(1)}× | ${(4 * row.size + 64).toFixed(0)} MB | ${row.longest.toFixed(0)} ms |`);
    }
  }
  console.log("");
}

if (run("state")) {
  const [sessions, mb] = quick ? [4, 5] : [12, 20];
  console.log(`## The state after ${sessions} sessions of ${mb} MB\n`);
  const { gw, port, stateDir } = await gateway(up);
  let sent = 0;
  let longest = 0;
  for (let i = 0; i < sessions; i++) {
    const body = sessionBody(mb, i);
    sent += body.length;
    longest = Math.max(longest, (await stalls(() => post(port, `agent-${i}`, body))).longest);
  }
  await new Promise((r) => setTimeout(r, 3000));
  globalThis.gc();
  const s = status();
  await gw.stop();
  gw.dispose();
  const saved = stateBytes(stateDir);
  console.log("| sessions | sent | state saved | resident | peak | longest stall |");
  console.log("| ---: | ---: | ---: | ---: | ---: | ---: |");
  console.log(`| ${sessions} | ${(sent / 1e6).toFixed(0)} MB | ${(saved / 1e6).toFixed(2)} MB | ${s.rss.toFixed(0)} MB | ${s.hwm.toFixed(0)} MB | ${longest.toFixed(0)} ms |`);
  console.log("");
}

if (run("head")) {
  console.log("## Head-of-line: a small request of another session, every 20 ms\n");
  const { gw, port } = await gateway(up);
  const small = messagesBody(40);
  const alone = [];
  for (let i = 0; i < 100; i++) {
    alone.push(await post(port, `small-${i % 4}`, small));
    await new Promise((r) => setTimeout(r, 20));
  }
  const bigMb = Number(arg("--big-mb") ?? (quick ? 10 : 50));
  const big = bodyOf("one message of words", bigMb);
  let busy = true;
  let sentBig = 0;
  const sender = (async () => {
    while (busy) {
      await post(port, `big-${sentBig}`, big);
      sentBig++;
    }
  })();
  await new Promise((r) => setTimeout(r, 200));
  const loaded = [];
  for (let i = 0; i < 100; i++) {
    loaded.push(await post(port, `small-${i % 4}`, small));
    await new Promise((r) => setTimeout(r, 20));
  }
  busy = false;
  await sender;
  await gw.stop();
  gw.dispose();
  console.log("| small request | p50 | p99 |");
  console.log("| --- | ---: | ---: |");
  console.log(`| alone | ${percentile(alone, 0.5).toFixed(1)} ms | ${percentile(alone, 0.99).toFixed(1)} ms |`);
  console.log(`| while ${(big.length / 1e6).toFixed(0)} MB bodies are sent (${sentBig} of them) | ${percentile(loaded, 0.5).toFixed(1)} ms | ${percentile(loaded, 0.99).toFixed(1)} ms |`);
  console.log(`| added | ${(percentile(loaded, 0.5) - percentile(alone, 0.5)).toFixed(1)} ms | ${(percentile(loaded, 0.99) - percentile(alone, 0.99)).toFixed(1)} ms |`);
}

await up.close();
