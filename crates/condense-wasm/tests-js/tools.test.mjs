// CLI tools through the bindings: `cli` profiles run through the host's `run` (written here, in
// the test: it plays Claude Code's print mode from the spec it is given), the tool registry the
// host feeds with YAML, and each tool's status through the host's `locate`.
// Run: node --test crates/condense-wasm/tests-js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { repoRoot } from "../../../tests/js/servers.mjs";
import { holdChat, condenseWhole } from "./held.mjs";

const require = createRequire(import.meta.url);
const { CondenseEngine } = require(path.join(repoRoot, "extension/wasm/condense_wasm.js"));
const session = JSON.parse(readFileSync(path.join(repoRoot, "tests/fixtures/small-session.json"), "utf8"));

const CLAUDE = "/opt/fake/bin/claude";

/** A host whose `run` answers like `claude -p --output-format json`, recording every spec. */
function makeHost({ installed = { claude: CLAUDE }, answer, cost = 0.0123, env = { HOME: "/home/t" } } = {}) {
  const runs = [];
  const logs = [];
  const host = {
    fetch: () => Promise.reject(new Error("no HTTP in these tests")),
    now: () => performance.now(),
    log: (level, message) => logs.push(`${level} ${message}`),
    platform: "linux",
    envVar: (name) => env[name],
    locate: (program) => installed[program] ?? (program.includes("/") && Object.values(installed).includes(program) ? program : undefined),
    run: (spec, signal) => {
      runs.push({ spec, signal });
      if (answer) return answer(spec, signal);
      const prompt = spec.stdin ?? "";
      const text = prompt.includes("Reply with the single word OK") ? "OK" : `fake claude read ${prompt.length} chars`;
      return Promise.resolve({
        exitCode: 0,
        stdout: JSON.stringify({
          type: "result",
          is_error: false,
          result: text,
          usage: { input_tokens: 120, output_tokens: 7 },
          total_cost_usd: cost,
          modelUsage: { "claude-sonnet-4-5-20250929": {} },
        }),
        stderr: "",
        outputFile: null,
      });
    },
  };
  return { host, runs, logs, engine: new CondenseEngine(host) };
}

const cliProfile = (model = "sonnet", tool = "claude-code") => ({
  id: "claude-cli",
  kind: "cli",
  tool,
  model,
  context_window: 200000,
});
const text_ = (args) => args.map((parts) => parts.map((p) => (p.kind === "text" ? p.text : `<${p.kind}>`)).join(""));

/** A held chat whose system prompt is `system`: what a turn's prompt carries. */
function chatWithSystem(engine, id, system) {
  const { task } = engine.newChat(id, 0);
  task.conversation.system = system;
  return holdChat(engine, JSON.stringify(task));
}

/** A chat turn with `llm`: its events and what changed. */
async function turn(engine, llm, content = "Say hello to the stand-in") {
  const events = [];
  const step = await engine.chat(chatWithSystem(engine, "cli-chat", "You are terse."), { type: "user", content }, { llm, nowMs: 1 }, (e) => events.push(e));
  return { events, step, error: events.find((e) => e.type === "Error") };
}

test("a cli profile's chat turn and Test Connection return the tool's answer, usage and reported cost", async () => {
  const { engine, runs } = makeHost();
  const { events, step, error } = await turn(engine, { profile: cliProfile() });
  assert.equal(error, undefined, JSON.stringify(error));
  const chunks = events.filter((e) => e.type === "MessageContent").map((e) => e.delta);
  const answer = step.change.messages.at(-1).content[0].text;
  assert.match(answer, /^fake claude read \d+ chars$/);
  assert.equal(chunks.join(""), answer);
  const end = events.find((e) => e.type === "MessageEnd");
  assert.equal(end.cost, 0.0123, "the tool's reported cost, not a price computed from the usage");
  assert.deepEqual(end.usage, { input_tokens: 120, output_tokens: 7 });

  assert.equal(runs.length, 1);
  const { spec } = runs[0];
  assert.equal(spec.program, CLAUDE);
  assert.deepEqual(text_(spec.args), ["-p", "--output-format", "json", "--model", "sonnet", "--max-turns", "1"]);
  assert.match(spec.stdin, /You are terse\./);
  assert.match(spec.stdin, /Say hello to the stand-in/);
  assert.equal(spec.timeoutMs, 600_000);
  assert.ok(spec.maxOutputBytes > 0);

  const report = await engine.testConnection({ profile: cliProfile("haiku") });
  assert.equal(report.reply, "OK");
  assert.deepEqual(report.usage, { input_tokens: 120, output_tokens: 7 });
  assert.deepEqual(text_(runs[1].spec.args).slice(3, 5), ["--model", "haiku"]);
});

test("Test Connection of a cli profile runs the tool once with the probe prompt", async () => {
  const { engine, runs } = makeHost();
  const report = await engine.testConnection({ profile: cliProfile() });
  assert.equal(report.reply, "OK");
  assert.equal(report.model, "claude-sonnet-4-5-20250929", "the model the tool names");
  assert.equal(runs.length, 1);
});

test("native condensation with a cli profile as the summarizing model costs what the tool reported", async () => {
  const { engine, runs } = makeHost({ cost: 0.5 });
  const result = await condenseWhole(engine, session, { provider: "native", llm: { profile: cliProfile() } });
  assert.equal(result.error, null, JSON.stringify(result.error));
  assert.equal(result.cost, 0.5);
  assert.equal(runs.length, 1);
  assert.ok(result.messages.some((m) => JSON.stringify(m).includes("fake claude read")));
});

test("the tool's failures are typed: not found, failed with stderr, timeout, and cancel fires the run's signal", async () => {
  const missing = makeHost({ installed: {} });
  const notFound = (e) => e.kind === "llm_tool_not_found" && /`claude` on the PATH/.test(e.message) && /~?\/home\/t\/\.claude\/local\/claude/.test(e.message);
  await assert.rejects(missing.engine.testConnection({ profile: cliProfile() }), notFound);
  // In a chat turn: the same error, as an Error event.
  const { error } = await turn(missing.engine, { profile: cliProfile() });
  assert.ok(notFound(error.error), JSON.stringify(error));
  assert.equal(missing.runs.length, 0);

  const failing = makeHost({
    answer: () => Promise.resolve({ exitCode: 1, stdout: "", stderr: "Invalid API key · Please run /login", outputFile: null }),
  });
  await assert.rejects(
    failing.engine.testConnection({ profile: cliProfile() }),
    (e) => e.kind === "llm_tool_failed" && /Please run \/login/.test(e.message),
  );

  const slow = makeHost({
    answer: () => Promise.reject({ kind: "timeout", message: "killed after 600 s", stderr: "partial err" }),
  });
  await assert.rejects(slow.engine.testConnection({ profile: cliProfile() }), (e) => e.kind === "llm_timeout");

  const hanging = makeHost({
    answer: (_spec, signal) =>
      new Promise((_resolve, reject) =>
        signal.addEventListener("abort", () => reject({ kind: "cancelled", message: "killed", stderr: "" })),
      ),
  });
  const pending = hanging.engine.testConnection({ profile: cliProfile() });
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(hanging.runs[0].signal.aborted, false);
  hanging.engine.cancel();
  await assert.rejects(pending, (e) => e.kind === "llm_cancelled");
  assert.equal(hanging.runs[0].signal.aborted, true, "cancel fires the signal the host's run was given");
});

test("a tool is only what its entry's capabilities say: the chat model, the condensing model", async () => {
  const { engine, runs } = makeHost({ installed: { claude: CLAUDE, sum: "/opt/fake/bin/sum" } });
  const errors = engine.setToolSources([
    {
      origin: "uses.yaml",
      text: "tools:\n  sum:\n    binary: sum\n    command_template: \"{binary} --model {model}\"\n    models: [m]\n    capabilities: [summarize]\n    output: { format: text }\n",
    },
  ]);
  assert.deepEqual(errors, []);
  const status = engine.tools().find((t) => t.id === "sum");
  assert.deepEqual(status.capabilities, ["summarize"]);
  assert.deepEqual(engine.tools().find((t) => t.id === "claude-code").capabilities, ["chat", "summarize"]);
  const sum = cliProfile("m", "sum");
  // Test Connection as the chat profile: refused before the tool runs; as the condensing one, it runs.
  await assert.rejects(
    engine.testConnection({ profile: sum }, "probe", ["chat"]),
    (e) => e.kind === "llm_tool_unsupported" && /tool 'sum' cannot be the chat model/.test(e.message) && /\[summarize\]/.test(e.message),
  );
  assert.equal(runs.length, 0);
  await engine.testConnection({ profile: sum }, "probe", ["summarize"]);
  assert.equal(runs.length, 1);
  // A chat turn with it as the chat model: a typed error event, nothing run.
  const events = [];
  await engine.chat(engine.newChat("t", 0).handle, { type: "user", content: "Hi" }, { llm: { profile: sum }, nowMs: 1 }, (e) => events.push(e));
  const error = events.find((e) => e.type === "Error");
  assert.equal(error?.error.kind, "llm_tool_unsupported", JSON.stringify(events));
  assert.equal(runs.length, 1);
  // An unknown capability is a located error of its file.
  const [bad] = engine.setToolSources([{ origin: "bad.yaml", text: "tools:\n  x:\n    binary: x\n    command_template: \"{binary}\"\n    models: [m]\n    capabilities: [chat, draw]\n    output: { format: text }\n" }]);
  assert.deepEqual([bad.origin, bad.line, bad.column], ["bad.yaml", 6, 26]);
  assert.match(bad.message, /draw/);
});

test("on Windows the host's readText lets the core start an npm shim's node script, never the .cmd", async () => {
  const shim = "C:\\Users\\t\\AppData\\Roaming/npm/claude.cmd";
  const node = "C:\\Program Files\\nodejs\\node.exe";
  const text = [
    "@ECHO off", "GOTO start", ":find_dp0", "SET dp0=%~dp0", "EXIT /b", ":start", "SETLOCAL", "CALL :find_dp0", "",
    'IF EXIST "%dp0%\\node.exe" (', '  SET "_prog=%dp0%\\node.exe"', ") ELSE (", '  SET "_prog=node"', "  SET PATHEXT=%PATHEXT:;.JS;=;%", ")", "",
    'endLocal & goto #_undefined_# 2>NUL || title %COMSPEC% & "%_prog%"  "%dp0%\\node_modules\\@anthropic-ai\\claude-code\\cli.js" %*',
  ].join("\r\n");
  const { host, runs } = makeHost({ installed: { [shim]: shim, node }, env: { APPDATA: "C:\\Users\\t\\AppData\\Roaming" } });
  const read = [];
  const engine = new CondenseEngine({ ...host, platform: "windows", readText: (p, maxBytes) => (read.push([p, maxBytes]), p === shim ? text : undefined) });
  await engine.testConnection({ profile: cliProfile() });
  // Read once, with the core's limit (64 KiB: a shim is a few hundred bytes).
  assert.deepEqual(read, [[shim, 64 * 1024]]);
  assert.equal(runs[0].spec.program, node);
  assert.deepEqual(text_(runs[0].spec.args).slice(0, 2), ["C:\\Users\\t\\AppData\\Roaming/npm\\node_modules\\@anthropic-ai\\claude-code\\cli.js", "-p"]);
  // Without readText the .cmd is refused, and nothing runs.
  const { host: plain, runs: none } = makeHost({ installed: { [shim]: shim, node }, env: { APPDATA: "C:\\Users\\t\\AppData\\Roaming" } });
  await assert.rejects(
    new CondenseEngine({ ...plain, platform: "windows" }).testConnection({ profile: cliProfile() }),
    (e) => e.kind === "llm_config" && /only a shell runs/.test(e.message),
  );
  assert.equal(none.length, 0);
});

test("a bad profile or a host that cannot run programs is llm_config", async () => {
  const { engine } = makeHost();
  await assert.rejects(
    engine.testConnection({ profile: cliProfile("gpt-4o") }),
    (e) => e.kind === "llm_config" && /sonnet/.test(e.message),
  );
  await assert.rejects(
    engine.testConnection({ profile: cliProfile("sonnet", "nope") }),
    (e) => e.kind === "llm_config" && /claude-code/.test(e.message),
  );
  const noRun = new CondenseEngine({ fetch: () => Promise.reject(new Error("x")), now: () => 0, log() {} });
  await assert.rejects(
    noRun.testConnection({ profile: cliProfile() }),
    (e) => e.kind === "llm_config" && e.message === "this host cannot run programs",
  );
  assert.ok(noRun.tools().every((t) => t.found === null));
});

test("tools() reports each shipped tool found or not, with where it looked", () => {
  const { engine } = makeHost({ installed: { claude: CLAUDE, "/home/t/.local/bin/gemini": "/home/t/.local/bin/gemini" } });
  const tools = engine.tools();
  assert.deepEqual(tools.map((t) => t.id), ["claude-code", "codex", "gemini"]);
  const [claude, codex, gemini] = tools;
  assert.equal(claude.name, "Claude Code");
  assert.equal(claude.origin, "shipped");
  assert.equal(claude.contextWindow, 200000);
  assert.ok(claude.models.includes("sonnet"));
  assert.equal(claude.found, CLAUDE);
  assert.equal(codex.found, null);
  assert.deepEqual(codex.searched, ["/home/t/.local/bin/codex", "/home/t/.npm-global/bin/codex", "`codex` on the PATH"]);
  assert.equal(gemini.found, "/home/t/.local/bin/gemini", "a per-platform path, ~ expanded through envVar");
});

test("setToolSources adds and replaces entries, and returns a located error for a bad file", () => {
  const { engine, logs } = makeHost({ installed: { mytool: "/usr/bin/mytool" } });
  const good = {
    origin: "/home/t/tools.yaml",
    text: [
      "tools:",
      "  mytool:",
      "    binary: mytool",
      '    command_template: "{binary} --model {model}"',
      "    models: [small]",
      "    context_window: 8000",
      "    output: { format: text }",
    ].join("\n"),
  };
  const bad = { origin: "/w/.vscode/context-condenser.tools.yaml", text: "tools:\n  broken:\n    binary: [oops\n" };
  const errors = engine.setToolSources([good, bad]);
  assert.equal(errors.length, 1, JSON.stringify(errors));
  assert.equal(errors[0].origin, bad.origin);
  assert.ok(errors[0].line >= 3 && errors[0].column > 0, JSON.stringify(errors[0]));
  assert.ok(logs.some((l) => l.startsWith(`warn tool file left out: ${bad.origin}:`)), logs.join("\n"));
  const mine = engine.tools().find((t) => t.id === "mytool");
  assert.deepEqual(
    { origin: mine.origin, found: mine.found, contextWindow: mine.contextWindow },
    { origin: good.origin, found: "/usr/bin/mytool", contextWindow: 8000 },
  );
  // A wrong field is located too, and the registry goes back to the shipped entries without it.
  const unknown = engine.setToolSources([{ origin: "f.yaml", text: "tools:\n  t:\n    binary: t\n    colour: red\n    output: { format: text }\n" }]);
  assert.equal(unknown.length, 1);
  assert.equal(unknown[0].line, 4);
  assert.deepEqual(engine.tools().map((t) => t.id), ["claude-code", "codex", "gemini"]);
  assert.throws(() => engine.setToolSources([{ origin: 1 }]), (e) => e.kind === "invalid_input");
});
