// End-to-end scenario of issue 28, on a code-server start of its own: the gateway started from
// the Gateway view, the real Claude Code (`claude -p`, pinned by scripts/setup-agents) run by the
// test through it against the fixture server's scripted agent (under a priced model's name,
// the script named by a header, so the gateway prices its books; the fixture bills by Anthropic's
// cache rules), and the view showing the session, its condensation row, the tokens not sent and
// the money condensing saved or lost, with its sign (a session ending soon after its condensation
// has not paid for the cache it rewrote). Then Undo (the next request goes out uncondensed, checked at
// the fixture server), Pause (requests go out untouched), `native` (the condensing profile, its
// key set with Set API Key…, writes the summary the session's next request carries), screenshots
// in light and dark themes,
// and the port closed by Stop Gateway, by a reload of the window and by disabling the extension
// (a connect that fails).
// Screenshots go to test-output/e2e/gateway-*.png.
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { agentsBin, closedPort, explain, offlineEnv, run, workspace } from "../agents/clients.mjs";
import { startFixtureLlm } from "../js/servers.mjs";
import { QUIET } from "./scenarios-ux.mjs";

/** A model with a published price (the gateway's books price it), and the fixture's script it
 *  plays, named by the `x-fixture-script` header Claude Code sends (`ANTHROPIC_CUSTOM_HEADERS`). */
const MODEL = "claude-sonnet-4-5-20250929";
const SCRIPT = "script-agent-6";
const MARKER = "[Context Condenser";

const connects = (port) =>
  new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });

/**
 * `ctx`: run.mjs's shared { OUT, until, startWorkbench, check, llm, RIGHT_KEY, frameWith, freePort, ... }.
 */
export async function gatewayScenario(ctx) {
  const { OUT, check, until, llm, frameWith } = ctx;
  const step = (what) => `gateway: ${what}`;
  const bin = agentsBin();
  const deadProxy = `http://127.0.0.1:${await closedPort()}`;
  const scratch = [];
  let llm2;
  // big.txt as tests/agents/gateway.test.mjs has it: a heavy first slice, then ten light lines.
  const ws = workspace(scratch, "e2e-gateway", { lines: 510, lineWords: (i) => (i <= 500 ? 16 : 0) });
  const port = await ctx.freePort();
  const WORKSPACE = path.join(OUT, "gateway-workspace");
  fs.mkdirSync(WORKSPACE, { recursive: true });
  fs.writeFileSync(path.join(WORKSPACE, "NOTES.md"), "Agents here go through the Context Condenser gateway.\n");
  // The model that writes `native`'s summaries, at a fixture server of its own (its scripted agent
  // counts its rounds by task, and Claude Code's tasks begin alike): a profile from the start, its
  // key set while the palette is fresh.
  llm2 = await startFixtureLlm({ apiKey: ctx.RIGHT_KEY });
  const WRITER = "fixture-writer";
  const writer = { id: "writer", kind: "anthropic", base_url: llm2.origin, model: WRITER, context_window: 200000, max_output: 2000 };
  const settings = {
    ...QUIET,
    "contextCondenser.profiles": [writer],
    "contextCondenser.condensingProfile": "writer",
    "workbench.colorTheme": "Default Light Modern",
    "contextCondenser.gateway.port": port,
    "contextCondenser.gateway.anthropicUpstream": llm.origin,
    "contextCondenser.gateway.openaiUpstream": llm.origin,
    "contextCondenser.gateway.geminiUpstream": llm.origin,
    "contextCondenser.gateway.windows": { [MODEL]: 30000 },
    // At the threshold: the condensation comes late in the run, and the summary (native) goes in
    // at the next request (under cache-aware it would wait for a free moment).
    "contextCondenser.gateway.policy": "threshold",
    // New integrated terminals get ANTHROPIC_BASE_URL while the gateway runs (below).
    "contextCondenser.gateway.terminals": true,
  };
  const w = await ctx.startWorkbench(ctx, { name: "gateway", settings, workspace: WORKSPACE }).catch(async (e) => {
    await llm2.stop();
    throw e;
  });
  const { page, shot } = w;
  const claude = (prompt, more = [], where = ws) =>
    run(path.join(bin, "claude"), ["-p", prompt, "--model", MODEL, "--allowedTools", "Read", "Bash", ...more], {
      env: offlineEnv(deadProxy, where.home, {
        ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}/anthropic`,
        ANTHROPIC_API_KEY: ctx.RIGHT_KEY,
        ANTHROPIC_CUSTOM_HEADERS: `x-fixture-script: ${SCRIPT}`,
        DISABLE_AUTOUPDATER: "1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_TELEMETRY: "1",
        DISABLE_ERROR_REPORTING: "1",
      }),
      cwd: where.ws,
    });
  /** The requests of the Claude Code session the fixture received (its own model only). */
  const sessionRequests = async (server = llm) =>
    (await server.requests()).filter((r) => r.path === "/v1/messages" && r.body?.model === MODEL && r.body?.tools);
  try {
    await w.setKey("writer", ctx.RIGHT_KEY);
    await w.run("Context Condenser: Show Gateway");
    let view = await frameWith(page, "gateway", 60_000);
    check(Boolean(view), step("the Gateway view opens"));
    if (!view) return;
    await view.locator("[data-testid=gateway-start]").click();
    check(await until(async () => /Listening on 127\.0\.0\.1:\d+/.test(await view.locator("[data-testid=gateway-status]").innerText()), 30_000),
      step("Start Gateway in the view starts it"));
    check(await connects(port), step(`the gateway listens on 127.0.0.1:${port}`));

    await llm.clearRequests();
    const first = await claude(`Read the file ${ws.file} and tell me its marker.`);
    check(first.code === 0 && new RegExp(`Markers seen: ${ws.marker}`).test(first.stdout), step(`claude -p through the gateway exits 0 with the final answer (${explain(first).split("\n")[0]})`));
    const requests = await sessionRequests();
    check(requests.some((r) => JSON.stringify(r.body.messages).includes(MARKER)), step(`a forwarded request carries the gateway's condensation (${requests.length} requests)`));

    const session = view.locator("[data-testid=gateway-session]").first();
    check(await until(async () => (await session.count()) === 1 && /Claude Code/.test(await session.innerText()), 30_000), step("the view shows the Claude Code session"));
    const title = session.locator("[data-testid=gateway-title]");
    check(await until(async () => (await title.count()) === 1 && (await title.innerText()).startsWith("Read the file "), 15_000),
      step(`the session's row names its task (${(await title.count()) ? await title.innerText() : "no title"})`));
    check(await until(async () => /^[1-9]\d* condensations?$/.test(await session.locator("[data-testid=gateway-condensations]").innerText()), 15_000),
      step("the session's row counts its condensation"));
    check(/[1-9][\d,]* tokens not sent/.test(await session.locator("[data-testid=gateway-saved]").innerText()), step("and the tokens not sent"));
    // The money: the gateway's books (its /stats), shown with their sign.
    const stats = await fetch(`http://127.0.0.1:${port}/stats`).then((r) => r.json());
    const booked = Object.values(stats.sessions)[0]?.cost_saved_usd ?? 0;
    const money = session.locator("[data-testid=gateway-money]");
    check(await until(async () => (await money.count()) === 1, 15_000), step(`the row shows the money condensing saved (the books: ${booked.toFixed(6)})`));
    const moneyText = (await money.count()) ? await money.innerText() : "";
    const amount = Math.abs(booked).toFixed(4);
    check(
      booked < 0 ? moneyText.startsWith(`\u2212\u2060$${amount} so far; `) : moneyText === `saved $${amount}`,
      step(`with its sign: "${moneyText}"`),
    );
    await shot("view-money-light");
    await session.locator(".gw-session__head").click();
    check(await until(async () => (await view.locator("[data-testid=condensation-row]").count()) >= 1, 15_000), step("opened, it shows the condensation row"));
    const row = view.locator("[data-testid=condensation-row]").first();
    const rowText = await row.innerText();
    check(/[\d,]+ → [\d,]+ tokens/.test(rowText) && !/\$0\.0000|\b0 ms\b/.test(rowText), step(`the row says what the request became, no zero cost or time (${rowText.split("\n").slice(0, 2).join(" | ")})`));
    check(/^Messages \d+–\d+ \([\d,]+ tokens\) hidden; in their place (the ledger|a summary) of [\d,]+ tokens\.$/.test(await row.locator("[data-testid=condensation-detail]").innerText()),
      step("and what was hidden"));
    await shot("view-light");

    // Undo: the next request goes out without the condensation.
    await view.locator("[data-testid=gateway-undo]").click();
    check(await until(async () => (await view.locator("[data-testid=condensation-row]").count()) === 0, 15_000), step("Undo removes the condensation row"));
    const before = (await sessionRequests()).length;
    const again = await claude("Say done.", ["--continue"]);
    const afterUndo = (await sessionRequests()).slice(before);
    check(again.code === 0 && afterUndo.length >= 1, step(`claude -p --continue answers through the gateway (${afterUndo.length} requests)`));
    check(afterUndo.length >= 1 && !JSON.stringify(afterUndo[0].body.messages).includes(MARKER) && afterUndo[0].bytes > 50_000,
      step("the request after Undo went out uncondensed (the heavy read is back)"));

    // Pause: requests go out as the client sent them.
    await view.locator("[data-testid=gateway-pause]").click();
    check(await until(async () => (await view.locator('[data-testid=gateway-session][data-paused="true"]').count()) === 1, 15_000), step("Pause marks the session paused"));
    const paused0 = (await sessionRequests()).length;
    const paused = await claude("Say done again.", ["--continue"]);
    const afterPause = (await sessionRequests()).slice(paused0);
    check(paused.code === 0 && afterPause.length >= 1 && afterPause.every((r) => !JSON.stringify(r.body.messages).includes(MARKER)),
      step(`while paused the requests go out untouched (${afterPause.length})`));

    // The dark theme, picked as a user picks it (the palette's "Preferences: Color Theme", not
    // the marketplace's browser, which this offline machine cannot reach).
    await page.keyboard.press("F1");
    await w.quickInput.fill(">Preferences: Color Theme");
    const command = page.locator(".quick-input-list .monaco-list-row", { has: page.locator(".label-name", { hasText: /^Preferences: Color Theme$/ }) });
    await command.first().click();
    await page.locator(".quick-input-list .monaco-list-row", { hasText: "Dark Modern" }).first().waitFor();
    await w.quickInput.fill("Dark Modern");
    await page.waitForTimeout(500);
    await page.keyboard.press("Enter");
    check(await until(async () => (await page.locator(".monaco-workbench.vs-dark").count()) === 1, 15_000), step("the dark theme is on"));
    await page.waitForTimeout(1000);
    await shot("view-dark");

    // The state is private and holds no key.
    const stateDir = path.join(w.dirs.ud, "User", "globalStorage", "context-condenser.context-condenser", "gateway");
    const state = path.join(stateDir, "state.json");
    const sessions = path.join(stateDir, "sessions");
    const stateFiles = () => [state, ...(fs.existsSync(sessions) ? fs.readdirSync(sessions).map((n) => path.join(sessions, n)) : [])];
    check(
      (await until(async () => fs.existsSync(state) && stateFiles().length > 1, 10_000)) && stateFiles().every((f) => (fs.statSync(f).mode & 0o077) === 0),
      step("the gateway's state is saved, a file per session, readable by the user alone"),
    );
    check(!stateFiles().some((f) => fs.readFileSync(f, "utf8").includes(ctx.RIGHT_KEY)), step("the state holds no key"));

    // native: the summary written in the background by the user's condensing profile (its key
    // set with Set API Key…), carried by the session's next request. The settings file is
    // written, and read at the window's reload.
    fs.writeFileSync(
      w.userSettings,
      JSON.stringify(
        {
          ...w.settingsNow(),
          "contextCondenser.gateway.provider": "native",
          "contextCondenser.gateway.anthropicUpstream": llm2.origin,
        },
        null,
        2,
      ),
    );
    await w.run("Developer: Reload Window");
    await page.locator(".monaco-workbench .statusbar").first().waitFor({ timeout: 120_000 });
    view = await frameWith(page, "gateway-start", 60_000);
    await view.locator("[data-testid=gateway-start]").click();
    check(await until(() => connects(port), 30_000), step("Start Gateway in the view starts it with the native provider"));
    const ws2 = workspace(scratch, "e2e-gateway-native", { lines: 510, lineWords: (i) => (i <= 500 ? 16 : 0) });
    const summarized = await claude(`Read the file ${ws2.file} and tell me its marker.`, [], ws2);
    check(summarized.code === 0, step(`claude -p through the native gateway exits 0 (${explain(summarized).split("\n")[0]})`));
    const writerCalls = () => llm2.requests().then((all) => all.filter((r) => r.body?.model === WRITER));
    check(await until(async () => (await writerCalls()).length > 0, 30_000), step("the condensing model was asked for the summary"));
    check((await writerCalls()).every((r) => r.headers["x-api-key"] === ctx.RIGHT_KEY), step("with the key stored for it"));
    check(await until(async () => (await view.locator("[data-testid=gateway-summaries]").count()) === 1, 30_000), step("the view counts the summary"));
    const beforeNext = (await sessionRequests(llm2)).length;
    const next = await claude("Say done.", ["--continue"], ws2);
    const carried = (await sessionRequests(llm2)).slice(beforeNext);
    check(next.code === 0 && carried.length >= 1 && JSON.stringify(carried[0].body.messages).includes(`Summary of the earlier conversation (written by ${WRITER})`),
      step("the session's next request carries the summary"));
    await shot("view-native");

    // A new integrated terminal, with the gateway running and terminals on: the real `claude -p`
    // typed there, with no base URL of its own (only its key, its home and the fixture's script
    // on the command line), goes through the gateway.
    const ws3 = workspace(scratch, "e2e-gateway-terminal", { lines: 510, lineWords: (i) => (i <= 500 ? 16 : 0) });
    const typed = path.join(ws3.root, "terminal.txt");
    // The key from a file: a command typed in a terminal lands in the shell's history.
    const keyFile = path.join(ws3.root, "key");
    fs.writeFileSync(keyFile, ctx.RIGHT_KEY, { mode: 0o600 });
    const proxies = ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"].flatMap((n) => [`${n}=${deadProxy}`, `${n.toLowerCase()}=${deadProxy}`]).join(" ");
    const terminal = async (command) => {
      await w.run("Terminal: Create New Terminal");
      await page.locator(".terminal-wrapper.active .xterm").first().waitFor({ timeout: 30_000 });
      await page.waitForTimeout(2000); // The shell's prompt.
      await page.keyboard.type(command);
      await page.keyboard.press("Enter");
    };
    const sessionsBefore = await view.locator("[data-testid=gateway-session]").count();
    const beforeTerminal = (await sessionRequests(llm2)).length;
    await terminal(
      `cd ${ws3.ws} && echo "base=$ANTHROPIC_BASE_URL gemini=$GOOGLE_GEMINI_BASE_URL" > ${typed} && HOME=${ws3.home} ${proxies} NO_PROXY=127.0.0.1,localhost ` +
        `ANTHROPIC_API_KEY="$(cat ${keyFile})" ANTHROPIC_CUSTOM_HEADERS='x-fixture-script: ${SCRIPT}' DISABLE_AUTOUPDATER=1 ` +
        `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 ` +
        `${path.join(bin, "claude")} -p 'Read the file ${ws3.file} and tell me its marker.' --model ${MODEL} --allowedTools Read Bash >> ${typed} 2>&1; echo "exit=$?" >> ${typed}`,
    );
    const read = () => (fs.existsSync(typed) ? fs.readFileSync(typed, "utf8") : "");
    check(await until(async () => /exit=\d+/.test(read()), 180_000), step("claude -p typed in a new terminal ends"));
    await shot("terminal");
    check(read().includes(`base=http://127.0.0.1:${port}/anthropic gemini=http://127.0.0.1:${port}/gemini\n`),
      step(`the new terminal has ANTHROPIC_BASE_URL and GOOGLE_GEMINI_BASE_URL of the gateway (${read().split("\n")[0]})`));
    check(/exit=0/.test(read()) && read().includes(`Markers seen: ${ws3.marker}`), step(`and claude -p there answers through it (${read().split("\n").slice(-3).join(" | ")})`));
    check((await sessionRequests(llm2)).length > beforeTerminal, step("its requests reached the upstream through the gateway"));
    check(await until(async () => (await view.locator("[data-testid=gateway-session]").count()) > sessionsBefore, 30_000),
      step("the Gateway view shows the terminal's session"));

    // Stop closes the port; started again, a reload of the window closes it too.
    await view.locator("[data-testid=gateway-stop]").click();
    check(await until(async () => !(await connects(port)), 15_000), step("Stop Gateway closes the port"));
    const after = path.join(ws3.root, "after-stop.txt");
    await terminal(`echo "base=\${ANTHROPIC_BASE_URL:-unset} gemini=\${GOOGLE_GEMINI_BASE_URL:-unset}" > ${after}`);
    check(await until(async () => fs.existsSync(after), 60_000) && fs.readFileSync(after, "utf8") === "base=unset gemini=unset\n",
      step(`after Stop Gateway a new terminal has neither variable (${fs.existsSync(after) ? fs.readFileSync(after, "utf8").trim() : "no file"})`));
    await w.run("Context Condenser: Start Gateway");
    check(await until(() => connects(port), 30_000), step("Start Gateway (the command) opens it again"));
    await w.run("Developer: Reload Window");
    check(await until(async () => !(await connects(port)), 30_000), step("reloading the window closes the port"));
    // With gateway.enabled on (written to the settings file, read at the next start), the gateway
    // starts with VS Code: no command, no view.
    await page.locator(".monaco-workbench .statusbar").first().waitFor({ timeout: 120_000 });
    fs.writeFileSync(w.userSettings, JSON.stringify({ ...w.settingsNow(), "contextCondenser.gateway.enabled": true }, null, 2));
    await w.run("Developer: Reload Window");
    check(await until(() => connects(port), 90_000), step("with gateway.enabled on, the gateway starts with VS Code"));
    // Disabled, the extension stops when the window reloads, as VS Code asks; though enabled, the
    // gateway does not come back. First the window shows the gateway's status bar item: its
    // extension host is connected to this window (reloaded before, code-server kept a host that
    // had not finished connecting alive, with its port open).
    await page.locator(".monaco-workbench .statusbar").getByText(`Gateway :${port}`).first().waitFor({ timeout: 120_000 });
    await w.run("Extensions: Disable All Installed Extensions");
    await page.waitForTimeout(1000);
    await w.run("Developer: Reload Window");
    await page.locator(".monaco-workbench .statusbar").first().waitFor({ timeout: 120_000 });
    // The old extension host may take a moment to end (more so with the terminals above open):
    // closed within 30 s, and still closed 5 s later.
    const closed = await until(async () => !(await connects(port)), 30_000);
    await page.waitForTimeout(5000);
    check(closed && !(await connects(port)), step("disabling the extension closes the port for good"));
  } catch (e) {
    check(false, step(e.message.split("\n")[0]));
    await shot("failure").catch(() => {});
  } finally {
    await llm2?.stop();
    await w.stop();
    for (const dir of scratch) fs.rmSync(dir, { recursive: true, force: true });
  }
}
