// Recall through the gateway with the real clients (issue 36), fully offline: when `condense
// gateway` condenses a session, the message that replaces the hidden range names a file holding
// those messages ("The hidden messages are in PATH; read that file with your file tool if you need
// them."), and the agent reads it with its own tool. No tool is added to the client's request and
// no answer is held back: the file is on disk before the request naming it leaves.
//
// The fixture server's scripted agent `script-agent-6-recall` plays the model: the session of
// gateway.test.mjs (a heavy read of big.txt's first 500 lines, then grep/wc and more reads, a
// window small enough that the second request after the heavy read is condensed), and once a
// request carries the recall line, one read of the named file's first 40 lines with the client's
// own tool — Claude Code's `Read`, Codex's shell (`sed -n`) — before its next round. Each test
// asserts on the client's next request: its tool result holds lines of big.txt that the request
// carrying the condensation no longer held (they were only in the hidden messages), or, where the
// client refuses, exactly why.
//
// Each client in its default non-interactive mode:
//  - Claude Code, `claude -p` with no permission flags: its Read refuses a path outside the
//    working directory — "Claude requested permissions to read from PATH, but you haven't granted
//    it yet." (the permission prompt `-p` cannot show). With the one allow rule the gateway's setup
//    line adds, `--allowedTools "Read(//STATE/recall/**)"` (reading that folder, nothing else), it
//    reads the file and the original comes back.
//  - Codex, `codex exec` with its own approval policy and sandbox (read-only: it reads anywhere),
//    reads it with `sed -n` and the original comes back.
//
// Run: npm run test:agents, or node --test tests/agents/recall.test.mjs (CONDENSE_AGENTS_BIN and
// CONDENSE_BIN as in gateway.test.mjs).
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { startFixtureLlm } from "../js/servers.mjs";
import { agentsBin, condenseBin, closedPort, workspace, runClaude, runCodex, startGateway, explain } from "./clients.mjs";
import { filesUnder, statField } from "./requests.mjs";

const ROUNDS = 6;
const MODEL = `script-agent-${ROUNDS}-recall`;
const KEY = `sk-cc-recall-leak-check-${randomBytes(8).toString("hex")}`;
const HEAVY_LINES = 500;
const FILE_LINES = 510;
// The windows of gateway.test.mjs (its comment has the measurements): the request after the heavy
// read crosses 80% and the next one is condensed. The recall read adds some 40 lines of text.
const WINDOWS = { claude: 30_000, codex: 14_000 };
const LINE = /The hidden messages are in (.+?); read that file with your file tool if you need them\./;

let agents;
let condense;
let deadProxy;
const scratch = [];

before(async () => {
  agents = agentsBin();
  condense = condenseBin();
  deadProxy = `http://127.0.0.1:${await closedPort()}`;
});

after(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** The text of each tool result a request carries, in order, whatever its wire. */
function toolResults(body) {
  const text = (c) => (typeof c === "string" ? c : Array.isArray(c) ? c.map(text).join("\n") : c && typeof c === "object" ? (typeof c.text === "string" ? c.text : text(c.content ?? c.output ?? "")) : "");
  if (Array.isArray(body.input)) return body.input.filter((i) => String(i.type).endsWith("_output")).map((i) => text(i.output));
  const out = [];
  for (const m of body.messages ?? []) {
    if (m.role === "user" && Array.isArray(m.content)) for (const c of m.content) if (c.type === "tool_result") out.push(text(c.content));
  }
  return out;
}

/** Every string in a JSON value. */
function strings(value) {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === "object") return Object.values(value).flatMap(strings);
  return [];
}

const CLIENTS = {
  claude: { run: runClaude, base: (gw) => `${gw}/anthropic`, wirePath: "/v1/messages" },
  codex: { run: runCodex, base: (gw) => `${gw}/openai/v1`, wirePath: "/v1/responses" },
};

/** One client's session through a fresh gateway and fixture server; `options(recallDir)` gives
 *  the client's extra options. */
async function session(name, tag, options) {
  const c = CLIENTS[name];
  const w = workspace(scratch, `recall-${name}-${tag}`, { lines: FILE_LINES, lineWords: (i) => (i <= HEAVY_LINES ? 16 : 0) });
  const prompt = `Read the file ${w.file} and tell me its marker.`;
  const stateDir = mkdtempSync(path.join(os.tmpdir(), `gw-recall-${name}-`));
  scratch.push(stateDir);
  const recallDir = path.join(stateDir, "recall");
  const llm = await startFixtureLlm({ apiKey: KEY });
  let gw;
  try {
    gw = await startGateway(condense, ["--anthropic-upstream", llm.origin, "--openai-upstream", llm.origin, "--state-dir", stateDir, "--window", `${MODEL}=${WINDOWS[name]}`]);
    const { result, answer } = await c.run({ bin: agents, deadProxy, w, baseUrl: c.base(gw.origin), key: KEY, model: MODEL, prompt, ...options(recallDir) });
    const stats = await gw.stats();
    const all = await llm.requests();
    const turns = [];
    for (const [index, r] of all.entries()) {
      if (r.path !== c.wirePath || r.body?.model !== MODEL) continue;
      const raw = Buffer.from(await (await fetch(`${llm.origin}/requests/${index}/raw`)).arrayBuffer()).toString("utf8");
      turns.push({ raw, body: r.body });
    }
    const output = await gw.stop();
    return { name, w, stateDir, recallDir, result, answer, stats, turns, output };
  } finally {
    if (gw) await gw.stop();
    await llm.stop();
  }
}

/**
 * What the session shows of recall: the request that first named a recall file and the path, the
 * lines of big.txt that request no longer held though an earlier one did (only in the hidden
 * messages), and the tool result of the client's read of the file (the first tool result after
 * that request that is not in it: the scripted agent reads the file right away).
 */
function recallOf(s) {
  const at = s.turns.findIndex((t) => LINE.test(t.raw));
  assert.ok(at > 0, `no forwarded request names a recall file (${s.turns.length} requests)`);
  const named = LINE.exec(strings(s.turns[at].body).join("\n"))[1];
  const file = readFileSync(s.w.file, "utf8").split("\n");
  const earlier = s.turns.slice(0, at).map((t) => t.raw).join("\n");
  const hidden = file.slice(0, HEAVY_LINES).filter((l) => l.startsWith("line ") && earlier.includes(l) && !s.turns[at].raw.includes(l));
  const before = new Set(toolResults(s.turns[at].body));
  const read = s.turns.slice(at + 1).flatMap((t) => toolResults(t.body)).find((r) => !before.has(r));
  return { at, path: named, hidden, read };
}

function describeRun(t, s, r) {
  t.diagnostic(`${s.name}: exit ${s.result.code}; ${s.turns.length} requests; recall line first in request ${r.at}: ${r.path}`);
  t.diagnostic(`lines of big.txt only in the hidden messages: ${r.hidden.length}; the read's result begins: ${JSON.stringify((r.read ?? "").slice(0, 160))}`);
  t.diagnostic(`/stats recall: files ${statField(s.stats, "recall_files")}, bytes ${statField(s.stats, "recall_bytes")}`);
}

/** What holds whichever client: the file named is under the state folder, 0600, holds the hidden
 *  lines and no key; /stats counts it. */
function checkFile(s, r) {
  assert.equal(s.result.code, 0, explain(s.result));
  assert.match(s.answer, new RegExp(`Scripted agent done after ${ROUNDS} tool rounds`), explain(s.result));
  assert.ok(r.path.startsWith(s.recallDir + path.sep), `${r.path} is under ${s.recallDir}`);
  const text = readFileSync(r.path, "utf8");
  if (process.platform !== "win32") assert.equal(statSync(r.path).mode & 0o777, 0o600);
  // Claude Code's Read returns the 500 lines; Codex keeps some 5 K tokens of a command's output.
  assert.ok(r.hidden.length >= 50, `${r.hidden.length} lines of the heavy read were hidden`);
  assert.ok(r.hidden.every((l) => text.includes(l)), "the file holds every hidden line");
  for (const f of filesUnder(s.stateDir)) assert.ok(!readFileSync(f).includes(KEY), `${f} holds the API key`);
  assert.ok(!s.output.stdout.includes(KEY) && !s.output.stderr.includes(KEY), "the gateway printed the API key");
  assert.ok(statField(s.stats, "recall_files") >= 1 && statField(s.stats, "recall_bytes") >= text.length, JSON.stringify(s.stats.totals));
}

/** The client read the file: its next request carries hidden lines back. */
function checkReadBack(r) {
  assert.ok(r.read, "no tool result after the request naming the file");
  assert.match(r.read, /of this conversation, hidden by Context Condenser/, "the read is of the recall file");
  const back = r.hidden.filter((l) => r.read.includes(l));
  assert.ok(back.length >= 10, `the read brought back ${back.length} lines only the hidden messages held`);
}

describe("Claude Code (claude -p) reads a recall file through condense gateway", () => {
  let bare;
  let allowed;
  before(async () => {
    bare = await session("claude", "default", () => ({ allowedTools: [] }));
    allowed = await session("claude", "rule", (dir) => ({ allowedTools: [`Read(/${dir}/**)`] }));
  });

  test("in its default permission mode its Read refuses the path, outside the working directory: the permission is named", (t) => {
    const r = recallOf(bare);
    describeRun(t, bare, r);
    checkFile(bare, r);
    const refused = `Claude requested permissions to read from ${r.path}, but you haven't granted it yet.`;
    assert.equal(r.read?.trim(), refused);
    assert.ok(r.hidden.every((l) => !r.read.includes(l)), "nothing of the file came back");
    t.diagnostic(`why: ${refused} (claude -p cannot ask; an allow rule for the folder, or --add-dir, grants it)`);
  });

  test("with the gateway's setup line, an allow rule for the recall folder alone, the original comes back", (t) => {
    const r = recallOf(allowed);
    describeRun(t, allowed, r);
    checkFile(allowed, r);
    checkReadBack(r);
    assert.ok(allowed.output.stdout.includes(`--allowedTools "Read(/${allowed.recallDir}/**)"`), "the setup line the gateway printed is the rule used");
  });
});

describe("Codex (codex exec, its default sandbox) reads a recall file through condense gateway", () => {
  let s;
  before(async () => {
    s = await session("codex", "default", () => ({ defaults: true }));
  });

  test("it reads the file with its shell and the original comes back", (t) => {
    const r = recallOf(s);
    describeRun(t, s, r);
    checkFile(s, r);
    checkReadBack(r);
  });
});
