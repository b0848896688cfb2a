// What every page test shares: the built bundle checked, the page server and Chromium started
// once per file, and a fresh page per test whose CSP violations, page errors and console errors
// fail the test that caused them.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { after, before } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startServer } from "./server.mjs";

const dist = fileURLToPath(new URL("../../dist/", import.meta.url));

/** Where screenshots go. */
export const shots = fileURLToPath(new URL("../../../test-output/webview/", import.meta.url));

/** Checks dist/, then starts the page server and Chromium; `close()` stops both. */
export async function startHarness() {
  assert.deepEqual(
    existsSync(dist) ? readdirSync(dist).sort() : [],
    ["chat.css", "chat.js"],
    "dist/ must hold exactly chat.js and chat.css: run `npm run build --workspace webview-ui` first",
  );
  mkdirSync(shots, { recursive: true });
  const server = await startServer();
  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  return {
    server,
    browser,
    close: async () => {
      await browser.close();
      await server.close();
    },
  };
}

/**
 * The harness for one test file: started before its tests, closed after them. Read `server` and
 * `browser` from it inside tests.
 */
export function useHarness() {
  const harness = {};
  before(async () => {
    Object.assign(harness, await startHarness());
  });
  after(async () => {
    await harness.close?.();
  });
  return harness;
}

/**
 * A fresh page in its own context, with `fakeHost(arg)` run before the bundle. `t.after` closes it
 * once it has checked that nothing went wrong: no CSP violation, no page error, no console error
 * but those the test expects.
 */
export async function openPage(t, browser, { viewport, fakeHost, arg, expectedConsoleErrors = [] }) {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !expectedConsoleErrors.some((re) => re.test(m.text()))) {
      problems.push(`console error: ${m.text()}`);
    }
  });
  await page.addInitScript(fakeHost, arg);
  t.after(async () => {
    const violations = await page.evaluate(() => window.__violations).catch((e) => [`unreadable: ${e}`]);
    await context.close();
    assert.deepEqual(violations, [], "CSP violations");
    assert.deepEqual(problems, [], "page errors");
  });
  return page;
}
