// One code-server start of its own for a group of end-to-end scenarios: a fresh profile with the
// given user settings and the VSIX installed, code-server in its own process group on 127.0.0.1,
// Chromium on the workspace, and the moves every scenario makes (a palette command, a toast, an
// API key typed in the password box, a file opened). `stop()` closes the browser and code-server.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

/**
 * `ctx`: run.mjs's shared { OUT, VSIX, CODE_SERVER, env, launch, freePort, until }.
 * `name` prefixes the profile's folder, the log and the screenshots; `trust`: workspace trust on
 * (the other starts turn it off).
 */
export async function startWorkbench(ctx, { name, settings, workspace, trust = false }) {
  const { OUT, until } = ctx;
  const D = path.join(OUT, `${name}-profile`);
  const dirs = { ud: path.join(D, "ud"), exts: path.join(D, "exts"), xdg: path.join(D, "xdg"), tmp: path.join(D, "tmp") };
  Object.values(dirs).forEach((d) => fs.mkdirSync(d, { recursive: true }));
  const userSettings = path.join(dirs.ud, "User", "settings.json");
  fs.mkdirSync(path.dirname(userSettings), { recursive: true });
  fs.writeFileSync(userSettings, JSON.stringify(settings, null, 2));
  const env = { ...ctx.env, XDG_CONFIG_HOME: dirs.xdg, XDG_DATA_HOME: dirs.xdg, XDG_CACHE_HOME: dirs.xdg, TMPDIR: dirs.tmp };
  const profileArgs = ["--user-data-dir", dirs.ud, "--extensions-dir", dirs.exts];
  execFileSync(ctx.CODE_SERVER, [...profileArgs, "--install-extension", ctx.VSIX], { env, stdio: "inherit" });

  const port = await ctx.freePort();
  const child = spawn(
    ctx.CODE_SERVER,
    [...profileArgs, "--bind-addr", `127.0.0.1:${port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check",
      ...(trust ? [] : ["--disable-workspace-trust"]), "--disable-getting-started-override", workspace],
    { env, detached: true, stdio: ["ignore", fs.openSync(path.join(OUT, `${name}-code-server-${port}.log`), "w"), "inherit"] },
  );
  const stopServer = async () => {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {}
    await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
  };
  const origin = `http://127.0.0.1:${port}`;
  await until(async () => (await fetch(`${origin}/healthz`)).ok, 60_000);
  const browser = await ctx.launch();
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const quickInput = page.locator(".quick-input-widget input");
  let blockedShots = 0;
  const w = {
    page,
    dirs,
    userSettings,
    quickInput,
    settingsNow: () => JSON.parse(fs.readFileSync(userSettings, "utf8")),
    shot: (file) => page.screenshot({ path: path.join(OUT, `${name}-${file}.png`) }),
    /** Runs a palette command; a freshly installed extension's command may not be listed at first. */
    run: async (title) => {
      /** F1, then the title typed; false when the palette closed or never opened meanwhile. Just
       *  after a reload the keyboard may be in a webview that is not ready (F1 goes nowhere: the
       *  editor area takes the focus and F1 is pressed again), and a view that opens (a preview
       *  made ready) may take the focus and close the palette while the title is typed. */
      const typed = async () => {
        await page.keyboard.press("F1");
        for (let press = 0; press < 3 && !(await quickInput.waitFor({ timeout: 5_000 }).then(() => true, () => false)); press++) {
          await page.locator(".monaco-workbench .part.editor").first().click({ position: { x: 20, y: 20 } }).catch(() => {});
          await page.keyboard.press("F1");
        }
        return quickInput.fill(`>${title}`, { timeout: 5_000 }).then(() => true, () => false);
      };
      for (let attempt = 0; ; attempt++) {
        const item = page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
        if ((await typed()) && (await item.waitFor({ timeout: 5_000 }).then(() => true, () => false))) break;
        await page.keyboard.press("Escape");
        if (attempt === 10) throw new Error(`the palette does not list "${title}" (${await w.blocking()})`);
      }
      await page.keyboard.press("Enter");
    },
    /** What covers the workbench when the palette cannot be used: the text of any modal dialog,
     *  and a picture of it (numbered: a later one does not overwrite it). */
    blocking: async () => {
      const dialogs = await page.locator(".monaco-dialog-box, [aria-modal=true]").allInnerTexts().catch(() => []);
      const file = `${name}-blocked-${++blockedShots}.png`;
      await page.screenshot({ path: path.join(OUT, file) }).catch(() => {});
      return `${dialogs.length ? `dialog: ${JSON.stringify(dialogs.join(" | ").slice(0, 400))}` : "no dialog"}; see ${file}`;
    },
    /** Close All Editors, answering Don't Save to each editor that asks (an untitled one does,
     *  a moment after the command: the question is waited for, not looked for once). */
    closeAllEditors: async () => {
      await w.run("View: Close All Editors");
      const dontSave = page.locator(".monaco-dialog-box .monaco-button", { hasText: /Don't Save/ }).first();
      while (await dontSave.waitFor({ timeout: 2_000 }).then(() => true, () => false)) {
        await dontSave.click();
        await dontSave.waitFor({ state: "detached", timeout: 5_000 }).catch(() => {});
      }
    },
    toast: (re) => page.locator(".notifications-toasts .notification-toast", { hasText: re }).first(),
    clearToasts: () => w.run("Notifications: Clear All Notifications"),
    /** Set API Key…: the profile picked (there is no pick when it is the only profile), the key
     *  typed in the password box. */
    setKey: async (profile, key) => {
      await w.run("Context Condenser: Set API Key…");
      const row = page.locator(".quick-input-list .monaco-list-row", { hasText: profile }).first();
      const box = page.locator(".quick-input-widget input[type=password]");
      await row.or(box).first().waitFor();
      if (!(await box.isVisible())) {
        await quickInput.fill(profile);
        await page.waitForTimeout(300);
        await page.keyboard.press("Enter");
      }
      await box.waitFor();
      await box.fill(key);
      await page.keyboard.press("Enter");
      await page.waitForTimeout(300);
    },
    /** Open Session File… on `file`, typed into the simple file dialog. */
    openSession: async (file) => {
      await w.run("Context Condenser: Open Session File…");
      // The dialog fills in its folder first: type the path only after that. It may still write
      // its folder over a path typed (its listing arrives late): then Enter opens the folder and
      // the dialog stays, and the path is typed again.
      const dialog = page.locator(".quick-input-widget", { hasText: "Open Session File" });
      await dialog.waitFor();
      await until(async () => (await quickInput.inputValue()).endsWith("/"), 10_000);
      for (let attempt = 0; attempt < 3; attempt++) {
        await quickInput.fill(file);
        await until(async () => (await quickInput.inputValue()) === file, 5_000);
        await page.waitForTimeout(500);
        if ((await quickInput.inputValue()) !== file) continue;
        await page.keyboard.press("Enter");
        if (await dialog.waitFor({ state: "hidden", timeout: 5_000 }).then(() => true, () => false)) return;
      }
    },
    /** The chat view's frame. */
    chat: () => page.frameLocator("iframe.webview").frameLocator("#active-frame"),
    stop: async () => {
      await browser.close();
      await stopServer();
    },
  };
  try {
    await page.goto(`${origin}/?folder=${encodeURIComponent(workspace)}`);
    await page.locator(".explorer-folders-view .monaco-list-row").first().waitFor({ timeout: 120_000 });
  } catch (e) {
    await w.stop();
    throw e;
  }
  return w;
}
