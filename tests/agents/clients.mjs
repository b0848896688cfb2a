// The real agent CLIs of tests/agents, run fully offline, and the `condense gateway` binary, for
// the tests that put the gateway between them and the fixture LLM server (gateway.test.mjs).
// Not a test file itself (no `.test.` in the name): `node --test tests/agents/` skips it.
//
// Each client runs in a temporary HOME and workspace, in its own process group (killed whole at
// the end or on timeout), with every proxy variable pointing at a closed local port so anything
// a client tries to reach besides 127.0.0.1 fails at once. direct.test.mjs runs the clients
// through the same functions, without the gateway.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, existsSync } from "node:fs";
import { randomBytes } from "node:crypto";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { repoRoot } from "../js/servers.mjs";

export const RUN_TIMEOUT_MS = 180_000;

/** The folder of the pinned agent CLIs: CONDENSE_AGENTS_BIN, else scripts/setup-agents' answer. */
export function agentsBin() {
  return (
    process.env.CONDENSE_AGENTS_BIN ||
    execFileSync("bash", [path.join(repoRoot, "scripts/setup-agents")], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "inherit"],
    })
      .trim()
      .split("\n")
      .at(-1)
  );
}

/** The `condense` binary: CONDENSE_BIN, else a debug build of condense-cli (built now, so it is
 *  never stale) in CARGO_TARGET_DIR or the repository's target/. */
export function condenseBin() {
  if (process.env.CONDENSE_BIN) return process.env.CONDENSE_BIN;
  execFileSync("cargo", ["build", "-q", "-p", "condense-cli"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
  const target = process.env.CARGO_TARGET_DIR ? path.resolve(repoRoot, process.env.CARGO_TARGET_DIR) : path.join(repoRoot, "target");
  const bin = path.join(target, "debug", "condense");
  if (!existsSync(bin)) throw new Error(`no condense binary at ${bin}`);
  return bin;
}

/** A local port nothing listens on: bound, then released. */
export function closedPort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * A temporary HOME and workspace; the workspace holds big.txt with one marker line (line 10).
 * `lineWords(i)` is the number of words on line i (16 words ≈ 108 characters, direct.test.mjs's
 * file), so a test can make one slice of the file heavy and the others light.
 */
export function workspace(scratch, name, { lines = 2000, lineWords = () => 16 } = {}) {
  const root = mkdtempSync(path.join(os.tmpdir(), `agent-${name}-`));
  scratch.push(root);
  const home = path.join(root, "home");
  const ws = path.join(root, "ws");
  mkdirSync(home);
  mkdirSync(ws);
  const marker = `cc-marker-${randomBytes(6).toString("hex")}`;
  const out = [];
  for (let i = 1; i <= lines; i++) {
    if (i === 10) out.push(`MARKER: ${marker}`);
    else out.push(`line ${String(i).padStart(5, "0")}: ` + Array.from({ length: lineWords(i) }, (_, j) => `w${String((i * 31 + j * 7919) % 10000).padStart(4, "0")}`).join(" "));
  }
  const file = path.join(ws, "big.txt");
  writeFileSync(file, out.join("\n") + "\n");
  return { root, home, ws, file, marker };
}

/** The environment every client runs in: nothing of ours but PATH, no way out but 127.0.0.1. */
export function offlineEnv(deadProxy, home, extra) {
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

/** Runs a command in its own process group; kills the group on timeout and when it exits.
 *  `input`: text written to its standard input (then closed), else none. */
export function run(command, args, { env, cwd, timeoutMs = RUN_TIMEOUT_MS, input }) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(command, args, { env, cwd, detached: true, stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
    if (input !== undefined) {
      child.stdin.on("error", () => {}); // it may exit before reading everything
      child.stdin.end(input);
    }
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

export function explain(result) {
  return `exit ${result.code} signal ${result.signal}${result.timedOut ? " (timed out)" : ""} after ${result.ms} ms\n--- stdout (tail)\n${result.stdout.slice(-3000)}\n--- stderr (tail)\n${result.stderr.slice(-3000)}`;
}

/** Claude Code (`claude -p`, Anthropic Messages) at `baseUrl` (ANTHROPIC_BASE_URL). Resolves with
 *  the run and the final answer's text (its stdout). `allowedTools`: the `--allowedTools` rules
 *  (Read and Bash by default; an empty list runs it in its default permission mode). */
export async function runClaude({ bin, deadProxy, w, baseUrl, key, model, prompt, allowedTools = ["Read", "Bash"], signIn = "api-key" }) {
  // `signIn`: an API key (x-api-key), or a Claude subscription's OAuth token
  // (CLAUDE_CODE_OAUTH_TOKEN: Authorization: Bearer, with the oauth beta).
  const credential = signIn === "subscription" ? { CLAUDE_CODE_OAUTH_TOKEN: key } : { ANTHROPIC_API_KEY: key };
  const env = offlineEnv(deadProxy, w.home, {
    ANTHROPIC_BASE_URL: baseUrl,
    ...credential,
    DISABLE_AUTOUPDATER: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
  });
  // --dangerously-skip-permissions is refused as root; --allowedTools lets Read and Bash run.
  const allowed = allowedTools.length ? ["--allowedTools", ...allowedTools] : [];
  const result = await run(path.join(bin, "claude"), ["-p", prompt, "--model", model, ...allowed], { env, cwd: w.ws });
  return { result, answer: result.stdout };
}

/** Codex (`codex exec`, OpenAI Responses) with a custom provider whose base_url is `baseUrl`
 *  (ending in /v1). `defaults`: Codex's own approval policy and sandbox (read-only) rather than
 *  no approvals and full access. */
export async function runCodex({ bin, deadProxy, w, baseUrl, key, model, prompt, defaults = false }) {
  const codexHome = path.join(w.root, "codex-home");
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    path.join(codexHome, "config.toml"),
    [
      `model = "${model}"`,
      `model_provider = "fixture"`,
      ...(defaults ? [] : [`approval_policy = "never"`, `sandbox_mode = "danger-full-access"`]),
      `check_for_update_on_startup = false`,
      ``,
      `[analytics]`,
      `enabled = false`,
      ``,
      `[model_providers.fixture]`,
      `name = "Fixture"`,
      `base_url = "${baseUrl}"`,
      `wire_api = "responses"`,
      `env_key = "FIXTURE_API_KEY"`,
      `request_max_retries = 0`,
      `stream_max_retries = 0`,
      ``,
    ].join("\n"),
  );
  const env = offlineEnv(deadProxy, w.home, { CODEX_HOME: codexHome, FIXTURE_API_KEY: key });
  const result = await run(path.join(bin, "codex"), ["exec", "--skip-git-repo-check", prompt], { env, cwd: w.ws });
  return { result, answer: result.stdout };
}

/** Cline (`cline --json`, OpenAI Chat Completions), provider "openai" with base URL `baseUrl`
 *  (ending in /v1). The answer is the text of its `run_result` event. */
export async function runCline({ bin, deadProxy, w, baseUrl, key, model, prompt }) {
  const dataDir = path.join(w.root, "cline-data");
  const settings = path.join(w.root, "cline-global-settings.json");
  // Telemetry off: otherwise Cline retries https://otel.cline.bot for ~9 s before it exits.
  writeFileSync(settings, JSON.stringify({ telemetryOptOut: true, autoUpdateEnabled: false }));
  const env = offlineEnv(deadProxy, w.home, { CLINE_GLOBAL_SETTINGS_PATH: settings });
  const auth = await run(path.join(bin, "cline"), ["auth", "-p", "openai", "-k", key, "-m", model, "-b", baseUrl, "--data-dir", dataDir], {
    env,
    cwd: w.ws,
    timeoutMs: 60_000,
  });
  if (auth.code !== 0) return { result: auth, answer: "" };
  const result = await run(path.join(bin, "cline"), ["--data-dir", dataDir, "--json", prompt], { env, cwd: w.ws });
  const events = result.stdout
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .flatMap((l) => {
      try {
        return [JSON.parse(l)];
      } catch {
        return [];
      }
    });
  const final = events.find((e) => e.type === "run_result");
  result.ms += auth.ms;
  return { result, answer: final ? `${final.finishReason}: ${final.text}` : "" };
}

/** Qwen Code (`qwen`, one-shot with a positional prompt, OpenAI Chat Completions) with
 *  OPENAI_BASE_URL `baseUrl` (ending in /v1), OPENAI_API_KEY and OPENAI_MODEL, tools approved
 *  (`--yolo`), its telemetry off. */
export async function runQwen({ bin, deadProxy, w, baseUrl, key, model, prompt }) {
  const settings = path.join(w.home, ".qwen");
  mkdirSync(settings, { recursive: true });
  writeFileSync(path.join(settings, "settings.json"), JSON.stringify({ telemetry: { enabled: false }, privacy: { usageStatisticsEnabled: false }, general: { disableAutoUpdate: true, disableUpdateNag: true } }));
  const env = offlineEnv(deadProxy, w.home, {
    OPENAI_BASE_URL: baseUrl,
    OPENAI_API_KEY: key,
    OPENAI_MODEL: model,
    QWEN_CODE_SUPPRESS_YOLO_WARNING: "1",
  });
  const result = await run(path.join(bin, "qwen"), ["--yolo", "-m", model, prompt], { env, cwd: w.ws });
  return { result, answer: result.stdout };
}

/** OpenCode (`opencode run`, OpenAI Chat Completions through its openai-compatible provider),
 *  configured by an `opencode.json` in the workspace as the gateway's setup lines say (a provider
 *  `condense` at `baseUrl`, ending in /v1, its key from OPENAI_API_KEY), with no auto-update and
 *  no sharing. */
export async function runOpenCode({ bin, deadProxy, w, baseUrl, key, model, prompt }) {
  writeFileSync(
    path.join(w.ws, "opencode.json"),
    JSON.stringify({
      $schema: "https://opencode.ai/config.json",
      provider: {
        condense: { npm: "@ai-sdk/openai-compatible", name: "Context Condenser", options: { baseURL: baseUrl, apiKey: "{env:OPENAI_API_KEY}" }, models: { [model]: {} } },
      },
      model: `condense/${model}`,
      small_model: `condense/${model}`,
      autoupdate: false,
      share: "disabled",
    }),
  );
  const env = offlineEnv(deadProxy, w.home, { OPENAI_API_KEY: key, OPENCODE_DISABLE_AUTOUPDATE: "1" });
  const result = await run(path.join(bin, "opencode"), ["run", prompt], { env, cwd: w.ws });
  return { result, answer: result.stdout };
}

/** Gemini CLI (`gemini -p`, the Gemini API's streamGenerateContent) with GOOGLE_GEMINI_BASE_URL
 *  `baseUrl` (the origin: it adds /v1beta/models/MODEL:METHOD) and GEMINI_API_KEY (sent as
 *  x-goog-api-key), tools approved (`--yolo`). `-m` is required: without it the CLI first asks a
 *  flash-lite model to route the prompt. Its settings (its own schema's keys in 0.61): API-key
 *  sign-in, folder trust, usage statistics, telemetry and auto-update off. `headers`: extra
 *  request headers (GEMINI_CLI_CUSTOM_HEADERS), e.g. x-fixture-script under a real model's name. */
export async function runGemini({ bin, deadProxy, w, baseUrl, key, model, prompt, headers = {} }) {
  const settings = path.join(w.home, ".gemini");
  mkdirSync(settings, { recursive: true });
  writeFileSync(
    path.join(settings, "settings.json"),
    JSON.stringify({
      security: { auth: { selectedType: "gemini-api-key" }, folderTrust: { enabled: false } },
      privacy: { usageStatisticsEnabled: false },
      general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
      telemetry: { enabled: false },
    }),
  );
  const custom = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  const env = offlineEnv(deadProxy, w.home, {
    GOOGLE_GEMINI_BASE_URL: baseUrl,
    GEMINI_API_KEY: key,
    ...(custom.length ? { GEMINI_CLI_CUSTOM_HEADERS: custom.join(",") } : {}),
  });
  const result = await run(path.join(bin, "gemini"), ["-m", model, "-p", prompt, "--yolo"], { env, cwd: w.ws });
  return { result, answer: result.stdout };
}

/**
 * Aider (`aider`, OpenAI Chat Completions through litellm's openai provider) with
 * `--openai-api-base baseUrl` (ending in /v1) and OPENAI_API_KEY, the model `openai/MODEL` (sent
 * as MODEL), in its ask mode (answers, no edits), without git. Aider has no tool loop: one
 * process reads the user's lines from standard input (no terminal: plain `input()`), and each
 * round is what a user of Aider does to show it a file: `/run COMMAND` (its output goes into the
 * chat as a user message that Aider acknowledges itself with an assistant "Ok.", no request),
 * then a question (one request). The commands are the scripted agent's (script-agent-N: N rounds,
 * slices of 500 lines on even rounds, grep and wc on odd ones), so the conversation grows as the
 * other clients' do. In ask mode Aider keeps the whole conversation as its current messages (its
 * own history summarizer never runs). A model settings file turns off its reminder, which it
 * otherwise appends to the last user message of each request only (so no request would extend
 * the previous one); a model metadata file names the model, so Aider does not fetch litellm's
 * price list. The answer is its stdout: every reply, the last one last.
 */
export async function runAider({ bin, deadProxy, w, baseUrl, key, model, prompt }) {
  const rounds = Number(/^script-agent-(\d+)/.exec(model)?.[1] ?? 2);
  const settings = path.join(w.root, "aider-model-settings.yml");
  writeFileSync(settings, `- name: openai/${model}\n  reminder: none\n`);
  const metadata = path.join(w.root, "aider-model-metadata.json");
  const info = { max_input_tokens: 1_000_000, max_output_tokens: 8192, input_cost_per_token: 0, output_cost_per_token: 0, litellm_provider: "openai", mode: "chat" };
  writeFileSync(metadata, JSON.stringify({ [`openai/${model}`]: info }));
  const lines = [prompt];
  for (let k = 0; k < rounds; k++) {
    const first = Math.floor(k / 2) * 500 + 1;
    lines.push(k % 2 === 0 ? `/run sed -n '${first},${first + 499}p' ${w.file}` : `/run grep -n MARKER ${w.file}; wc -c ${w.file}`, "Go on.");
  }
  const env = offlineEnv(deadProxy, w.home, { OPENAI_API_KEY: key, LITELLM_LOCAL_MODEL_COST_MAP: "True" });
  const args = [
    ...["--model", `openai/${model}`, "--openai-api-base", baseUrl, "--edit-format", "ask"],
    ...["--model-settings-file", settings, "--model-metadata-file", metadata],
    ...["--yes-always", "--no-git", "--no-pretty", "--no-fancy-input", "--no-stream"],
    ...["--no-check-update", "--analytics-disable", "--no-show-release-notes", "--no-show-model-warnings"],
  ];
  const result = await run(path.join(bin, "aider"), args, { env, cwd: w.ws, input: lines.join("\n") + "\n" });
  return { result, answer: result.stdout };
}

/**
 * Starts `condense gateway` with `args` (after `--listen 127.0.0.1:0`) and resolves once it
 * printed `listening on http://ADDR`. `stop()` ends it with SIGTERM (it writes its state then)
 * and resolves with everything it printed.
 */
export function startGateway(bin, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ["gateway", "--listen", "127.0.0.1:0", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let exited = null;
    const gone = new Promise((r) => child.once("exit", (code, signal) => r((exited = { code, signal }))));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`condense gateway printed no address within 30 s\n${stdout}\n${stderr}`));
    }, 30_000);
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    gone.then(() => {
      clearTimeout(timer);
      reject(new Error(`condense gateway exited (${JSON.stringify(exited)}) before listening\n${stdout}\n${stderr}`));
    });
    child.stdout.on("data", (d) => {
      stdout += d;
      const m = /^listening on (http:\/\/\S+)$/m.exec(stdout);
      if (!m || !stdout.startsWith("listening on ")) return;
      clearTimeout(timer);
      const origin = m[1];
      resolve({
        origin,
        async stats() {
          const r = await fetch(`${origin}/stats`);
          if (!r.ok) throw new Error(`GET /stats: ${r.status}`);
          return r.json();
        },
        async stop() {
          if (!exited) {
            child.kill("SIGTERM");
            await gone;
          }
          return { stdout, stderr, exit: exited };
        },
        output: () => ({ stdout, stderr }),
      });
    });
  });
}
