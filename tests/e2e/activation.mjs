// The extension's activation time in a real VS Code (code-server, the VSIX installed in a fresh
// profile, Debian's Chromium through Playwright): opens the workspace, runs "Context Condenser:
// Show Log" (which activates the extension), and reads the extension's own log line
// "activated in X ms (engine loaded: …)" from the profile's log folder, N times in fresh windows.
// A measurement, not a test. Run after `npm run package`: node tests/e2e/activation.mjs [N]
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const OUT = path.join(repoRoot, "test-output", "activation");
const VSIX = path.join(repoRoot, "context-condenser-0.1.0.vsix");
const runs = Number(process.argv[2]) || 3;
fs.rmSync(OUT, { recursive: true, force: true });
const E2E = execFileSync("bash", [path.join(repoRoot, "scripts/setup-e2e")], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] })
  .trim()
  .split("\n")
  .at(-1);
const CODE_SERVER = path.join(E2E, "code-server", "node_modules", ".bin", "code-server");
const dirs = { ud: path.join(OUT, "ud"), exts: path.join(OUT, "exts"), xdg: path.join(OUT, "xdg"), tmp: path.join(OUT, "tmp"), ws: path.join(OUT, "ws") };
Object.values(dirs).forEach((d) => fs.mkdirSync(d, { recursive: true }));
fs.writeFileSync(path.join(dirs.ws, "notes.md"), "# notes\n");
const env = { ...process.env, HOME: OUT, PATH: `${path.join(E2E, "node24", "bin")}:${process.env.PATH}`, XDG_CONFIG_HOME: dirs.xdg, XDG_DATA_HOME: dirs.xdg, XDG_CACHE_HOME: dirs.xdg, TMPDIR: dirs.tmp };
const profileArgs = ["--user-data-dir", dirs.ud, "--extensions-dir", dirs.exts];
execFileSync(CODE_SERVER, [...profileArgs, "--install-extension", VSIX], { env, stdio: "ignore" });
console.log(`VSIX: ${(fs.statSync(VSIX).size / 1048576).toFixed(2)} MB`);

const port = await new Promise((resolve) => {
  const s = net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
});
const child = spawn(
  CODE_SERVER,
  [...profileArgs, "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", dirs.ws],
  { env, detached: true, stdio: "ignore" },
);
const origin = `http://127.0.0.1:${port}`;
for (let i = 0; i < 240; i++) {
  try {
    if ((await fetch(`${origin}/healthz`)).ok) break;
  } catch {}
  await new Promise((r) => setTimeout(r, 250));
}

/** Every "activated in" line in the profile's logs, oldest first. */
function activationLines() {
  return logLines((line) => line.includes("activated in"));
}

/** The time of a log line (`2026-11-25 11:48:22.538 [info] …`), in ms. */
const at = (line) => Date.parse(line.slice(0, 23).replace(" ", "T"));

/** The lines of the profile's logs that `keep`, sorted by their time. */
function logLines(keep) {
  const found = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith(".log")) {
        for (const line of fs.readFileSync(p, "utf8").split("\n")) if (keep(line)) found.push(line.trim());
      }
    }
  };
  walk(dirs.ud);
  return found.sort((a, b) => at(a) - at(b));
}

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu"] });
try {
  for (let i = 0; i < runs; i++) {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${origin}/?folder=${encodeURIComponent(dirs.ws)}`);
    await page.locator(".explorer-folders-view .monaco-list-row").first().waitFor({ timeout: 120_000 });
    const before = activationLines().length;
    await page.keyboard.press("F1");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor();
    await input.fill(">Context Condenser: Show Log");
    await page.keyboard.press("Enter");
    for (let t = 0; t < 480 && activationLines().length === before; t++) await new Promise((r) => setTimeout(r, 250));
    const line = activationLines().at(-1);
    console.log(line ?? "no activation line found");
    // From VS Code's decision to activate (its extension host's log) to the extension's line at the
    // end of activate(): loading the bundle, activate() itself, and the host's own work between.
    const start = logLines((l) => l.includes("_doActivateExtension context-condenser.context-condenser")).at(-1);
    if (line && start) console.log(`  extension host: _doActivateExtension → activated: ${at(line) - at(start)} ms`);
    await page.close();
    await new Promise((r) => setTimeout(r, 2000));
  }
} finally {
  await browser.close();
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {}
}
