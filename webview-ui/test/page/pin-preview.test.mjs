// Pins and the condensation preview in the built chat webview, in real Chromium under the
// extension's CSP, with a fake host (see chat.test.mjs and harness.mjs: any CSP violation, page
// error or unexpected console error fails the test). Screenshots go to test-output/webview/.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { openPage, shots, useHarness } from "./harness.mjs";

const text = (id, role, body, extra = {}) => ({ id, role, content: [{ type: "text", text: body }], ...extra });

const CHAT = [
  text("m1", "user", "Make the parser accept nested groups."),
  text("m2", "assistant", "I read `src/parser.rs`; groups are parsed by `parse_group`."),
  text("m3", "user", "Never rename public functions; keep `parse_line` as it is.", { pinned: true }),
  text("m4", "assistant", "Understood. I changed `parse_group` to recurse."),
  text("m5", "user", "Now add tests."),
  text("m6", "assistant", "Added three tests in `tests/groups.rs`."),
];

function state({ busy = false } = {}) {
  return {
    type: "state",
    task: {
      id: "t1",
      title: "Nested groups",
      created_ms: Date.now() - 3_600_000,
      updated_ms: Date.now() - 60_000,
      conversation: { messages: CHAT },
      condensations: [],
    },
    chats: [{ id: "t1", title: "Nested groups", updated_ms: Date.now() - 60_000, messages: CHAT.length }],
    profiles: [{ id: "local", model: "smollm2-135m", context_window: 8_192 }],
    profileId: "local",
    context: { tokens: 6_240, window: 8_192, percent: 76.2, threshold_percent: 80, limit: 6_553, source: "counted" },
    busy,
  };
}

const PREVIEW = {
  task_id: "t1",
  provider_id: "native",
  estimated_cost: 0.00212,
  tokens_before: 6_240,
  tokens_after: 1_310,
  condense_id: "c1",
  hidden: [
    { id: "m2", role: "assistant", tokens: 2_400, text: "I read `src/parser.rs`; groups are parsed by `parse_group`." },
    { id: "m4", role: "assistant", tokens: 1_900, text: "Understood. I changed `parse_group` to recurse." },
  ],
  added: [
    {
      id: "c1.summary",
      role: "assistant",
      tokens: 380,
      is_summary: true,
      text: "## Summary\n\n- `parse_group` now recurses.\n\n### State ledger\n- Files edited: `src/parser.rs`",
    },
  ],
  cost: 0.00187,
};

function fakeHost() {
  window.__sent = [];
  window.__violations = [];
  document.addEventListener(
    "securitypolicyviolation",
    (e) => window.__violations.push(`${e.violatedDirective} blocked ${e.blockedURI || "(inline)"}`),
    true,
  );
  window.acquireVsCodeApi = () => ({
    postMessage: (message) => window.__sent.push(message),
    getState: () => undefined,
    setState: () => {},
  });
}

const harness = useHarness();

async function openChat(t) {
  const page = await openPage(t, harness.browser, { viewport: { width: 440, height: 900 }, fakeHost });
  await page.goto(`${harness.server.origin}/?theme=dark`);
  await page.waitForFunction(() => window.__sent.length > 0);
  return {
    page,
    tid: (id) => page.getByTestId(id),
    lastSent: () => page.evaluate(() => window.__sent.at(-1)),
    post: (message) => page.evaluate((m) => window.postMessage(m, "*"), message),
  };
}

describe("pins and the condensation preview", () => {
  it("marks a pinned message and posts pin and unpin", async (t) => {
    const chat = await openChat(t);
    await chat.post(state());
    const pinned = chat.page.locator('[data-message-id="m3"]');
    await pinned.getByTestId("pin-marker").waitFor();
    assert.equal(await chat.page.locator('[data-testid="pin-marker"]').count(), 1);
    await pinned.getByRole("button", { name: "Unpin" }).click();
    assert.deepEqual(await chat.lastSent(), { type: "pin", id: "m3", pinned: false });
    await chat.page.locator('[data-message-id="m5"]').getByRole("button", { name: "Pin" }).click();
    assert.deepEqual(await chat.lastSent(), { type: "pin", id: "m5", pinned: true });
    await chat.page.screenshot({ path: `${shots}pins.png`, fullPage: true });
  });

  it("shows the preview, locks the chat while it is open, and posts Apply and Discard", async (t) => {
    const chat = await openChat(t);
    await chat.post(state());
    await chat.tid("more-actions").click();
    await chat.tid("preview-button").click();
    assert.deepEqual(await chat.lastSent(), { type: "preview" });
    await chat.post(state({ busy: true }));
    await chat.post({ type: "preview", source: { kind: "chat" }, running: true });
    await chat.tid("preview").filter({ hasText: "Running the provider" }).waitFor();
    assert.equal(await chat.tid("preview-estimate").count(), 0, "no figure before the core's estimate");
    // The core's estimate, before the model is called: shown at once, with no Apply yet.
    const estimate = { task_id: "t1", provider_id: "native", needs: "llm", tokens_before: 6_240, estimated_cost: 0.00212 };
    await chat.post({ type: "preview", source: { kind: "chat" }, running: true, estimate });
    const shown = chat.tid("preview-estimate");
    await shown.waitFor();
    assert.match(await shown.innerText(), /native: 6,240 tokens now/);
    assert.match(await shown.innerText(), /estimated \$0\.0021/);
    assert.match(await chat.tid("preview").innerText(), /The model is writing the summary…/);
    assert.equal(await chat.tid("preview-apply").count(), 0);
    await chat.page.screenshot({ path: `${shots}preview-estimate.png`, fullPage: true });
    await chat.post(state());
    await chat.post({ type: "preview", source: { kind: "chat" }, running: false, preview: PREVIEW });
    const figures = chat.tid("preview-figures");
    await figures.waitFor();
    assert.match(await figures.innerText(), /6,240 → 1,310 tokens \(−79%\)/);
    assert.match(await figures.innerText(), /estimated \$0\.0021/);
    assert.match(await figures.innerText(), /cost \$0\.0019/);
    assert.equal(await chat.tid("preview-hidden").locator("li").count(), 2);
    assert.match(await chat.tid("preview-added").innerText(), /State ledger/);
    assert.equal(await chat.tid("send").isDisabled(), true);
    assert.equal(await chat.tid("condense").isDisabled(), true);
    assert.equal(await chat.tid("pin").count(), 0);
    await chat.page.screenshot({ path: `${shots}preview.png`, fullPage: true });
    await chat.tid("preview-apply").click();
    assert.deepEqual(await chat.lastSent(), { type: "applyPreview" });
    await chat.tid("preview-discard").click();
    assert.deepEqual(await chat.lastSent(), { type: "discardPreview" });
    await chat.post({ type: "preview", source: { kind: "chat" }, running: false });
    await chat.tid("preview").waitFor({ state: "detached" });
    assert.equal(await chat.tid("send").isDisabled(), true, "empty input");
    assert.ok((await chat.tid("pin").count()) > 0);
  });
});
