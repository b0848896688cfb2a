// End-to-end tests in a real VS Code (../shared/E2E.md): code-server with the VSIX installed,
// driven by playwright-core in Debian's Chromium, then the extension-host suite (suite/) run
// inside code-server. Everything binds to 127.0.0.1 and is stopped here. Artifacts (screenshots,
// logs) go to test-output/e2e/. Run: npm run test:e2e (it packages the VSIX first).
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { format } from "node:util";
import { chromium } from "playwright-core";
import { repoRoot, startFixtureLlm } from "../js/servers.mjs";

const OUT = path.join(repoRoot, "test-output", "e2e");
const VSIX = path.join(repoRoot, "context-condenser-0.1.0.vsix");
const RIGHT_KEY = "sk-e2e-right-key-7f3a";
const CANARY = "sk-canary-e2e-wrong-key-91c4";
const log = (m) => console.log(`e2e: ${m}`);
let failed = 0;
const check = (ok, what) => {
  log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failed++;
};

fs.rmSync(OUT, { recursive: true, force: true });
fs.mkdirSync(OUT, { recursive: true });
const E2E = execFileSync("bash", [path.join(repoRoot, "scripts/setup-e2e")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] })
  .trim()
  .split("\n")
  .at(-1);
const NODE24 = path.join(E2E, "node24", "bin");
const CODE_SERVER = path.join(E2E, "code-server", "node_modules", ".bin", "code-server");

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

function cli(...args) {
  return JSON.parse(execFileSync("cargo", ["run", "--quiet", "-p", "condense-cli", "--", ...args], { cwd: repoRoot, encoding: "utf8" }));
}

// ---- a fresh profile and workspace ------------------------------------------------------------
const D = path.join(OUT, "profile");
const dirs = { ud: path.join(D, "ud"), exts: path.join(D, "exts"), xdg: path.join(D, "xdg"), tmp: path.join(D, "tmp") };
Object.values(dirs).forEach((d) => fs.mkdirSync(d, { recursive: true }));
const WORKSPACE = path.join(OUT, "workspace");
fs.mkdirSync(WORKSPACE, { recursive: true });
fs.copyFileSync(path.join(repoRoot, "tests/fixtures/small-session.json"), path.join(WORKSPACE, "session.json"));

const llm = await startFixtureLlm({ apiKey: RIGHT_KEY });
const settings = {
  "chat.disableAIFeatures": true,
  "workbench.startupEditor": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "security.workspace.trust.enabled": false,
  "git.enabled": false,
  "workbench.tips.enabled": false,
  "contextCondenser.defaultProvider": "native",
  "contextCondenser.profiles": [
    {
      id: "fixture",
      kind: "openai",
      base_url: `${llm.origin}/v1`,
      model: "fixture",
      context_window: 32000,
      max_output: 1000,
      price_input_per_mtok: 3,
      price_output_per_mtok: 15,
    },
  ],
  "contextCondenser.chatProfile": "fixture",
};
fs.mkdirSync(path.join(dirs.ud, "User"), { recursive: true });
fs.writeFileSync(path.join(dirs.ud, "User", "settings.json"), JSON.stringify(settings, null, 2));

// What the extension-host suite checks against: the CLI on the same fixture.
const conversation = JSON.parse(fs.readFileSync(path.join(repoRoot, "tests/fixtures/small-session.json"), "utf8"));
const noSystem = path.join(OUT, "no-system.json");
fs.writeFileSync(noSystem, JSON.stringify({ messages: conversation.messages }));
const expectFile = path.join(OUT, "expect.json");
fs.writeFileSync(
  expectFile,
  JSON.stringify({
    conversation,
    count: cli("count", "--model", "gpt-4o", "tests/fixtures/small-session.json"),
    countWithoutSystem: cli("count", "--model", "gpt-4o", noSystem),
    apiKey: RIGHT_KEY,
    wrongKey: CANARY,
  }),
);

const env = {
  ...process.env,
  PATH: `${NODE24}:${process.env.PATH}`,
  XDG_CONFIG_HOME: dirs.xdg,
  XDG_DATA_HOME: dirs.xdg,
  XDG_CACHE_HOME: dirs.xdg,
  TMPDIR: dirs.tmp,
  CONDENSE_E2E_EXPECT: expectFile,
};
const profileArgs = ["--user-data-dir", dirs.ud, "--extensions-dir", dirs.exts];

const vsixBytes = fs.statSync(VSIX).size;
check(vsixBytes <= 8 * 1024 * 1024, `the VSIX is at most 8 MB (${(vsixBytes / 1048576).toFixed(2)} MB)`);
log("installing the VSIX");
execFileSync(CODE_SERVER, [...profileArgs, "--install-extension", VSIX], { env, stdio: "inherit" });

/** Starts code-server in its own process group; resolves once /healthz answers. */
async function startCodeServer(extra) {
  const port = await freePort();
  const child = spawn(
    CODE_SERVER,
    [...profileArgs, "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check",
      "--disable-workspace-trust", "--disable-getting-started-override", ...extra, WORKSPACE],
    { env, detached: true, stdio: ["ignore", fs.openSync(path.join(OUT, `code-server-${port}.log`), "w"), "inherit"] },
  );
  const origin = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 240; i++) {
    try {
      if ((await fetch(`${origin}/healthz`)).ok) break;
    } catch {}
    if (child.exitCode !== null) throw new Error(`code-server exited with ${child.exitCode}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    origin,
    stop: () => {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {}
      return new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
    },
  };
}

const launch = () =>
  chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });


// ---- 1. the UI, on a plain server --------------------------------------------------------------
async function uiScenario() {
  const server = await startCodeServer([]);
  const browser = await launch();
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const shot = (name) => page.screenshot({ path: path.join(OUT, `${name}.png`) });
  try {
    await page.goto(`${server.origin}/?folder=${encodeURIComponent(WORKSPACE)}`);
    const row = page.locator(".explorer-folders-view .monaco-list-row").first();
    await row.waitFor({ timeout: 120_000 });
    await row.click();

    const palette = async (text) => {
      await page.keyboard.press("F1");
      const input = page.locator(".quick-input-widget input");
      await input.waitFor();
      await input.fill(`>${text}`);
      return input;
    };
    // The palette lists our commands (a fresh install may need a retry while it loads).
    let titles = [];
    for (let attempt = 0; attempt < 10 && titles.length < 4; attempt++) {
      await palette("Context Condenser:");
      await page.waitForTimeout(1000);
      titles = await page.locator(".quick-input-list .monaco-list-row .label-name").allInnerTexts();
      titles = titles.filter((t) => t.startsWith("Context Condenser:"));
      await page.keyboard.press("Escape");
    }
    for (const t of ["Condense Now", "Undo Last Condensation", "Set API Key…", "Show Log"]) {
      check(titles.includes(`Context Condenser: ${t}`), `the palette lists "Context Condenser: ${t}"`);
    }
    const run = async (title) => {
      await palette(title);
      await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor();
      await page.keyboard.press("Enter");
    };

    // Show Log activates the extension and opens its channel.
    await run("Context Condenser: Show Log");
    await page.locator(".monaco-editor", { hasText: "activated" }).first().waitFor({ timeout: 30_000 }).then(
      () => check(true, "the log says the extension activated"),
      () => check(false, "the log says the extension activated"),
    );

    // Open the conversation; the meter measures it.
    await page.keyboard.press("Control+P");
    await page.locator(".quick-input-widget input").fill("session.json");
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "session.json" }).first().waitFor();
    await page.keyboard.press("Enter");
    await page.locator(".statusbar-item", { hasText: /ctx \d+% · [\d.k]+\/32k/ }).first().waitFor({ timeout: 15_000 }).then(
      () => check(true, "the status-bar meter shows the open conversation's share"),
      () => check(false, "the status-bar meter shows the open conversation's share"),
    );

    const toast = (re) => page.locator(".notifications-toasts .notification-toast", { hasText: re }).first();
    const clearToasts = async () => {
      await page.keyboard.press("F1");
      await page.locator(".quick-input-widget input").fill(">Notifications: Clear All Notifications");
      await page.waitForTimeout(300);
      await page.keyboard.press("Enter");
    };

    // A wrong key: a clear notification, no crash.
    await run("Context Condenser: Set API Key…");
    const keyBox = page.locator(".quick-input-widget input[type=password]");
    await keyBox.waitFor();
    await keyBox.fill(CANARY);
    await page.keyboard.press("Enter");
    await run("Context Condenser: Condense Now");
    await toast(/API key for profile "fixture" was rejected/).waitFor({ timeout: 30_000 }).then(
      () => check(true, "a wrong API key gives a clear notification"),
      () => check(false, "a wrong API key gives a clear notification"),
    );
    await shot("wrong-key");
    await clearToasts();

    // The right key: the condensation runs, is measured, and the file changes.
    await run("Context Condenser: Set API Key…");
    await keyBox.waitFor();
    await keyBox.fill(RIGHT_KEY);
    await page.keyboard.press("Enter");
    await run("Context Condenser: Condense Now");
    await toast(/Condensed with native: [\d,]+ → [\d,]+ tokens/).waitFor({ timeout: 30_000 }).then(
      () => check(true, "Condense Now summarizes and reports tokens before → after"),
      () => check(false, "Condense Now summarizes and reports tokens before → after"),
    );
    await shot("condensed");
    await page.keyboard.press("Control+S");
    await page.waitForTimeout(1000);
    const saved = JSON.parse(fs.readFileSync(path.join(WORKSPACE, "session.json"), "utf8"));
    check(saved.messages.some((m) => m.is_summary), "the conversation in the editor, saved, holds the summary");
    check(
      conversation.messages.every((m) => saved.messages.some((s) => s.id === m.id)),
      "every original message is still in the file (hidden, not deleted)",
    );
  } catch (e) {
    check(false, `UI scenario: ${e.message}`);
    await shot("ui-failure").catch(() => {});
  } finally {
    await browser.close();
    await server.stop();
  }
}

// ---- 2. the extension-host suite, with the smoke-test driver ----------------------------------
async function extensionHostSuite() {
  const server = await startCodeServer(["--vscode-option", "enable-smoke-test-driver"]);
  const browser = await launch();
  const page = await browser.newPage();
  const host = new URL(server.origin).host;
  try {
    const exit = new Promise((resolve) => {
      page.exposeFunction("codeAutomationExit", (code) => resolve(code));
    });
    await page.exposeFunction("codeAutomationLog", (type, args) => console.log(`ext-host ${type}: ${format(...[].concat(args))}`));
    const payload = JSON.stringify([
      ["extensionDevelopmentPath", `vscode-remote://${host}${path.join(repoRoot, "extension")}`],
      ["extensionTestsPath", `vscode-remote://${host}${path.join(repoRoot, "tests/e2e/suite/index")}`],
    ]);
    await page.goto(`${server.origin}/?folder=${encodeURIComponent(WORKSPACE)}&payload=${encodeURIComponent(payload)}`);
    const code = await Promise.race([exit, new Promise((r) => setTimeout(() => r("timeout"), 300_000))]);
    check(code === 0, `the extension-host suite passes (exit ${code})`);
    await page.screenshot({ path: path.join(OUT, "extension-host.png") });
  } catch (e) {
    check(false, `extension-host suite: ${e.message}`);
  } finally {
    await browser.close();
    await server.stop();
  }
}

// ---- 3. where keys must never be -------------------------------------------------------------
function filesContaining(root, needle) {
  const hits = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile() && fs.readFileSync(p).includes(needle)) hits.push(path.relative(root, p));
    }
  };
  walk(root);
  return hits;
}

try {
  await uiScenario();
  await extensionHostSuite();
  const logs = filesContaining(dirs.ud, "llm_auth").filter((f) => f.includes("logs") && f.endsWith(".log"));
  check(logs.length > 0, `the wrong key left a log line (${logs.join(", ") || "no log file with llm_auth"})`);
  for (const key of [CANARY, RIGHT_KEY]) {
    const hits = [...filesContaining(D, key), ...filesContaining(WORKSPACE, key).map((f) => `workspace/${f}`)];
    if (hits.length) log(`files holding a key: ${hits.join(", ")}`);
    check(hits.length === 0, `${key === CANARY ? "the canary key" : "the right key"} is in no settings, log, storage or state file`);
  }
  const settingsText = fs.readFileSync(path.join(dirs.ud, "User", "settings.json"), "utf8");
  check(!settingsText.includes(CANARY) && !settingsText.includes(RIGHT_KEY), "settings.json holds no key");
} finally {
  await llm.stop();
}

log(failed === 0 ? "all passed" : `${failed} check(s) failed; artifacts in ${OUT}`);
process.exit(failed === 0 ? 0 : 1);
