// The built webview (dist/chat.js, dist/chat.css) in real Chromium, under the extension's strict
// CSP, with a fake VS Code host that records what the page posts. Any CSP violation, page error or
// unexpected console error fails the test that caused it. Screenshots go to test-output/webview/.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { openPage, shots, useHarness } from "./harness.mjs";


// ---- Messages from the extension ------------------------------------------------------------

const text = (id, role, body, extra = {}) => ({ id, role, content: [{ type: "text", text: body }], ...extra });

const CHAT = [
  text("u1", "user", "How do I read a file in Rust?"),
  text(
    "a1",
    "assistant",
    "Use **`std::fs::read_to_string`**:\n\n```rust\nuse std::fs;\n\nfn main() -> std::io::Result<()> {\n    let text = fs::read_to_string(\"notes.txt\")?;\n    println!(\"{} bytes\", text.len());\n    Ok(())\n}\n```\n\nIt returns an `io::Result<String>`.",
  ),
];

const RECORD = {
  condense_id: "c1",
  provider_id: "native",
  reason: "threshold",
  automatic: true,
  tokens_before: 12_480,
  tokens_after: 3_120,
  cost: 0.00231,
  time_ms: 2_340,
  summary: "## Summary\n\n- The user reads `notes.txt` with `fs::read_to_string`.\n- Next: count the words.",
  at_ms: 1_700_000_000_000,
};

const CONDENSED = [
  text("u1", "user", "How do I read a file in Rust?", { condense_parent: "c1" }),
  text("a1", "assistant", "Use `std::fs::read_to_string`.", { condense_parent: "c1" }),
  text("u2", "user", "And count its lines?", { condense_parent: "c1" }),
  text("a2", "assistant", "Call `.lines().count()` on the string.", { condense_parent: "c1" }),
  text("c1.summary", "assistant", RECORD.summary, { is_summary: true, condense_id: "c1" }),
  text("u3", "user", "Now count the words."),
  text("a3", "assistant", "```rust\nlet words = text.split_whitespace().count();\n```"),
];

function state({ messages = CHAT, condensations = [], busy = false, context = {} } = {}) {
  return {
    type: "state",
    task: {
      id: "t1",
      title: "Reading files in Rust",
      created_ms: Date.now() - 3_600_000,
      updated_ms: Date.now() - 60_000,
      conversation: { messages },
      condensations,
    },
    chats: [
      { id: "t1", title: "Reading files in Rust", updated_ms: Date.now() - 60_000, messages: messages.length },
      { id: "t0", title: "Regex help", updated_ms: Date.now() - 2 * 86_400_000, messages: 12 },
    ],
    profiles: [
      { id: "local", model: "smollm2-135m", context_window: 8_192 },
      { id: "gpt", model: "gpt-4o-mini", context_window: 128_000 },
    ],
    profileId: "local",
    context: { tokens: 1_240, window: 8_192, percent: 15.1, threshold_percent: 80, limit: 6_553, source: "counted", ...context },
    busy,
  };
}

const event = (e) => ({ type: "event", taskId: "t1", event: e });

// ---- The page -------------------------------------------------------------------------------

/** Runs in the page before its scripts: the fake VS Code API and the CSP violation log. */
function fakeHost() {
  window.__sent = [];
  window.__acquired = 0;
  window.__violations = [];
  document.addEventListener(
    "securitypolicyviolation",
    (e) => window.__violations.push(`${e.violatedDirective} blocked ${e.blockedURI || "(inline)"}`),
    true,
  );
  let saved;
  window.acquireVsCodeApi = () => {
    window.__acquired += 1;
    return {
      postMessage: (message) => window.__sent.push(message),
      getState: () => saved,
      setState: (s) => (saved = s),
    };
  };
}

const harness = useHarness();

/** Opens the chat in a fresh page (see `openPage` for what fails the test). */
async function openChat(t, { theme = "dark", expectedConsoleErrors = [] } = {}) {
  const page = await openPage(t, harness.browser, { viewport: { width: 440, height: 760 }, fakeHost, expectedConsoleErrors });
  await page.goto(`${harness.server.origin}/?theme=${theme}`);
  await page.waitForFunction(() => window.__sent.length > 0);

  const chat = {
    page,
    tid: (id) => page.getByTestId(id),
    sent: () => page.evaluate(() => window.__sent),
    lastSent: async () => (await chat.sent()).at(-1),
    /** Delivers a message as the extension does: a `message` event on the window. */
    post: (message) => page.evaluate((m) => window.postMessage(m, "*"), message),
    /** Waits until the locator's text contains `expected`. */
    waitText: (locator, expected) => locator.filter({ hasText: expected }).first().waitFor(),
    /** Waits until the page posted n messages in all. */
    waitSent: (n) => page.waitForFunction((count) => window.__sent.length >= count, n),
    shot: async (name) => {
      await page.screenshot({ path: `${shots}${name}-${theme}.png`, fullPage: true });
      if (theme === "dark") await page.screenshot({ path: `${shots}${name}.png`, fullPage: true });
    },
  };
  return chat;
}

// ---- Tests ----------------------------------------------------------------------------------

describe("the chat webview under the extension's CSP", () => {
  it("acquires the VS Code API once, says it is ready and renders the state", async (t) => {
    const chat = await openChat(t);
    assert.deepEqual(await chat.sent(), [{ type: "ready" }]);
    assert.equal(await chat.page.evaluate(() => window.__acquired), 1);
    await chat.tid("empty").waitFor();

    await chat.post(state());
    await chat.tid("message-assistant").waitFor();
    assert.equal(await chat.tid("empty").count(), 0);
    assert.match(await chat.tid("meter").innerText(), /1\.2k \/ 8\.2k · 15%/);
    assert.equal(await chat.tid("profile-select").inputValue(), "local");
    const paths = harness.server.requests.filter((r) => r.status !== 200);
    assert.deepEqual(paths, [], "every request the page made was served");
  });

  it("streams an answer delta by delta, as Markdown with a highlighted code block", async (t) => {
    const chat = await openChat(t);
    await chat.post(state({ messages: [], busy: true }));
    await chat.post(event({ type: "ThinkingStart" }));
    await chat.post(event({ type: "UserMessage", message: CHAT[0] }));
    await chat.waitText(chat.tid("message-user"), "How do I read a file in Rust?");
    await chat.post(event({ type: "MessageStart", id: "a1" }));

    const answer = chat.tid("message-assistant");
    const full = CHAT[1].content[0].text;
    const deltas = [full.slice(0, 12), full.slice(12, 60), full.slice(60, 140), full.slice(140)];
    let shown = "";
    for (const delta of deltas) {
      await chat.post(event({ type: "MessageContent", id: "a1", delta }));
      shown += delta;
      // The streamed text so far is on the page (compared without Markdown syntax).
      const lastWords = shown.replace(/[`*#]/g, "").trim().split(/\s+/).slice(-1)[0];
      await chat.waitText(answer, lastWords);
      assert.equal(await answer.count(), 1);
    }
    assert.equal(await answer.getAttribute("aria-busy"), "true");
    await chat.post(event({ type: "MessageEnd", id: "a1", interrupted: null, kept: true, usage: null, cost: 0 }));
    await chat.post(event({ type: "ThinkingEnd" }));
    await chat.page.waitForSelector('[data-testid="message-assistant"][aria-busy="false"]');

    assert.equal(await answer.locator("strong code").innerText(), "std::fs::read_to_string");
    const code = answer.locator("pre code.hljs.language-rust");
    assert.match(await code.innerText(), /fs::read_to_string\("notes\.txt"\)/);
    const keyword = code.locator(".hljs-keyword").first();
    assert.equal(await keyword.innerText(), "use");
    // The token colour comes from the theme (--vscode-debugTokenExpression-name, dark: #c586c0).
    assert.equal(await keyword.evaluate((el) => getComputedStyle(el).color), "rgb(197, 134, 192)");
    assert.ok((await code.locator(".hljs-string").count()) > 0);

    await chat.post(state({ busy: false }));
    await chat.page.waitForFunction(() => document.querySelectorAll('[data-testid="message-assistant"]').length === 1);
    await chat.shot("chat");
  });

  it("offers Stop while busy and posts it", async (t) => {
    const chat = await openChat(t);
    await chat.post(state({ busy: true }));
    await chat.tid("stop").click();
    assert.deepEqual(await chat.lastSent(), { type: "stop" });
    assert.equal(await chat.tid("send").isDisabled(), true);
    assert.equal(await chat.tid("condense").isDisabled(), true);
    await chat.post(state());
    await chat.tid("stop").waitFor({ state: "detached" });
  });

  it("follows the streaming answer unless the reader scrolled up", async (t) => {
    const chat = await openChat(t);
    const long = Array.from({ length: 24 }, (_, i) =>
      text(`m${i}`, i % 2 ? "assistant" : "user", `Message ${i}: ${"words ".repeat(40)}`),
    );
    await chat.post(state({ messages: long, busy: true }));
    await chat.post(event({ type: "MessageStart", id: "a99" }));
    const log = chat.page.getByLabel("Chat messages");
    const gap = () => log.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight);
    const stream = async (word) => {
      await chat.post(event({ type: "MessageContent", id: "a99", delta: `${word} ${"more ".repeat(30)}\n\n` }));
      await chat.waitText(chat.tid("message-assistant").last(), word);
    };

    await stream("first");
    assert.ok((await gap()) <= 1, "at the end while streaming");

    await log.evaluate((el) => el.scrollTo({ top: 0 }));
    await chat.page.waitForFunction(() => document.querySelector('[aria-label="Chat messages"]').scrollTop === 0);
    await chat.page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
    await stream("second");
    assert.equal(await log.evaluate((el) => el.scrollTop), 0, "stays where the reader scrolled to");

    await log.evaluate((el) => el.scrollTo({ top: el.scrollHeight }));
    await chat.page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r())));
    await stream("third");
    assert.ok((await gap()) <= 1, "follows again once back at the end");
  });

  it("sends from the keyboard: Enter sends, Shift+Enter is a newline", async (t) => {
    const chat = await openChat(t);
    await chat.post(state());
    const input = chat.tid("input");
    await input.click();
    await chat.page.keyboard.type("first line");
    await chat.page.keyboard.press("Shift+Enter");
    await chat.page.keyboard.type("second line");
    await chat.page.keyboard.press("Enter");
    assert.deepEqual(await chat.lastSent(), { type: "send", text: "first line\nsecond line" });
    assert.equal(await input.inputValue(), "");
    assert.equal(await input.evaluate((el) => el === document.activeElement), true);
  });

  it("shows a condensation row: tokens, summary on demand, hidden messages, Undo", async (t) => {
    for (const theme of ["dark", "light"]) {
      await t.test(theme, async (t) => {
        const chat = await openChat(t, { theme });
        await chat.post(state({ messages: CONDENSED, condensations: [RECORD], context: { tokens: 6_700, percent: 81.8 } }));
        const row = chat.tid("condensation-row");
        await row.waitFor();
        assert.equal(await row.count(), 1);
        const rowText = await row.innerText();
        assert.match(rowText, /native/);
        assert.match(rowText, /12,480 → 3,120 tokens \(−75%\)/);
        assert.match(rowText, /\$0\.0023/);
        assert.match(rowText, /2\.3 s/);
        assert.match(rowText, /automatic: threshold reached/);
        // The hidden messages are not bubbles; the row stands where the summary is.
        assert.equal(await chat.tid("message-user").count(), 1);
        assert.equal(await chat.tid("meter").getAttribute("data-warning"), "true");

        assert.equal(await chat.tid("summary").count(), 0);
        await chat.tid("summary-toggle").focus();
        await chat.page.keyboard.press("Enter");
        await chat.waitText(chat.tid("summary"), "The user reads notes.txt");
        await row.getByRole("button", { name: "4 earlier messages condensed" }).click();
        await chat.waitText(row, "And count its lines?");
        await chat.shot("condensed");

        await chat.tid("undo").click();
        assert.deepEqual(await chat.lastSent(), { type: "undo", condenseId: "c1" });
      });
    }
  });

  it("shows a smart run's passes, its retention with what is missing, and a summary cut short", async (t) => {
    const SMART = {
      ...RECORD,
      provider_id: "smart",
      tokens_before: 24_310,
      tokens_after: 11_676,
      cost: 0.00412,
      passes: [
        { pass: "lossless", tokens_saved: 1_204, time_ms: 4, cost: 0 },
        { pass: "mask", tokens_saved: 8_420, time_ms: 3, cost: 0 },
        { pass: "trim_parameters", tokens_saved: 0, time_ms: 1, cost: 0, skipped: "nothing_to_condense" },
        { pass: "native", tokens_saved: 3_010, time_ms: 2_310, cost: 0.00412 },
      ],
      retention: { kept: 11, probes: 12, repaired: 3, missing: ["todo: migrate the users table"] },
      summary_truncated: true,
    };
    for (const theme of ["dark", "light", "hc"]) {
      await t.test(theme, async (t) => {
        const chat = await openChat(t, { theme });
        await chat.post(
          state({
            messages: CONDENSED,
            condensations: [SMART],
            context: { tokens: 6_700, percent: 81.8 },
          }),
        );
        const row = chat.tid("condensation-row");
        await row.waitFor();
        assert.equal(await chat.tid("passes").getAttribute("aria-label"), "Passes");
        assert.deepEqual(await chat.tid("pass").evaluateAll((els) => els.map((e) => e.textContent)), [
          "lossless −1,204",
          "mask −8,420",
          "trim_parameters skipped",
          "native −3,010",
        ]);
        // The skipped pass is dimmed, and says why when hovered.
        const skipped = chat.page.locator('[data-testid="pass"][data-skipped="true"]');
        assert.equal(await skipped.getAttribute("title"), "trim_parameters: skipped (nothing_to_condense) · 1 ms");
        const opacity = (l) => l.evaluate((e) => Number(getComputedStyle(e).opacity));
        assert.ok((await opacity(skipped)) < (await opacity(chat.tid("pass").first())), "the skipped pass is dimmed");
        // In the narrow view the list wraps between passes, never inside one.
        const lines = await chat.tid("pass").evaluateAll((els) => els.map((e) => e.getClientRects().length));
        assert.deepEqual(lines, [1, 1, 1, 1], "a pass broke across lines");

        assert.equal(await chat.tid("retention").innerText(), "retention 11/12 · 3 repaired");
        assert.match(await chat.tid("summary-truncated").innerText(), /Summary cut at the output limit/);
        await chat.tid("missing-toggle").click();
        assert.equal(await chat.tid("missing").innerText(), "todo: migrate the users table");
        // The chat's condensing total, beside the meter.
        assert.equal(await chat.tid("chat-cost").innerText(), "$0.0041");
        await chat.shot("condensed-smart");
      });
    }
  });

  it("says why a cache-aware condensation ran, what it weighed, and how much of its summary came from the cache", async (t) => {
    const CACHE = {
      ...RECORD,
      reason: "cache",
      estimate: { cost_now: 0.0312, saving: 0.184, turns: 24, trigger: 30_000, condense: true },
      cached_share: 0.874,
    };
    for (const theme of ["dark", "light"]) {
      await t.test(theme, async (t) => {
        const chat = await openChat(t, { theme });
        await chat.post(state({ messages: CONDENSED, condensations: [CACHE], context: { tokens: 3_400, percent: 41.5 } }));
        await chat.tid("condensation-row").waitFor();
        assert.match(await chat.tid("condensation-row").innerText(), /automatic: it pays for the prompt cache/);
        assert.equal(await chat.tid("cost-estimate").innerText(), "costs $0.0312 now · saves ≈$0.1840 over the next 24 turns");
        assert.equal(await chat.tid("cached-share").innerText(), "87% of the summary's input from the cache");
        // In the narrow view the figures wrap between them, and none runs out of the row.
        const row = await chat.tid("condensation-row").boundingBox();
        for (const id of ["cost-estimate", "cached-share"]) {
          const box = await chat.tid(id).boundingBox();
          assert.ok(box.x + box.width <= row.x + row.width + 1, `${id} runs out of the row`);
        }
        await chat.shot("condensed-cache");
      });
    }
  });

  it("says what a condensation that was not applied cost, and counts it in the chat's total", async (t) => {
    const chat = await openChat(t);
    const withUnapplied = state({ messages: CONDENSED, condensations: [RECORD], busy: true });
    withUnapplied.task.unapplied_cost = 0.0011;
    await chat.post(withUnapplied);
    await chat.waitText(chat.tid("chat-cost"), "$0.0034");
    await chat.post(event({ type: "CondenseStart", reason: "threshold", provider: "native", tokens: 6_600, automatic: true }));
    await chat.post(
      event({ type: "CondenseEnd", record: null, error: { kind: "insufficient_gain", message: "saved 2% of the window, below 5%" }, cost: 0.0009 }),
    );
    await chat.waitText(chat.tid("notice"), "it cost $0.0009, counted in the chat's total");
    await chat.shot("condense-not-applied");
  });

  it("shows condensing and skipped notices live during a turn", async (t) => {
    const chat = await openChat(t);
    await chat.post(state({ busy: true }));
    await chat.post(event({ type: "CondenseStart", reason: "threshold", provider: "native", tokens: 6_600, automatic: true }));
    await chat.waitText(chat.tid("condensing"), "Condensing with native…");
    await chat.post(event({ type: "CondenseEnd", record: null, error: { kind: "context_grew", message: "the summary was longer" } }));
    await chat.tid("condensing").waitFor({ state: "detached" });
    await chat.post(event({ type: "CondenseSkipped", reason: "the loop guard: condensed 1 turn ago", tokens: 6_650 }));
    await chat.waitText(chat.tid("notice"), "the loop guard: condensed 1 turn ago");
    assert.equal(await chat.tid("notice").count(), 2);
  });

  it("shows an error inline with Retry, kept across the next state", async (t) => {
    const chat = await openChat(t);
    await chat.post(state({ busy: true }));
    await chat.post(event({ type: "Error", error: { kind: "llm_rate_limit", message: "429 Too Many Requests" }, partial: "", retryable: true }));
    await chat.post(state());
    await chat.waitText(chat.tid("error"), "429 Too Many Requests");
    await chat.tid("retry").click();
    assert.deepEqual(await chat.lastSent(), { type: "retry" });
  });

  it("answers an invalid message with an error and keeps working", async (t) => {
    const chat = await openChat(t, { expectedConsoleErrors: [/invalid message \(type event\)/] });
    await chat.post(state());
    await chat.post({ type: "event", taskId: "t1", event: { type: "MessageContent", id: "a1", delta: 42 } });
    await chat.waitSent(2);
    const reply = await chat.lastSent();
    assert.equal(reply.type, "error");
    assert.match(reply.message, /invalid message \(type event\): event\.delta/);

    await chat.post(event({ type: "UserMessage", message: text("u2", "user", "still here?") }));
    await chat.waitText(chat.tid("message-user"), "still here?");
    await chat.tid("more-actions").click();
    await chat.tid("new-chat").click();
    assert.deepEqual(await chat.lastSent(), { type: "newChat" });
  });

  it("keeps its header to one row in a sidebar of normal width, the less used actions in a More Actions menu", async (t) => {
    for (const theme of ["dark", "light"]) {
      const chat = await openChat(t, { theme });
      await chat.post(state());
      await chat.tid("message-assistant").waitFor();
      for (const width of [300, 440]) {
        await chat.page.setViewportSize({ width, height: 760 });
        const tops = [];
        for (const id of ["profile-select", "condense", "chats-toggle", "more-actions"]) {
          const box = await chat.tid(id).boundingBox();
          assert.ok(box && box.x + box.width <= width, `${id} is inside the ${width}px sidebar`);
          tops.push(Math.round(box.y + box.height / 2));
        }
        assert.ok(Math.max(...tops) - Math.min(...tops) <= 2, `one row at ${width}px: centres at ${tops.join(", ")}`);
      }
      await chat.page.setViewportSize({ width: 300, height: 760 });
      const more = chat.tid("more-actions");
      assert.equal(await chat.tid("preview-button").count(), 0, "the menu's actions are hidden until it opens");
      await more.click();
      assert.equal(await more.getAttribute("aria-expanded"), "true");
      const items = chat.page.getByRole("menuitem");
      assert.deepEqual(await items.allInnerTexts(), ["Condense with…", "Preview", "Manual…", "New Chat"]);
      // The first action has the focus; the arrows move it, Escape closes the menu and gives
      // the focus back to the button.
      assert.equal(await chat.page.evaluate(() => document.activeElement?.dataset.testid), "condense-with");
      await chat.page.keyboard.press("ArrowDown");
      assert.equal(await chat.page.evaluate(() => document.activeElement?.dataset.testid), "preview-button");
      await chat.page.keyboard.press("ArrowUp");
      await chat.page.keyboard.press("ArrowUp");
      assert.equal(await chat.page.evaluate(() => document.activeElement?.dataset.testid), "new-chat", "the arrows wrap around");
      const box = await chat.tid("more-menu").boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 300, "the menu opens inside the sidebar");
      await chat.shot("header-menu");
      await chat.page.keyboard.press("Escape");
      assert.equal(await chat.tid("more-menu").count(), 0);
      assert.equal(await chat.page.evaluate(() => document.activeElement?.dataset.testid), "more-actions");
      // A click outside closes it too; a choice runs and closes it.
      await more.click();
      await chat.page.mouse.click(8, 700);
      assert.equal(await chat.tid("more-menu").count(), 0);
      await more.click();
      await chat.tid("preview-button").click();
      assert.equal(await chat.tid("more-menu").count(), 0);
      assert.equal((await chat.lastSent()).type, "preview");
      await chat.shot("header-narrow");
    }
  });
});
