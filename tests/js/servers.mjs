// Starts the test LLM servers of tests/servers on 127.0.0.1 for JS tests, and stops them.
// The servers die on stdin EOF, so a crashed test leaves nothing running.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, "..", "..");

/** Spawns a server script that prints `LISTENING <port>` and resolves with its base URL. */
function start(python, script, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(python, [script, ...args], { stdio: ["pipe", "pipe", "inherit"] });
    let out = "";
    const fail = (why) => {
      child.kill("SIGKILL");
      reject(new Error(`${path.basename(script)}: ${why}`));
    };
    const timer = setTimeout(() => fail("did not print LISTENING within 60 s"), 60_000);
    child.on("error", (e) => fail(e.message));
    child.on("exit", (code) => fail(`exited with ${code} before listening`));
    child.stdout.on("data", (data) => {
      out += data;
      const m = /LISTENING (\d+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners("exit");
      const origin = `http://127.0.0.1:${m[1]}`;
      resolve({
        origin,
        async stop() {
          const gone = new Promise((r) => child.once("exit", r));
          child.stdin.end();
          child.kill("SIGTERM");
          await gone;
        },
      });
    });
  });
}

/** The fixture OpenAI/Anthropic server; `apiKey` makes it accept only that key. */
export async function startFixtureLlm({ apiKey, stallSeconds = 5 } = {}) {
  const args = ["--port", "0", "--quiet", "--stall-seconds", String(stallSeconds)];
  if (apiKey) args.push("--api-key", apiKey);
  const server = await start("python3", path.join(repoRoot, "tests/servers/fixture_llm.py"), args);
  return {
    ...server,
    /** The requests the server received, in order: `{path, headers, body}`. */
    async requests() {
      const r = await fetch(`${server.origin}/requests`);
      return r.json();
    },
    async clearRequests() {
      await fetch(`${server.origin}/requests`, { method: "DELETE" });
    },
  };
}

/** SmolLM2-135M behind llama.cpp's OpenAI-compatible server (E2E.md), installed by
 *  scripts/setup-llm into a cached venv; only `apiKey` is accepted. */
export async function startRealLlm({ apiKey, ctx = 4096 } = {}) {
  const { execFileSync } = await import("node:child_process");
  const python = execFileSync("bash", [path.join(repoRoot, "scripts/setup-llm")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] })
    .trim()
    .split("\n")
    .at(-1);
  const args = ["--port", "0", "--ctx", String(ctx)];
  if (apiKey) args.push("--api-key", apiKey);
  return start(python, path.join(repoRoot, "tests/servers/real_llm.py"), args);
}
