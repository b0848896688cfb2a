// End-to-end scenarios of pins and the condensation preview (issue 18), run by run.mjs inside its
// UI scenario (code-server, the fixture LLM server): a message pinned in the chat view survives a
// condensation; Preview Condensation (the command, then the chat's Preview button) shows what a
// condensation will do; Discard changes nothing; Apply applies what was shown with no second LLM
// request (the fixture server counts them).

import fs from "node:fs";
import path from "node:path";

/** The conversation file the file preview works on, copied into the workspace before code-server
 *  starts (so that Quick Open lists it). */
export function preparePinWorkspace(workspace, repoRoot) {
  fs.copyFileSync(path.join(repoRoot, "tests/fixtures/small-session.json"), path.join(workspace, "preview-file.json"));
}

/**
 * `h` holds run.mjs's helpers: `page`, `run` (a palette command), `newChatWith`, `until`,
 * `check`, `llm` (the fixture server, whose requests are counted), `OUT` (screenshots) and
 * `WORKSPACE`.
 */
export async function pinPreviewScenario(h) {
  const { page, run, until, check, llm } = h;
  const step = (what) => `pin and preview: ${what}`;
  const shot = (file) => page.screenshot({ path: path.join(h.OUT, `pin-preview-${file}.png`) });
  const { chat, input, savedChat } = await h.newChatWith(page, run, "fixture", step);
  const count = (id) => chat.locator(`[data-testid=${id}]`).count();
  const saved = () => savedChat()?.conversation.messages ?? [];

  // Four turns with the fixture model: eight messages, enough for a summary.
  const turn = async (text) => {
    const before = saved().length;
    await input.fill(text);
    await input.press("Enter");
    return until(async () => {
      const last = saved().at(-1);
      return saved().length >= before + 2 && last.role === "assistant" && (await count("stop")) === 0;
    }, 30_000);
  };
  let ok = true;
  for (const i of [1, 2, 3, 4]) {
    ok = (await turn(`Turn ${i}: the parser drops nested groups after a comma in f(a, (b, c)); what next? ${"Details of the failing run. ".repeat(12)}`)) && ok;
  }
  check(ok, step("four turns answered"));

  // Pin the second user message from its bubble: the saved chat marks it, the view shows it.
  const userIds = saved().filter((m) => m.role === "user").map((m) => m.id);
  const pinnedId = userIds[1];
  const bubble = chat.locator(`[data-message-id="${pinnedId}"]`);
  await bubble.locator("[data-testid=pin]").click();
  check(await until(async () => saved().find((m) => m.id === pinnedId)?.pinned === true, 15_000), step(`pinning ${pinnedId} is saved in the chat`));
  check(await until(async () => (await bubble.locator("[data-testid=pin-marker]").count()) === 1, 10_000), step("the pinned message shows a pin marker"));
  await shot("pinned");

  // Preview Condensation from the palette (no conversation file is open: it previews the chat).
  await run("View: Close All Editors");
  await llm.clearRequests();
  await run("Context Condenser: Preview Condensation");
  const figures = chat.locator("[data-testid=preview-figures]");
  check(await until(async () => (await figures.count()) === 1, 60_000), step("the command opens the preview in the chat view"));
  const figuresText = (await figures.innerText().catch(() => "")).replace(/\s+/g, " ");
  check(/native: [\d,]+ → [\d,]+ tokens/.test(figuresText) && /estimated \$/.test(figuresText) && /cost \$/.test(figuresText),
    step(`the preview shows tokens before → after, the estimate and the cost (${figuresText})`));
  const hiddenIds = await chat.locator("[data-testid=preview-hidden] li").count();
  check(hiddenIds > 0, step(`the preview lists the ${hiddenIds} messages it hides`));
  check(/Primary request/.test(await chat.locator("[data-testid=preview-added]").innerText().catch(() => "")), step("the preview shows the summary"));
  check((await chat.locator("[data-testid=send]").isDisabled()) && (await chat.locator("[data-testid=condense]").isDisabled()),
    step("while the preview is open the chat takes no input"));
  await shot("preview");
  const afterFirst = (await llm.requests()).length;
  check(afterFirst === 1, step(`one LLM request wrote the preview's summary (${afterFirst})`));

  // Discard: nothing changes.
  await chat.locator("[data-testid=preview-discard]").click();
  check(await until(async () => (await count("preview")) === 0, 10_000), step("Discard closes the preview"));
  check((savedChat()?.condensations.length ?? -1) === 0, step("Discard applies nothing"));

  // The chat's Preview button, then Apply: exactly what was shown, with no second request.
  await llm.clearRequests();
  await chat.locator("[data-testid=more-actions]").click();
  await chat.locator("[data-testid=preview-button]").click();
  check(await until(async () => (await figures.count()) === 1, 60_000), step("the Preview button opens the preview"));
  const shownSummary = await chat.locator("[data-testid=preview-added]").innerText().catch(() => "");
  const previewRequests = (await llm.requests()).length;
  await chat.locator("[data-testid=preview-apply]").click();
  check(await until(async () => (savedChat()?.condensations.length ?? 0) === 1, 15_000), step("Apply condenses the chat"));
  check(await until(async () => (await count("preview")) === 0, 10_000), step("Apply closes the preview"));
  const total = (await llm.requests()).length;
  check(previewRequests === 1 && total === 1, step(`the summary was written once: ${previewRequests} request for the preview, ${total} in all after Apply`));
  const after = savedChat();
  const summary = after?.conversation.messages.find((m) => m.is_summary);
  const summaryText = summary?.content.map((b) => b.text ?? "").join("\n") ?? "";
  check(summaryText.length > 0 && shownSummary.includes(summaryText.split("\n").find((l) => l.trim().length > 10)?.replace(/^#+\s*/, "").trim() ?? "\u0000"),
    step("the applied summary is the one the preview showed"));

  // The pinned message survived: visible (not hidden), unchanged, still pinned.
  const pinned = after?.conversation.messages.find((m) => m.id === pinnedId);
  check(Boolean(pinned?.pinned) && !pinned?.condense_parent, step(`the pinned message ${pinnedId} is still in the model's view after the condensation`));
  const messages = after?.conversation.messages ?? [];
  const at = messages.findIndex((m) => m.id === pinnedId);
  const hidden = (m) => Boolean(m.condense_parent);
  check(messages.slice(0, at).some(hidden) && messages.slice(at + 1).some(hidden),
    step(`the summary hid messages on both sides of it (${messages.filter(hidden).map((m) => m.id).join(", ")})`));
  check(await until(async () => (await chat.locator(`[data-message-id="${pinnedId}"] [data-testid=pin-marker]`).count()) === 1, 10_000),
    step("the pinned message still shows its marker after the condensation"));
  await shot("applied");
  fs.writeFileSync(path.join(h.OUT, "pin-preview-chat.json"), JSON.stringify(after, null, 2));

  // A conversation file in the editor: the command previews it (in the chat view); Apply
  // replaces the editor's text with exactly the result shown, with no second request.
  const file = path.join(h.WORKSPACE, "preview-file.json");
  const original = JSON.parse(fs.readFileSync(file, "utf8"));
  // Opened from the Explorer with the mouse: the chat's webview keeps the keyboard focus after
  // Apply, and Quick Open typed there did not reach the workbench.
  const tab = page.locator(".tab", { hasText: "preview-file.json" }).first();
  await page.keyboard.press("Escape");
  await run("View: Show Explorer");
  const entry = page.locator(".explorer-folders-view .monaco-list-row", { hasText: "preview-file.json" }).first();
  await entry.waitFor({ timeout: 15_000 });
  await entry.dblclick();
  await tab.waitFor({ timeout: 15_000 });
  await llm.clearRequests();
  await run("Context Condenser: Preview Condensation");
  const panel = chat.locator("[data-testid=preview]");
  check(await until(async () => (await figures.count()) === 1 && /preview-file\.json/.test(await panel.innerText()), 60_000),
    step("on a conversation file the command previews the file, named in the panel"));
  await shot("file-preview");
  await chat.locator("[data-testid=preview-apply]").click();
  check(await until(async () => (await count("preview")) === 0, 15_000), step("Apply on the file's preview closes it"));
  await run("File: Save All");
  const written = async () => JSON.parse(fs.readFileSync(file, "utf8"));
  check(await until(async () => (await written()).messages.some((m) => m.is_summary), 15_000), step("Apply wrote the summary into the file"));
  const now = await written().catch(() => ({ messages: [] }));
  check(original.messages.every((m) => now.messages.some((n) => n.id === m.id)), step("every original message is still in the file"));
  const fileRequests = (await llm.requests()).length;
  check(fileRequests === 1, step(`one LLM request for the file's preview and its Apply (${fileRequests})`));
}
