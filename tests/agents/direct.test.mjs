// The real agent CLIs, fully offline, against the fixture LLM server's scripted agent
// (tests/servers/fixture_llm.py, model `script-agent-N`): Claude Code (`claude -p`, Anthropic
// Messages), Codex (`codex exec`, OpenAI Responses) and Cline (`cline --json`, OpenAI Chat
// Completions) each run N rounds of tool calls they really execute (reading a 216 KB file in
// slices, running grep/wc in a shell) and then print the server's final answer, which names the
// marker the file read revealed. No gateway yet: this is the direct path a gateway will sit in.
//
// The CLIs come from scripts/setup-agents (pinned npm versions, cached); CONDENSE_AGENTS_BIN may
// name their folder instead. Each runs in a temporary HOME and workspace, in its own process
// group (killed whole at the end or on timeout), with every proxy variable pointing at a closed
// local port so anything a client tries to reach besides 127.0.0.1 fails at once.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { randomBytes } from "node:crypto";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { repoRoot, startFixtureLlm } from "../js/servers.mjs";

const ROUNDS = 4;
const MODEL = `script-agent-${ROUNDS}`;
const KEY = "sk-agent-test-key";
const RUN_TIMEOUT_MS = 180_000;

let bin;
let deadProxy;
const scratch = [];

before(async () => {
  bin =
    process.env.CONDENSE_AGENTS_BIN ||
    execFileSync("bash", [path.join(repoRoot, "scripts/setup-agents")], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    })
      .trim()
      .split("\n")
      .at(-1);
  deadProxy = `http://127.0.0.1:${await closedPort()}`;
});

after(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/** A local port nothing listens on: bound, then released. */
function closedPort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** A temporary HOME and workspace; the workspace holds big.txt (~216 KB) with one marker line. */
function workspace(name) {
  const root = mkdtempSync(path.join(os.tmpdir(), `agent-${name}-`));
  scratch.push(root);
  const home = path.join(root, "home");
  const ws = path.join(root, "ws");
  mkdirSync(home);
  mkdirSync(ws);
  const marker = `cc-marker-${randomBytes(6).toString("hex")}`;
  const lines = [];
  for (let i = 1; i <= 2000; i++) {
    if (i === 10) lines.push(`MARKER: ${marker}`);
    else lines.push(`line ${String(i).padStart(5, "0")}: ` + Array.from({ length: 16 }, (_, j) => `w${String((i * 31 + j * 7919) % 10000).padStart(4, "0")}`).join(" "));
  }
  const file = path.join(ws, "big.txt");
  writeFileSync(file, lines.join("\n") + "\n");
  return { root, home, ws, file, marker };
}

/** The environment every client runs in: nothing of ours but PATH, no way out but 127.0.0.1. */
function offlineEnv(home, extra) {
  const proxies = {};
  for (const name of ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"]) {
    proxies[name] = deadProxy;
    proxies[name.toLowerCase()] = deadProxy;
  }
  return {
    PATH: process.env.PATH,
    HOME: home,
    LANG: "C.UTF-8",
    ...proxies,
    NO_PROXY: "127.0.0.1,localhost",
    no_proxy: "127.0.0.1,localhost",
    ...extra,
  };
}

/** Runs a command in its own process group; kills the group on timeout and when it exits. */
function run(command, args, { env, cwd, timeoutMs = RUN_TIMEOUT_MS }) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(command, args, { env, cwd, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const killGroup = () => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
    };
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      killGroup(); // helpers the client left behind
      resolve({ code, signal, timedOut, stdout, stderr, ms: Date.now() - started });
    });
  });
}

function explain(result) {
  return `exit ${result.code} signal ${result.signal}${result.timedOut ? " (timed out)" : ""} after ${result.ms} ms\n--- stdout (tail)\n${result.stdout.slice(-3000)}\n--- stderr (tail)\n${result.stderr.slice(-3000)}`;
}

/** Texts of the tool results a request carries, per wire format. */
function toolResults(req) {
  const b = req.body;
  const text = (c) => (typeof c === "string" ? c : Array.isArray(c) ? c.map(text).join("\n") : c && typeof c === "object" ? (typeof c.text === "string" ? c.text : text(c.content ?? c.output ?? "")) : "");
  if (Array.isArray(b.input)) return b.input.filter((i) => i.type === "function_call_output").map((i) => text(i.output));
  const out = [];
  for (const m of b.messages ?? []) {
    if (m.role === "tool") out.push(text(m.content));
    if (m.role === "user" && Array.isArray(m.content)) for (const c of m.content) if (c.type === "tool_result") out.push(text(c.content));
  }
  return out;
}

function toolNames(req) {
  return (req.body.tools ?? []).map((t) => t.name ?? t.function?.name ?? t.type);
}

/** Checks the rounds the server saw and reports the request sizes. */
function checkRounds(t, requests, { path: wirePath, marker, file }) {
  const turns = requests.filter((r) => r.path === wirePath && r.body?.model === MODEL);
  assert.ok(turns.length >= ROUNDS + 1, `expected ≥ ${ROUNDS + 1} ${wirePath} requests, saw ${turns.length}`);
  const last = turns.at(-1);
  const results = toolResults(last);
  assert.ok(results.length >= ROUNDS, `the last request carries ${results.length} tool results, expected ≥ ${ROUNDS}`);
  const all = results.join("\n");
  assert.ok(all.includes(`MARKER: ${marker}`), "a tool result holds the marker line: the client really read the file");
  const wc = new RegExp(`\\d+ ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`);
  assert.ok(wc.test(all), "a tool result holds wc's output: the client really ran the command");
  t.diagnostic(`${turns.length} requests to ${wirePath}, bytes: ${turns.map((r) => r.bytes).join(", ")}`);
  t.diagnostic(`tools declared (${toolNames(turns[0]).length}): ${toolNames(turns[0]).join(", ")}`);
  const others = requests.filter((r) => !turns.includes(r));
  if (others.length) t.diagnostic(`other requests: ${others.map((r) => `${r.url} (${r.bytes} B)`).join(", ")}`);
  return turns;
}

test("Claude Code (claude -p) runs its tool loop offline against the scripted agent", async (t) => {
  const w = workspace("claude");
  const llm = await startFixtureLlm({ apiKey: KEY });
  try {
    const env = offlineEnv(w.home, {
      ANTHROPIC_BASE_URL: llm.origin,
      ANTHROPIC_API_KEY: KEY,
      DISABLE_AUTOUPDATER: "1",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_ERROR_REPORTING: "1",
    });
    // --dangerously-skip-permissions is refused as root; --allowedTools lets Read and Bash run.
    const result = await run(
      path.join(bin, "claude"),
      ["-p", `Read the file ${w.file} and tell me its marker.`, "--model", MODEL, "--allowedTools", "Read", "Bash"],
      { env, cwd: w.ws },
    );
    assert.equal(result.code, 0, explain(result));
    assert.match(result.stdout, new RegExp(`Scripted agent done after ${ROUNDS} tool rounds.*Markers seen: ${w.marker}`), explain(result));
    const requests = await llm.requests();
    const turns = checkRounds(t, requests, { path: "/v1/messages", marker: w.marker, file: w.file });
    assert.equal(turns[0].url, "/v1/messages?beta=true");
    const session = turns[0].headers["x-claude-code-session-id"];
    assert.ok(session, "Claude Code names its session in x-claude-code-session-id");
    assert.equal(JSON.parse(turns[0].body.metadata.user_id).session_id, session, "and inside metadata.user_id");
    for (const r of turns) assert.equal(r.headers["x-claude-code-session-id"], session, "one session for the whole run");
    assert.ok(toolNames(turns[0]).includes("Read") && toolNames(turns[0]).includes("Bash"));
    t.diagnostic(`claude: ${result.ms} ms; session ${session} (header and metadata.user_id)`);
  } finally {
    await llm.stop();
  }
});

test("Codex (codex exec) runs its tool loop offline against the scripted agent (Responses API)", async (t) => {
  const w = workspace("codex");
  const llm = await startFixtureLlm({ apiKey: KEY });
  try {
    const codexHome = path.join(w.root, "codex-home");
    mkdirSync(codexHome);
    writeFileSync(
      path.join(codexHome, "config.toml"),
      [
        `model = "${MODEL}"`,
        `model_provider = "fixture"`,
        `approval_policy = "never"`,
        `sandbox_mode = "danger-full-access"`,
        `check_for_update_on_startup = false`,
        ``,
        `[analytics]`,
        `enabled = false`,
        ``,
        `[model_providers.fixture]`,
        `name = "Fixture"`,
        `base_url = "${llm.origin}/v1"`,
        `wire_api = "responses"`,
        `env_key = "FIXTURE_API_KEY"`,
        `request_max_retries = 0`,
        `stream_max_retries = 0`,
        ``,
      ].join("\n"),
    );
    const env = offlineEnv(w.home, { CODEX_HOME: codexHome, FIXTURE_API_KEY: KEY });
    const result = await run(
      path.join(bin, "codex"),
      ["exec", "--skip-git-repo-check", `Read the file ${w.file} and tell me its marker.`],
      { env, cwd: w.ws },
    );
    assert.equal(result.code, 0, explain(result));
    assert.match(result.stdout, new RegExp(`Scripted agent done after ${ROUNDS} tool rounds.*Markers seen: ${w.marker}`), explain(result));
    const requests = await llm.requests();
    const turns = checkRounds(t, requests, { path: "/v1/responses", marker: w.marker, file: w.file });
    const key = turns[0].body.prompt_cache_key;
    assert.ok(key, "Codex sends its session id as prompt_cache_key");
    for (const r of turns) assert.equal(r.body.prompt_cache_key, key, "one prompt_cache_key for the whole run");
    assert.equal(turns[0].headers["session-id"], key, "and the same id in the session-id header");
    assert.ok(toolNames(turns[0]).includes("exec_command"));
    t.diagnostic(`codex: ${result.ms} ms; prompt_cache_key ${key}`);
  } finally {
    await llm.stop();
  }
});

test("Cline (cline --json) runs its tool loop offline against the scripted agent (Chat Completions)", async (t) => {
  const w = workspace("cline");
  const llm = await startFixtureLlm({ apiKey: KEY });
  try {
    const dataDir = path.join(w.root, "cline-data");
    const settings = path.join(w.root, "cline-global-settings.json");
    // Telemetry off: otherwise Cline retries https://otel.cline.bot for ~9 s before it exits.
    writeFileSync(settings, JSON.stringify({ telemetryOptOut: true, autoUpdateEnabled: false }));
    const env = offlineEnv(w.home, { CLINE_GLOBAL_SETTINGS_PATH: settings });
    const auth = await run(
      path.join(bin, "cline"),
      ["auth", "-p", "openai", "-k", KEY, "-m", MODEL, "-b", `${llm.origin}/v1`, "--data-dir", dataDir],
      { env, cwd: w.ws, timeoutMs: 60_000 },
    );
    assert.equal(auth.code, 0, explain(auth));
    const result = await run(
      path.join(bin, "cline"),
      ["--data-dir", dataDir, "--json", `Read the file ${w.file} and tell me its marker.`],
      { env, cwd: w.ws },
    );
    assert.equal(result.code, 0, explain(result));
    const events = result.stdout
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l));
    const final = events.find((e) => e.type === "run_result");
    assert.ok(final, explain(result));
    assert.equal(final.finishReason, "completed");
    assert.match(final.text, new RegExp(`Scripted agent done after ${ROUNDS} tool rounds.*Markers seen: ${w.marker}`));
    const requests = await llm.requests();
    const turns = checkRounds(t, requests, { path: "/v1/chat/completions", marker: w.marker, file: w.file });
    assert.ok(toolNames(turns[0]).includes("read_files") && toolNames(turns[0]).includes("run_commands"));
    assert.equal(turns[0].headers.authorization, `Bearer ${KEY}`);
    t.diagnostic(`cline: auth ${auth.ms} ms, run ${result.ms} ms; session id in the body: ${turns[0].body.prompt_cache_key ?? turns[0].body.user ?? "none"}`);
  } finally {
    await llm.stop();
  }
});
