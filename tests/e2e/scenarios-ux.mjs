// End-to-end scenarios of issue 18's VS Code work, on their own code-server start with a FRESH
// profile (no contextCondenser settings at all): the first-run welcome to a first answer without
// touching settings.json, rename and delete of a chat (a screenshot after each), Condense Manually… and Apply Pasted
// Summary, and Open Session File… condensed to a new file. run.mjs calls `uxScenarios` with what
// it shares (the fixture LLM, the code-server install, the checks); screenshots go to
// test-output/e2e/ux-*.png.
import fs from "node:fs";
import path from "node:path";

/** The settings that keep the workbench quiet (E2E.md), shared with run.mjs. */
export const QUIET = {
  "chat.disableAIFeatures": true,
  "workbench.startupEditor": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "security.workspace.trust.enabled": false,
  "git.enabled": false,
  "workbench.tips.enabled": false,
  "workbench.colorTheme": "Default Dark Modern",
};

/** The formats Open Session File… is tried with, and the file name each session gets. */
export const SESSION_FORMATS = {
  openai: "openai-session.json",
  anthropic: "anthropic-session.json",
  "claude-code": "claude-code-session.jsonl",
  codex: "codex-rollout.jsonl",
  cline: "api_conversation_history.json",
};

/**
 * A session of another client, big enough to condense: 8 turns (16 messages) written as that
 * client writes them — OpenAI or Anthropic JSON, a Claude Code session (JSONL events chained by
 * parentUuid), a Codex rollout (JSONL `session_meta` and `response_item`s), a Cline/Roo
 * `api_conversation_history.json` (Anthropic messages with `ts`).
 */
export function sessionFile(format) {
  const para = (i, who) =>
    `${who} turn ${i}: the parser drops nested parentheses when a group follows a comma, as in f(a, (b, c)); ` +
    "we looked at parse_group, the tokenizer and test_nested_groups, and kept trailing commas working. ".repeat(4);
  const turns = [];
  for (let i = 1; i <= 8; i++) turns.push(["user", para(i, "User")], ["assistant", para(i, "Assistant")]);
  const system = "You are a coding assistant.";
  const at = (n) => new Date(Date.UTC(2026, 10, 20, 9, 0, n * 7)).toISOString();
  const jsonl = (lines) => `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`;
  switch (format) {
    case "openai":
      return JSON.stringify({ messages: [{ role: "system", content: system }, ...turns.map(([role, content]) => ({ role, content }))] }, null, 2);
    case "anthropic":
      return JSON.stringify({ system, messages: turns.map(([role, text]) => ({ role, content: [{ type: "text", text }] })) }, null, 2);
    case "claude-code":
      return jsonl(
        turns.map(([role, text], n) => ({
          parentUuid: n === 0 ? null : `e2e-${n - 1}`,
          isSidechain: false,
          userType: "external",
          cwd: "/home/dev/parser",
          sessionId: "0e2e0000-0000-4000-8000-000000000001",
          version: "1.0.83",
          type: role,
          message:
            role === "user"
              ? { role, content: text }
              : { id: `msg_e2e_${n}`, type: "message", role, model: "claude-sonnet-4-5", content: [{ type: "text", text }] },
          uuid: `e2e-${n}`,
          timestamp: at(n),
        })),
      );
    case "codex":
      return jsonl([
        { timestamp: at(0), type: "session_meta", payload: { id: "0199e2e0-0000-7000-8000-000000000001", timestamp: at(0), cwd: "/home/dev/parser", originator: "codex_cli_rs", instructions: system } },
        ...turns.map(([role, text], n) => ({
          timestamp: at(n + 1),
          type: "response_item",
          payload: { type: "message", role, content: [{ type: role === "user" ? "input_text" : "output_text", text }] },
        })),
      ]);
    case "cline":
      return JSON.stringify(turns.map(([role, text], n) => ({ role, content: [{ type: "text", text }], ts: Date.parse(at(n)) })), null, 2);
  }
  throw new Error(`no session format ${format}`);
}

/**
 * `ctx`: { OUT, VSIX, CODE_SERVER, env, launch, freePort, until, frameWith, startWorkbench, check, log, llm,
 * RIGHT_KEY, CANARY, repoRoot }.
 */
export async function uxScenarios(ctx) {
  const { OUT, check, log, until } = ctx;
  const D = path.join(OUT, "ux-profile");
  const WORKSPACE = path.join(OUT, "ux-workspace");
  fs.mkdirSync(WORKSPACE, { recursive: true });
  fs.copyFileSync(path.join(ctx.repoRoot, "tests/fixtures/small-session.json"), path.join(WORKSPACE, "manual.json"));
  for (const [format, name] of Object.entries(SESSION_FORMATS)) fs.writeFileSync(path.join(WORKSPACE, name), sessionFile(format));
  const w = await ctx.startWorkbench(ctx, { name: "ux", settings: QUIET, workspace: WORKSPACE });
  const { page, quickInput, run, toast, shot, settingsNow, openSession, closeAllEditors } = w;
  try {
    await page.locator(".explorer-folders-view .monaco-list-row").first().click();
    // The click opened the first file in a preview: the first run starts with no editor.
    await page.keyboard.press("Control+K");
    await page.keyboard.press("Control+W");
    const typeKey = async (key) => {
      const box = page.locator(".quick-input-widget input[type=password]");
      await box.waitFor({ timeout: 15_000 });
      await box.fill(key);
      await page.keyboard.press("Enter");
    };
    const openFile = async (name) => {
      await page.keyboard.press("Control+P");
      await quickInput.fill(name);
      await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor();
      await page.keyboard.press("Enter");
      await page.locator(".tab.active", { hasText: name }).first().waitFor({ timeout: 15_000 });
    };

    // ---- (a) the first run, from a profile without any contextCondenser setting ----------------
    {
      const step = (what) => `first run: ${what}`;
      await run("Context Condenser: New Chat");
      const chat = page.frameLocator("iframe.webview").frameLocator("#active-frame");
      const welcome = chat.locator("[data-testid=welcome]");
      check(await until(() => welcome.isVisible(), 60_000), step("the chat view shows the welcome"));
      const input = chat.locator("[data-testid=input]");
      check(await input.isDisabled(), step("the input is disabled"));
      const reason = await input.getAttribute("placeholder");
      check(/No model is set up/.test(reason ?? ""), step(`the input says why (${reason})`));
      check(await until(async () => (await chat.locator("[data-testid=setup-claude-code], [data-testid=setup-option]").count()) > 0, 15_000),
        step("the welcome lists the CLI agents the engine knows"));
      await shot("first-run-welcome");

      const other = chat.locator("[data-testid=setup-other]");
      await other.getByLabel("Base URL").fill(`${ctx.llm.origin}/v1`);
      await other.getByLabel("Model").fill("fixture");
      // A wrong key first: the test fails, nothing is saved.
      await other.getByRole("button").click();
      await typeKey(ctx.CANARY);
      const status = chat.locator("[data-testid=setup-status]");
      check(await until(async () => (await status.getAttribute("data-state")) === "failed", 30_000), step("a wrong key fails Test Connection"));
      check(/llm_auth/.test(await status.innerText()), step("the failure names the rejected key (llm_auth)"));
      check(!("contextCondenser.profiles" in settingsNow()), step("nothing was saved after the failed test"));
      await shot("first-run-failed");
      // The right key: tested, saved by the extension, the input enabled.
      await other.getByRole("button").click();
      await typeKey(ctx.RIGHT_KEY);
      check(await until(async () => !(await welcome.isVisible()) && (await input.isEnabled()), 30_000), step("after Test Connection the input is enabled"));
      const saved = settingsNow();
      const profile = saved["contextCondenser.profiles"]?.[0];
      check(profile?.base_url === `${ctx.llm.origin}/v1` && saved["contextCondenser.chatProfile"] === profile?.id,
        step(`the extension wrote the profile and chose it (${JSON.stringify(profile)})`));
      check(!JSON.stringify(saved).includes(ctx.RIGHT_KEY), step("settings.json holds no key"));
      await input.fill("Hello! What can you do?");
      await input.press("Enter");
      const answer = chat.locator("[data-testid=message-assistant]").last();
      check(await until(async () => /\S/.test(await answer.innerText()) && (await chat.locator("[data-testid=stop]").count()) === 0, 60_000),
        step("the first answer arrives"));
      await shot("first-run-answer");

      // ---- (c) rename and delete ---------------------------------------------------------------
      const chats = path.join(w.dirs.ud, "User", "globalStorage", "context-condenser.context-condenser", "chats");
      const files = () => (fs.existsSync(chats) ? fs.readdirSync(chats).filter((f) => f.endsWith(".json")) : []);
      check(await until(async () => files().length === 1, 10_000), "chats: the first chat is saved");
      await chat.locator("[data-testid=chats-toggle]").click();
      await chat.locator("[data-testid=chat-rename]").first().click();
      await quickInput.waitFor();
      await quickInput.fill("Renamed by the e2e test");
      await page.keyboard.press("Enter");
      const title = () => JSON.parse(fs.readFileSync(path.join(chats, files()[0]), "utf8")).title;
      check(await until(async () => title() === "Renamed by the e2e test", 10_000), "chats: rename writes the new title");
      await chat.locator("[data-testid=chats-toggle]").click().catch(() => {});
      if ((await chat.locator("[data-testid=chat-item]").count()) === 0) await chat.locator("[data-testid=chats-toggle]").click();
      check(await until(async () => /Renamed by the e2e test/.test(await chat.locator("[data-testid=chat-item]").first().innerText()), 10_000),
        "chats: the list shows the new title");
      await shot("chats-renamed");
      await chat.locator("[data-testid=chat-delete]").first().click();
      const dialog = page.locator(".monaco-dialog-box");
      check(await until(() => dialog.isVisible(), 10_000), "chats: delete asks in a modal dialog");
      await shot("chats-delete-confirm");
      await dialog.locator(".monaco-button", { hasText: "Delete" }).first().click();
      check(await until(async () => files().length === 0, 10_000), "chats: the chat file is gone after the confirmation");
      check(await until(async () => (await chat.locator("[data-testid=message-assistant]").count()) === 0, 10_000), "chats: the view shows a new chat");
      // The Chats list open after the delete: the chat is gone from it too.
      const toggle = chat.locator("[data-testid=chats-toggle]");
      if ((await toggle.getAttribute("aria-expanded")) !== "true") await toggle.click();
      check(await until(async () => /No chats yet/.test(await chat.locator("nav.chats").innerText()), 10_000),
        "chats: the list is empty after the delete");
      await shot("chats-deleted");
      await toggle.click();
    }

    // ---- (b) the manual round trip on a conversation file ----------------------------------------
    {
      const step = (what) => `manual: ${what}`;
      await openFile("manual.json");
      await run("Context Condenser: Condense Manually…");
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "Open in Editor" }).first().waitFor();
      await quickInput.fill("Open in Editor");
      await page.keyboard.press("Enter");
      check(await until(async () => (await page.locator(".tab", { hasText: "Untitled" }).count()) >= 2, 15_000), step("the request and an empty answer editor open"));
      const request = await page.locator(".editor-group-container").first().innerText();
      check(/summar/i.test(request), step("the request editor holds the summary request"));
      await toast(/Paste the LLM's answer/).waitFor({ timeout: 10_000 });
      await shot("manual-request");
      // The answer editor (beside, focused): the pasted answer.
      await page.locator(".editor-group-container").last().locator(".view-lines").click();
      await page.keyboard.type("The user and the assistant debugged a parser that drops nested parentheses; next: test_nested_groups.");
      await run("Context Condenser: Apply Pasted Summary");
      check(await toast(/Condensed manually: [\d,]+ → [\d,]+ tokens/).waitFor({ timeout: 20_000 }).then(() => true, () => false),
        step("the pasted answer is applied, with tokens before → after and Undo"));
      await shot("manual-applied");
      await openFile("manual.json");
      await page.keyboard.press("Control+S");
      const savedFile = () => JSON.parse(fs.readFileSync(path.join(WORKSPACE, "manual.json"), "utf8"));
      check(await until(async () => savedFile().messages.some((m) => m.is_summary && JSON.stringify(m).includes("test_nested_groups")), 10_000),
        step("the saved file holds the pasted summary"));
      const ids = JSON.parse(fs.readFileSync(path.join(ctx.repoRoot, "tests/fixtures/small-session.json"), "utf8")).messages.map((m) => m.id);
      check(ids.every((id) => savedFile().messages.some((m) => m.id === id)), step("every original message is still in the file (hidden, not deleted)"));
      check((await page.locator(".tab", { hasText: "Untitled-2" }).count()) === 0, step("the answer's editor closed once applied"));
      await run("Notifications: Clear All Notifications");
      await closeAllEditors();
    }

    // ---- (b2) the manual round trip on the chat: the button, the pasted answer, preview, apply ----
    {
      const step = (what) => `manual (chat): ${what}`;
      const chat = page.frameLocator("iframe.webview").frameLocator("#active-frame");
      await run("Context Condenser: New Chat");
      const input = chat.locator("[data-testid=input]");
      const answers = () => chat.locator("[data-testid=message-assistant]").count();
      for (const i of [1, 2, 3, 4]) {
        const before = await answers();
        await input.fill(`Turn ${i}: the importer reads orders.csv twice when a file ends in a newline; where should I look?`);
        await input.press("Enter");
        await until(async () => (await answers()) > before && (await chat.locator("[data-testid=stop]").count()) === 0, 60_000);
      }
      check((await answers()) === 4, step("a chat of four turns"));
      await chat.locator("[data-testid=more-actions]").click();
      await chat.locator("[data-testid=manual-button]").click();
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "Open in Editor" }).first().waitFor();
      await quickInput.fill("Open in Editor");
      await page.keyboard.press("Enter");
      check(await toast(/the request is open/).waitFor({ timeout: 15_000 }).then(() => true, () => false),
        step("the chat's request opens in an editor, and an empty editor waits for the answer"));
      const request = await page.locator(".editor-group-container").first().innerText();
      check(/orders\.csv/.test(request), step("the request holds the chat's messages"));
      await page.locator(".editor-group-container").last().locator(".view-lines").click();
      await page.keyboard.type("The user is chasing an importer that reads orders.csv twice; next: check read_orders for a trailing newline.");
      await run("Context Condenser: Apply Pasted Summary");
      const preview = chat.locator("[data-testid=preview]");
      check(await until(async () => (await preview.count()) > 0 && /read_orders/.test(await preview.innerText()), 30_000),
        step("the pasted summary shows as a preview in the chat"));
      await shot("manual-chat-preview");
      await chat.locator("[data-testid=preview-apply]").click();
      const row = chat.locator("[data-testid=condensation-row]", { hasText: "manual" }).last();
      check(await row.waitFor({ timeout: 15_000 }).then(() => true, () => false), step("Apply makes it a condensation row of the chat (manual)"));
      await row.scrollIntoViewIfNeeded().catch(() => {});
      await shot("manual-chat-applied");
      await run("Notifications: Clear All Notifications");
      await closeAllEditors();
    }

    // ---- (d) Open Session File… and Condense to a new file ----------------------------------------
    {
      // Summaries by the fixture server (the profile the first run made): native made the default
      // in the settings panel (the default, smart, would write its summary only past its target).
      await run("Context Condenser: Open Settings");
      const panel = await ctx.frameWith(page, "settings", 60_000);
      const native = panel?.locator("[data-testid=provider-card][data-provider=native]");
      await native?.locator("[data-testid=provider-default]").click();
      check(await until(async () => settingsNow()["contextCondenser.defaultProvider"] === "native", 15_000), "session file: native made the default in the settings panel");
      await closeAllEditors();
      for (const [format, name] of Object.entries(SESSION_FORMATS)) {
        const step = (what) => `session file (${format}): ${what}`;
        const file = path.join(WORKSPACE, name);
        const original = fs.readFileSync(file);
        await openSession(file);
        check(await toast(/16 messages, [\d,]+ tokens/).waitFor({ timeout: 15_000 }).then(() => true, () => false), step("opened, with its size"));
        check(await until(async () => /ctx \d+% · [\d.k]+\/[\d.]+k/.test(await page.locator(".statusbar-item", { hasText: "ctx" }).first().innerText()), 10_000),
          step("the status-bar meter measures it"));
        await shot(`session-${format}-open`);
        await run("Notifications: Clear All Notifications");
        await run("Context Condenser: Condense Now");
        const condensed = path.join(WORKSPACE, `${name.replace(/\.jsonl?$/, "")}.condensed.json`);
        check(await until(async () => fs.existsSync(condensed), 30_000), step(`Condense writes ${path.basename(condensed)}`));
        check(await toast(/written to .*condensed\.json \(the original is unchanged\)/).waitFor({ timeout: 10_000 }).then(() => true, () => false),
          step("the notification names the new file"));
        const result = fs.existsSync(condensed) ? JSON.parse(fs.readFileSync(condensed, "utf8")) : { messages: [] };
        check(result.messages.some((m) => m.is_summary), step("the new file holds the summary"));
        check(fs.readFileSync(file).equals(original), step("the original is unchanged"));
        await shot(`session-${format}-condensed`);
        await run("Notifications: Clear All Notifications");
        await closeAllEditors();
      }
    }
  } catch (e) {
    check(false, `ux scenarios: ${e.message}`);
    await shot("failure").catch(() => {});
  } finally {
    await w.stop();
  }
  // No key anywhere in the profile or the workspace.
  const holding = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) {
        const bytes = fs.readFileSync(p);
        if (bytes.includes(ctx.RIGHT_KEY) || bytes.includes(ctx.CANARY)) holding.push(path.relative(OUT, p));
      }
    }
  };
  walk(D);
  walk(WORKSPACE);
  if (holding.length) log(`files holding a key: ${holding.join(", ")}`);
  check(holding.length === 0, "ux: the keys typed into the welcome are in no settings, log, storage or chat file");
}
