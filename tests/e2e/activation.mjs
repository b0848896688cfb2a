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
// The baseline: an extension that does nothing but log one line when its command activates it, so
// that the extension host's own share of the interval below can be told from ours.
const BASELINE = path.join(OUT, "baseline");
fs.mkdirSync(BASELINE, { recursive: true });
fs.writeFileSync(
  path.join(BASELINE, "package.json"),
  JSON.stringify({
    name: "activation-baseline",
    displayName: "Activation baseline",
    description: "An empty extension, the baseline of tests/e2e/activation.mjs",
    publisher: "bench",
    version: "0.0.1",
    license: "MIT",
    engines: { vscode: "^1.90.0" },
    main: "./extension.js",
    activationEvents: ["onCommand:baseline.show"],
    contributes: { commands: [{ command: "baseline.show", title: "Activation Baseline: Show" }] },
  }),
);
fs.writeFileSync(
  path.join(BASELINE, "extension.js"),
  `const vscode = require("vscode");
exports.activate = (context) => {
  const log = vscode.window.createOutputChannel("Activation Baseline", { log: true });
  log.info("baseline reached activate");
  context.subscriptions.push(log, vscode.commands.registerCommand("baseline.show", () => log.show()));
};
`,
);
fs.writeFileSync(path.join(BASELINE, "README.md"), "An empty extension: the activation baseline.\n");
const vsce = path.join(repoRoot, "node_modules", ".bin", "vsce");
execFileSync(vsce, ["package", "--allow-missing-repository", "--skip-license", "-o", path.join(OUT, "baseline.vsix")], { cwd: BASELINE, stdio: "ignore" });
execFileSync(CODE_SERVER, [...profileArgs, "--install-extension", path.join(OUT, "baseline.vsix")], { env, stdio: "ignore" });
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

/** Runs the palette's entry `title` once the palette lists it (Enter before the list is filled
 *  ran nothing in an early window). */
async function pick(page, title) {
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor({ timeout: 60_000 });
  await page.keyboard.press("Enter");
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
  /** Activates an extension by its palette command and returns the interval from the extension
   *  host's `_doActivateExtension` line to the extension's line `reached` (ours: the end of
   *  activate(); the empty one's: its activate()). */
  const activate = async (page, { command, id, reached }) => {
    const before = logLines(reached).length;
    // The palette, opened again if a key went to a panel that was still taking the focus.
    const input = page.locator(".quick-input-widget input");
    for (let k = 0; k < 10 && !(await input.isVisible().catch(() => false)); k++) {
      await page.keyboard.press("Escape");
      await page.keyboard.press("F1");
      await input.waitFor({ state: "visible", timeout: 2_000 }).catch(() => {});
    }
    await input.fill(`>${command}`);
    await pick(page, command);
    for (let t = 0; t < 480 && logLines(reached).length === before; t++) await new Promise((r) => setTimeout(r, 250));
    const line = logLines(reached).at(-1);
    const start = logLines((l) => l.includes(`_doActivateExtension ${id}`)).at(-1);
    return { line, ms: line && start ? at(line) - at(start) : undefined };
  };
  const ours = { command: "Context Condenser: Show Log", id: "context-condenser.context-condenser", reached: (l) => l.includes("activated in") };
  const empty = { command: "Activation Baseline: Show", id: "bench.activation-baseline", reached: (l) => l.includes("baseline reached activate") };
  for (let i = 0; i < runs; i++) {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await page.goto(`${origin}/?folder=${encodeURIComponent(dirs.ws)}`);
    await page.locator(".explorer-folders-view .monaco-list-row").first().waitFor({ timeout: 120_000 });
    // The first activation in a window pays for the host's first one: take turns going first.
    const order = i % 2 === 0 ? [ours, empty] : [empty, ours];
    for (const ext of order) {
      const { line, ms } = await activate(page, ext);
      if (ext === ours) console.log(line ?? "no activation line found");
      console.log(`  ${ext === ours ? "Context Condenser" : "the empty extension"}${ext === order[0] ? " (first)" : ""}: _doActivateExtension → ${ext === ours ? "activated" : "activate"}: ${ms ?? "?"} ms`);
    }
    await page.close();
    await new Promise((r) => setTimeout(r, 2000));
  }
} finally {
  await browser.close();
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {}
}
