// The real agent CLIs through `condense gateway` (issue 27), fully offline: Claude Code
// (Anthropic Messages, ANTHROPIC_BASE_URL=<gw>/anthropic), Codex (OpenAI Responses, provider
// base_url=<gw>/openai/v1), Cline (OpenAI Chat Completions, -b <gw>/openai/v1), Qwen Code
// (OpenAI Chat Completions, OPENAI_BASE_URL=<gw>/openai/v1), OpenCode (OpenAI Chat
// Completions, an openai-compatible provider with baseURL <gw>/openai/v1) and Gemini CLI (the
// Gemini API, GOOGLE_GEMINI_BASE_URL=<gw>/gemini, its key as x-goog-api-key) each run a
// scripted task of several tool rounds against the fixture server's scripted agent
// (tests/servers/fixture_llm.py), with the gateway in between, given a window small enough that
// the session crosses the default 80% threshold after its first tool rounds. Aider
// (--openai-api-base <gw>/openai/v1) has no tool loop: the user runs the same commands with its
// `/run` and asks on after each (clients.mjs runAider), and the scripted model, offered no tools,
// answers each question at once.
//
// Two groups of assertions per client, kept apart on purpose:
//  - "forwarding": what holds whether or not the gateway condenses — the client exits 0 with the
//    final answer naming the file's marker; between condensations every forwarded request extends
//    the previous one (the upstream's prompt cache holds); the user's task statement is in every
//    forwarded request; the API key is nowhere in the gateway's state or output; and in observe
//    mode the gateway changed nothing the upstream can see.
//  - "condensation": the gateway condensed (its /stats counts a condensation, a forwarded request
//    carries the gateway's marker and is smaller than what the client sent), and in observe mode
//    it reports what it would have done without doing it.
//
// The session: big.txt has 510 lines; the first 500 are heavy (~54 KB, direct.test.mjs's lines),
// the last 10 light ("line 00501: "). The scripted agent (model script-agent-6) reads the file in
// slices of 500 lines on even rounds (slice 0 heavy, slice 1 the 10 light lines, slice 2 past the
// end: an empty or "file is shorter" result) and greps for the marker and runs wc on odd rounds;
// it counts the tool results in the request it receives. So the request after the first read is
// far over the threshold but has nothing to condense yet (the current turn — the model's last
// message and what follows — is never condensed); the next one (the grep's result added) is
// condensed: the first read goes into the gateway's ledger. The scripted agent then sees one tool
// result fewer than the client holds and counts on from there (one round more than without the
// gateway: 8 requests instead of 7), and its final request fits under the threshold with ROUNDS
// tool results. Each grep result holds the marker line, so the final answer names the marker
// whatever was condensed.
//
// Run: npm run test:agents (all of tests/agents), or node --test tests/agents/gateway.test.mjs.
// The gateway binary is CONDENSE_BIN, else `cargo build -p condense-cli` (CARGO_TARGET_DIR
// honoured) run by the test; the agent CLIs come from scripts/setup-agents (CONDENSE_AGENTS_BIN).
// CONDENSE_GATEWAY_DUMP=DIR writes each session's forwarded requests and /stats there.
import { describe, test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync, readFileSync, rmSync, statSync } from "node:fs";
import { randomBytes } from "node:crypto";
import os from "node:os";
import path from "node:path";
import { startFixtureLlm } from "../js/servers.mjs";
import { agentsBin, condenseBin, closedPort, workspace, runClaude, runCodex, runCline, runQwen, runOpenCode, runGemini, runAider, startGateway, explain } from "./clients.mjs";
import { GATEWAY_MARKER, rawArray, markerItems, checkExtends, checkTaskEverywhere, withoutCacheControl, totalsOf, statField, observing, filesUnder } from "./requests.mjs";

const ROUNDS = 6;
const MODEL = `script-agent-${ROUNDS}`;
// A key no other test uses, so finding it anywhere means it leaked from this run.
const KEY = `sk-cc-gateway-leak-check-${randomBytes(8).toString("hex")}`;
const HEAVY_LINES = 500; // the first slice the scripted agent reads
const FILE_LINES = 510; // slice 1 (lines 501-1000) holds 10 light lines, slice 2 is past the end

// The window of MODEL given to the gateway, per client, in tokens (o200k: the core's count for a
// model it does not know). Each client's requests here, as the core counts them (measured by
// feeding this test's recorded requests to condense-core's `Gateway`, branch gateway-decide):
//                     first request   after the heavy read   after the condensation, to the end
//   Claude Code            10.9 K            38.4 K                 11.1 K – 11.6 K
//   Codex                   7.9 K            13.0 K                  8.1 K –  8.7 K
//   Cline                   4.5 K             8.6 K                  4.7 K –  5.3 K
//   Qwen Code              ~19 K             ~29 K                 ~19.5 K – 20.5 K
//   OpenCode               ~8 K              ~33 K                  ~8.5 K –  9.5 K
//   Gemini CLI            ~16.7 K            ~35.7 K               ~17.1 K – 18.2 K
//   Aider                  ~0.3 K            ~27 K                  ~0.9 K –  1.9 K
// (Qwen Code and OpenCode estimated from their observe runs' totals and bytes: 191.9 K tokens
// over 7 requests of 76–105 KB, and 208.6 K over 7 of 31–88 KB besides OpenCode's title request;
// Gemini CLI from its observe run: 235.2 K tokens over 7 requests of 48.5–107.6 KB, 0.34 a byte;
// Aider from its runs: 164.9 K tokens over 7 requests of 0.5–57.5 KB, 0.49 a byte, and forwarded
// 1.8–3.9 KB after the condensation. Aider's request after the heavy read is the one condensed:
// its `/run` output is a user message it acknowledges with an "Ok." of its own, so the read is
// already behind the model's last message.)
// (The heavy read is 27 K tokens in Claude Code; Codex truncates a command's output to ~5 K
// tokens and Cline its file reads to ~4 K, so theirs are smaller; Qwen Code keeps ~25 KB of it,
// OpenCode all 54 KB.) The window puts 80% of it
// between the two: the request after the heavy read crosses it (and the next is condensed), and
// every request after the condensation stays under it — else the gateway would condense again,
// the scripted agent would see fewer results still, and re-read. Margins: Claude Code 14 K / 12 K,
// Codex 1.8 K / 2.5 K, Cline 1.4 K / 1.9 K tokens.
const WINDOWS = {
  claude: 30_000, // 80% = 24 000
  codex: 14_000, // 80% = 11 200
  cline: 9_000, // 80% = 7 200
  qwen: 30_000, // 80% = 24 000
  opencode: 25_000, // 80% = 20 000
  gemini: 30_000, // 80% = 24 000
  aider: 20_000, // 80% = 16 000
};

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

// ---- reading what the fixture server received ----------------------------------------------

// How the core asks for a summary (--provider native): such a request, to the same path with the
// same model, is the gateway's own, not one of the client's turns.
const SUMMARY_ASK = "Write a detailed summary of the conversation above";
const isSummaryAsk = (r) => !r.body?.tools && JSON.stringify(r.body ?? {}).includes(SUMMARY_ASK);

/** The requests of the session the fixture received, in order: path `wirePath`, model MODEL,
 *  the gateway's summary requests left out; each with its raw body and the raw elements of its
 *  message array. */
async function sessionRequests(llm, wirePath, key, isTurn = () => true) {
  const all = await llm.requests();
  const out = [];
  for (const [index, r] of all.entries()) {
    // The Gemini API names the model in the path, not the body.
    const model = r.body?.model ?? /\/models\/([^/:]+):/.exec(r.path)?.[1];
    if (r.path !== wirePath || model !== MODEL || isSummaryAsk(r) || !isTurn(r)) continue;
    const raw = Buffer.from(await (await fetch(`${llm.origin}/requests/${index}/raw`)).arrayBuffer()).toString("utf8");
    const items = rawArray(raw, key);
    assert.ok(items, `request ${index} has a \`${key}\` array`);
    out.push({ index, raw, bytes: r.bytes, items, headers: r.headers });
  }
  return { all, turns: out };
}

// ---- the gateway's /stats, whichever shape it has -------------------------------------------

// ---- one client's session through the gateway -------------------------------------------------

const CLIENTS = {
  claude: { title: "Claude Code (claude -p, Anthropic Messages)", run: runClaude, base: (gw) => `${gw}/anthropic`, wirePath: "/v1/messages", key: "messages", exact: false },
  codex: { title: "Codex (codex exec, OpenAI Responses)", run: runCodex, base: (gw) => `${gw}/openai/v1`, wirePath: "/v1/responses", key: "input", exact: true },
  cline: { title: "Cline (cline --json, OpenAI Chat Completions)", run: runCline, base: (gw) => `${gw}/openai/v1`, wirePath: "/v1/chat/completions", key: "messages", exact: true },
  qwen: { title: "Qwen Code (qwen --yolo, OpenAI Chat Completions)", run: runQwen, base: (gw) => `${gw}/openai/v1`, wirePath: "/v1/chat/completions", key: "messages", exact: true },
  // OpenCode first asks the same model for the session's title (no tools, a conversation of its
  // own, which the gateway keeps as a session of its own): its turns are the requests with tools.
  opencode: {
    title: "OpenCode (opencode run, OpenAI Chat Completions)",
    run: runOpenCode,
    base: (gw) => `${gw}/openai/v1`,
    wirePath: "/v1/chat/completions",
    key: "messages",
    exact: true,
    isTurn: (r) => Array.isArray(r.body?.tools) && r.body.tools.length > 0,
  },
  gemini: {
    title: "Gemini CLI (gemini -p, the Gemini API)",
    run: runGemini,
    base: (gw) => `${gw}/gemini`,
    wirePath: `/v1beta/models/${MODEL}:streamGenerateContent`,
    key: "contents",
    // Gemini CLI sends its history as it was: the contents extend byte for byte.
    exact: true,
  },
  aider: {
    title: "Aider (aider --edit-format ask, OpenAI Chat Completions)",
    run: runAider,
    base: (gw) => `${gw}/openai/v1`,
    wirePath: "/v1/chat/completions",
    key: "messages",
    exact: true,
    // The scripted model, offered no tools, answers every question at once (after 0 rounds):
    // the task's question and the one after each of the ROUNDS commands.
    answer: () => new RegExp(Array(ROUNDS + 1).fill("Scripted agent done after 0 tool rounds").join("[^]*")),
    // Aider opens every request with an exchange of its own ("I am not sharing the full contents
    // of any files with you yet." and "Ok."), which the gateway takes for the model's first
    // answer, so the task ends before the user's first message: it is condensed with the rest,
    // its words kept verbatim in the ledger (the user's own words).
    taskInLedger: true,
  },
};

/** Runs `name`'s client through a fresh gateway (observe mode or not, with more flags) and fixture server. */
async function session(name, { observe, flags = [], tag = observe ? "-observe" : "", runWith = {} }) {
  const c = CLIENTS[name];
  const w = workspace(scratch, `gw-${name}${tag}`, { lines: FILE_LINES, lineWords: (i) => (i <= HEAVY_LINES ? 16 : 0) });
  const prompt = `Read the file ${w.file} and tell me its marker.`;
  const stateDir = mkdtempSync(path.join(os.tmpdir(), `gw-state-${name}-`));
  scratch.push(stateDir);
  const llm = await startFixtureLlm({ apiKey: KEY });
  const started = Date.now();
  let gw;
  try {
    gw = await startGateway(condense, [
      "--anthropic-upstream",
      llm.origin,
      "--openai-upstream",
      llm.origin,
      "--gemini-upstream",
      llm.origin,
      "--state-dir",
      stateDir,
      "--window",
      `${MODEL}=${WINDOWS[name]}`,
      ...(observe ? ["--observe"] : []),
      ...flags,
    ]);
    const { result, answer } = await c.run({ bin: agents, deadProxy, w, baseUrl: c.base(gw.origin), key: KEY, model: MODEL, prompt, ...runWith });
    const stats = await gw.stats();
    const { all, turns } = await sessionRequests(llm, c.wirePath, c.key, c.isTurn);
    const output = await gw.stop();
    if (process.env.CONDENSE_GATEWAY_DUMP) {
      // Debugging: every forwarded request of the session, as the upstream received it.
      const dir = path.join(process.env.CONDENSE_GATEWAY_DUMP, `${name}${tag}`);
      mkdirSync(dir, { recursive: true });
      for (const [i, r] of turns.entries()) writeFileSync(path.join(dir, `${i}.json`), r.raw);
      writeFileSync(path.join(dir, "stats.json"), JSON.stringify(stats, null, 2));
      writeFileSync(path.join(dir, "gateway.log"), `${output.stdout}\n${output.stderr}`);
    }
    return { name, c, w, prompt, stateDir, result, answer, stats, all, turns, output, ms: Date.now() - started };
  } finally {
    if (gw) await gw.stop();
    await llm.stop();
  }
}

/** For a client whose task statement the gateway may condense (`taskInLedger`): every forwarded
 *  request carries the statement's words, in the message the client first sent or in the
 *  gateway's condensation. */
function checkTaskWords(turns, prompt) {
  checkTaskEverywhere(turns.slice(0, 1), prompt);
  const quoted = JSON.stringify(prompt).slice(1, -1);
  const sent = turns[0].items.find((m) => m.includes(quoted));
  for (const [i, r] of turns.entries()) {
    const ok = r.items.some((m) => withoutCacheControl(m) === withoutCacheControl(sent)) || markerItems(r).some((m) => m.includes(quoted));
    assert.ok(ok, `request ${i} (fixture #${r.index}) carries the task's words neither as the client sent them nor in a condensation`);
  }
}

/** What the client's final answer must match: the scripted agent's, naming the file's marker,
 *  unless the client's entry says otherwise (`answer`). */
const finalAnswer = (s) => s.c.answer?.(s) ?? new RegExp(`Scripted agent done after ${ROUNDS} tool rounds.*Markers seen: ${s.w.marker}`);

function describeRun(t, s) {
  t.diagnostic(
    `${s.name}${observing(s.stats) ? " (observe)" : ""}: ${s.ms} ms (client ${s.result.ms} ms); ${s.turns.length} requests to ${s.c.wirePath}; ` +
      `bytes ${s.turns.map((r) => r.bytes).join(", ")}; messages ${s.turns.map((r) => r.items.length).join(", ")}; ` +
      `gateway markers ${s.turns.map((r) => markerItems(r).length).join(", ")}`,
  );
  const others = s.all.filter((r) => !s.turns.some((x) => x.index === s.all.indexOf(r)));
  if (others.length) t.diagnostic(`other requests: ${others.map((r) => `${r.url} ${r.body?.model ?? ""} (${r.bytes} B)`).join(", ")}`);
  t.diagnostic(`/stats totals: ${JSON.stringify(totalsOf(s.stats))}`);
}

for (const name of Object.keys(CLIENTS)) {
  const c = CLIENTS[name];
  describe(`${c.title} through condense gateway`, () => {
    let s;
    before(async () => {
      s = await session(name, { observe: false });
    });

    describe("forwarding", () => {
      test("the client exits 0 with the final answer naming the file's marker", (t) => {
        describeRun(t, s);
        assert.equal(s.result.code, 0, explain(s.result));
        assert.match(s.answer, finalAnswer(s), explain(s.result));
        assert.ok(s.turns.length >= ROUNDS + 1, `expected ≥ ${ROUNDS + 1} requests, saw ${s.turns.length}`);
      });

      test(`between condensations each forwarded request extends the previous one (${c.exact ? "byte for byte" : "message by message, cache_control aside"})`, (t) => {
        // Claude Code puts its one cache_control breakpoint on the last message of every request,
        // so the message that carried it in the previous request differs by that key alone; the
        // comparison drops cache_control keys (the gateway passes them through untouched either
        // way). Codex's input array extends exactly: its elements are compared as raw bytes.
        const starts = checkExtends(s.turns, { exact: c.exact });
        t.diagnostic(`stretches between condensations start at requests ${starts.join(", ")}`);
        // Whatever the comparison, report how far the raw bytes extend too.
        const rawBreaks = [];
        for (let i = 1; i < s.turns.length; i++) {
          const prev = s.turns[i - 1].items;
          const j = prev.findIndex((m, k) => m !== s.turns[i].items[k]);
          if (j >= 0) rawBreaks.push(`${i}@${j}`);
        }
        t.diagnostic(`requests whose raw message bytes do not extend the previous one's (request@message): ${rawBreaks.join(", ") || "none"}`);
      });

      test(`the user's task statement is in every forwarded request${c.taskInLedger ? " (as sent, or verbatim in the gateway's ledger)" : ""}`, () => {
        if (c.taskInLedger) checkTaskWords(s.turns, s.prompt);
        else checkTaskEverywhere(s.turns, s.prompt);
      });

      test("the API key is in neither the gateway's state directory nor its output", () => {
        const files = filesUnder(s.stateDir);
        assert.ok(files.length > 0, "the gateway wrote its state");
        for (const f of files) {
          assert.ok(!readFileSync(f).includes(KEY), `${f} holds the API key`);
          if (process.platform !== "win32") assert.equal(statSync(f).mode & 0o077, 0, `${f} is private`);
        }
        assert.ok(!s.output.stdout.includes(KEY) && !s.output.stderr.includes(KEY), "the gateway printed the API key");
        // The key did pass through: the fixture server only answers requests that carry it.
        const auth = s.turns[0].headers["x-api-key"] ?? s.turns[0].headers["x-goog-api-key"] ?? s.turns[0].headers.authorization;
        assert.ok(auth?.includes(KEY), "the client's key reached the upstream");
      });
    });

    describe("condensation", () => {
      const cond = (title, fn) => test(title, async (t) => fn(t));

      cond("the gateway condensed the session at least once (/stats)", (t) => {
        const n = statField(s.stats, "condensations");
        t.diagnostic(`condensations: ${n}; replayed: ${statField(s.stats, "replayed")}; note: ${JSON.stringify(Object.values(s.stats.sessions ?? {}).map((x) => x.note).filter(Boolean))}`);
        assert.ok(n >= 1, `/stats counts ${n} condensations`);
      });

      cond("a forwarded request carries the gateway's condensation in place of older messages, then every later one replays it byte for byte", () => {
        const first = s.turns.findIndex((r) => markerItems(r).length > 0);
        assert.ok(first > 0, "no forwarded request carries the gateway's marker");
        const marker = markerItems(s.turns[first]);
        // The forwarded request holds fewer messages than the client's previous request plus
        // its new turn: some were replaced.
        assert.ok(s.turns[first].items.length < s.turns[first - 1].items.length + 2, "the condensed request is not shorter than the client's");
        const stretches = checkExtends(s.turns, { exact: c.exact }).length - 1;
        assert.ok(stretches >= 1 && stretches <= statField(s.stats, "condensations"), `${stretches} condensations seen in the forwarded requests`);
        for (const r of s.turns.slice(first)) {
          const now = markerItems(r);
          // Until a later condensation swallows it, the first one is replayed as it was.
          if (now.length === marker.length) assert.deepEqual(now, marker);
        }
      });

      cond("the gateway forwarded fewer tokens than the client sent", () => {
        const client = statField(s.stats, "tokens_client") ?? statField(s.stats, "client_bytes");
        const forwarded = statField(s.stats, "tokens_forwarded") ?? statField(s.stats, "forwarded_bytes");
        assert.ok(forwarded < client, `forwarded ${forwarded} of ${client}`);
      });
    });
  });

  describe(`${c.title} through condense gateway --observe`, () => {
    let s;
    before(async () => {
      s = await session(name, { observe: true });
    });

    describe("forwarding", () => {
      test("the client exits 0 with the final answer naming the file's marker", (t) => {
        describeRun(t, s);
        assert.equal(s.result.code, 0, explain(s.result));
        assert.match(s.answer, finalAnswer(s), explain(s.result));
        assert.equal(s.turns.length, ROUNDS + 1, "one request per round and the answer: nothing condensed, nothing redone");
      });

      test("the upstream saw what the client sent: no gateway marker, each request extends the previous, one client turn at a time", () => {
        for (const [i, r] of s.turns.entries()) assert.ok(!r.raw.includes(GATEWAY_MARKER), `request ${i} carries the gateway's marker`);
        assert.deepEqual(checkExtends(s.turns, { exact: c.exact }), [0], "no condensation in observe mode");
        const steps = s.turns.slice(1).map((r, i) => r.items.length - s.turns[i].items.length);
        assert.ok(steps[0] > 0 && steps.every((d) => d === steps[0]), `each request adds the client's turn (the same number of messages): ${steps.join(", ")}`);
        checkTaskEverywhere(s.turns, s.prompt);
      });

      test("/stats: no request replayed or condensed; what was forwarded is what the client sent", (t) => {
        const totals = totalsOf(s.stats);
        t.diagnostic(`totals: ${JSON.stringify(totals)}`);
        assert.ok(observing(s.stats), "the gateway says it observes");
        // Today's host counts `replayed` (requests it sent rewritten); none in observe mode.
        assert.equal(statField(s.stats, "replayed") ?? 0, 0, "no request replayed");
        // What went out is what came in, in bytes (today's host) and tokens (the core's books).
        let compared = 0;
        for (const [client, forwarded] of [
          ["client_bytes", "forwarded_bytes"],
          ["tokens_client", "tokens_forwarded"],
        ]) {
          const [a, b] = [statField(s.stats, client), statField(s.stats, forwarded)];
          if (a === undefined) continue;
          compared++;
          assert.equal(b, a, `${forwarded} = ${client}`);
        }
        assert.ok(compared > 0, "/stats compares what the client sent with what was forwarded");
        const requests = statField(s.stats, "requests");
        assert.ok(requests >= s.turns.length, `/stats counts ${requests} requests`);
      });

      test("the API key is in neither the gateway's state directory nor its output", () => {
        for (const f of filesUnder(s.stateDir)) assert.ok(!readFileSync(f).includes(KEY), `${f} holds the API key`);
        assert.ok(!s.output.stdout.includes(KEY) && !s.output.stderr.includes(KEY));
      });
    });

    describe("condensation", () => {
      test("/stats reports what the gateway would have done", (t) => {
        const would = statField(s.stats, "would_condense");
        const n = statField(s.stats, "condensations");
        t.diagnostic(`would_condense ${would}, condensations (in its books) ${n}, tokens_would_save ${statField(s.stats, "tokens_would_save")}`);
        assert.ok(n >= 1, `observe mode's books count ${n} condensations`);
        assert.ok(would >= 1, `would have condensed ${would} requests`);
      });
    });
  });
}

// The native provider with --summarize-with-upstream, for Claude Code: the request that crosses
// the threshold goes out with the ledger at once, the summary is asked of the same upstream with
// the client's own model and key in the background, and a later request carries it above the
// ledger (the scripted model answers a summary request with a sectioned summary).
// Claude Code signed in with a Claude subscription: an OAuth token sent as `Authorization: Bearer`
// with the `oauth-2025-04-20` beta (the fixture, like Anthropic's API, takes it only with that
// beta). The gateway passes the credential through as sent and condenses as for an API key.
describe("Claude Code signed in with a Claude subscription (OAuth) through condense gateway", () => {
  const c = CLIENTS.claude;
  let s;
  before(async () => {
    s = await session("claude", { observe: false, tag: "-subscription", runWith: { signIn: "subscription" } });
  });

  test("the client exits 0 with the final answer naming the file's marker", (t) => {
    describeRun(t, s);
    assert.equal(s.result.code, 0, explain(s.result));
    assert.match(s.answer, new RegExp(`Scripted agent done after ${ROUNDS} tool rounds.*Markers seen: ${s.w.marker}`), explain(s.result));
  });

  test("every forwarded request carries the sign-in as the client sent it, and no API key", () => {
    for (const [i, r] of s.turns.entries()) {
      assert.equal(r.headers.authorization, `Bearer ${KEY}`, `request ${i}: the OAuth token passed through`);
      assert.match(r.headers["anthropic-beta"] ?? "", /(^|,)oauth-2025-04-20(,|$)/, `request ${i}: the oauth beta passed through`);
      assert.equal(r.headers["x-api-key"], undefined, `request ${i} carries no x-api-key`);
    }
  });

  test("condensed, then replayed byte for byte between condensations; the token in neither the state nor the output", (t) => {
    const n = statField(s.stats, "condensations");
    assert.ok(n >= 1, `/stats counts ${n} condensations`);
    assert.ok(s.turns.some((r) => markerItems(r).length > 0), "a forwarded request carries the gateway's condensation");
    const starts = checkExtends(s.turns, { exact: c.exact });
    t.diagnostic(`stretches start at ${starts.join(", ")}`);
    assert.ok(starts.length - 1 <= n, "every break is a condensation");
    for (const f of filesUnder(s.stateDir)) assert.ok(!readFileSync(f).includes(KEY), `${f} holds the OAuth token`);
    assert.ok(!s.output.stdout.includes(KEY) && !s.output.stderr.includes(KEY), "the gateway printed the OAuth token");
  });
});

describe("Claude Code through condense gateway --provider native --summarize-with-upstream", () => {
  const c = CLIENTS.claude;
  let s;
  before(async () => {
    s = await session("claude", { observe: false, flags: ["--provider", "native", "--summarize-with-upstream"], tag: "-native" });
  });

  test("the client exits 0 with the final answer naming the file's marker", (t) => {
    describeRun(t, s);
    assert.equal(s.result.code, 0, explain(s.result));
    assert.match(s.answer, new RegExp(`Scripted agent done after ${ROUNDS} tool rounds.*Markers seen: ${s.w.marker}`), explain(s.result));
  });

  test("the summary was asked of the upstream with the client's model and key, in the background", () => {
    const asks = s.all.filter(isSummaryAsk);
    assert.ok(asks.length >= 1, "no summary request reached the upstream");
    for (const r of asks) {
      assert.equal(r.body.model, MODEL, "the request's own model");
      assert.ok((r.headers["x-api-key"] ?? "").includes(KEY), "the client's own key");
      assert.ok(!r.body.tools, "a summary request declares no tools");
    }
    const firstAsk = s.all.indexOf(asks[0]);
    const condensed = s.turns.find((r) => markerItems(r).length > 0);
    assert.ok(condensed && condensed.index < firstAsk, "the request that crossed the threshold went out before the summary was asked");
    assert.ok(!condensed.raw.includes("Summary of the earlier conversation"), "and did not wait for it");
  });

  test("a later request carries the summary above the ledger, replayed from then on; each stretch extends byte for byte", (t) => {
    const carrying = s.turns.filter((r) => markerItems(r).some((m) => m.includes("Summary of the earlier conversation (written by " + MODEL)));
    assert.ok(carrying.length >= 1, "no forwarded request carries the summary");
    const first = carrying[0];
    assert.ok(first.raw.includes("fixture summary"), "the upstream's summary text");
    assert.deepEqual(markerItems(carrying.at(-1)), markerItems(first), "replayed as it was");
    const starts = checkExtends(s.turns, { exact: c.exact });
    t.diagnostic(`stretches start at ${starts.join(", ")}; summaries ${statField(s.stats, "summaries")}; condensations ${statField(s.stats, "condensations")}`);
    assert.ok(starts.length - 1 <= statField(s.stats, "condensations") + statField(s.stats, "summaries"), "every break is a condensation or a summary spliced in");
    checkTaskEverywhere(s.turns, s.prompt);
  });

  test("/stats counts the summary and its tokens; the key is in neither the state nor the output", () => {
    assert.ok(statField(s.stats, "summaries") >= 1, JSON.stringify(totalsOf(s.stats)));
    assert.ok(statField(s.stats, "summary_tokens") > 0, JSON.stringify(totalsOf(s.stats)));
    for (const f of filesUnder(s.stateDir)) assert.ok(!readFileSync(f).includes(KEY), `${f} holds the API key`);
    assert.ok(!s.output.stdout.includes(KEY) && !s.output.stderr.includes(KEY), "the gateway printed the API key");
  });
});
