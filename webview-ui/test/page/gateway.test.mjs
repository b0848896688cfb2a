// The Gateway view of the built bundle (dist/chat.js with data-view="gateway") in real Chromium,
// under the extension's strict CSP, with a fake extension that answers as gatewayView.ts does. Its
// state is the real core's: a gateway in the built wasm package is sent a Claude Code-shaped
// session that crosses its threshold, and the view is given that gateway's report and sessions.
// Screenshots go to test-output/webview/gateway-{light,dark}.png.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import { openPage, shots, useHarness } from "./harness.mjs";

const require = createRequire(import.meta.url);
const { CondenseEngine } = require("../../../extension/wasm/condense_wasm.js");
const newEngine = () =>
  new CondenseEngine({
    fetch: async () => {
      throw new Error("the page tests make no request");
    },
    now: () => 0,
    log() {},
  });
const engine = newEngine();

// ---- A real gateway's state --------------------------------------------------------------------

const TASK = "Fix the failing test in src/parse.rs and keep the public API unchanged.";
const LATER = "Also: never call unwrap in library code.";
const file = (k) => Array.from({ length: 30 }, (_, i) => `${i}\tlet value_${k}_${i} = compute(&input, ${i}); // module ${k}\n`).join("");
/** Starts `engine`'s gateway with `provider` and sends it a Claude Code session that crosses the
 *  threshold; the summary jobs it hands out (`native`). */
function crossThreshold(engine, provider) {
  const gw = engine.startGateway({ port: 4141, provider, thresholdPercent: 80, policy: "threshold", windows: { "claude-sonnet-4-5": 8000 }, observe: false, anthropicUpstream: "https://api.anthropic.com", openaiUpstream: "https://api.openai.com", geminiUpstream: "https://generativelanguage.googleapis.com" });
  const messages = [{ role: "user", content: [{ type: "text", text: TASK }] }];
  const jobs = [];
  for (let k = 0; k < 14; k++) {
    const id = `toolu_${k}`;
    messages.push({ role: "assistant", content: [{ type: "tool_use", id, name: "Read", input: { file_path: `/repo/src/module_${k}.rs` } }] });
    const result = [{ type: "tool_result", tool_use_id: id, content: file(k) }];
    if (k === 2) result.push({ type: "text", text: LATER });
    messages.push({ role: "user", content: result });
    const body = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 64, messages, metadata: { user_id: "user_a_account__session_0a1b2c3d-0000-4000-8000-000000000001" } });
    const forward = gw.request({ method: "POST", path: "/v1/messages?beta=true", wire: "anthropic", userAgent: "claude-cli/2.1.332 (external, cli)", headers: [] }, Buffer.from(body));
    jobs.push(...forward.jobs);
  }
  return { gw, jobs };
}
const { gw } = crossThreshold(engine, "smart");
const NAME = Object.keys(gw.report().sessions)[0];
// The upstream's answer reports its usage, cache writes and reads included: the view prices it.
const head = gw.answer({ session: NAME, headers: [["content-type", "text/event-stream"]] });
const usage = { input_tokens: 40, cache_creation_input_tokens: 1_200, cache_read_input_tokens: 30_000, output_tokens: 500 };
gw.answerChunk(head.reader, Buffer.from(`event: message_start\ndata: ${JSON.stringify({ type: "message_start", message: { usage } })}\n\n`));
gw.answerEnd(head.reader);
const report = gw.report();
const STATE = { type: "state", port: 4141, report, sessions: [gw.session(NAME)] };
const PREVIEW = { type: "preview", preview: gw.preview(NAME) };

/** A real gateway's state after a Claude Code session (its breakpoint on the last message, as
 *  Claude Code sends it) that condensed at its threshold and ended two requests later, each
 *  answer's usage reported as Anthropic bills it — the request as forwarded written to the cache
 *  after the prefix read (its tokens the gateway's own count): the condensation wrote the cache
 *  again and the two requests after it have not paid that back. */
function lossState() {
  const engine = newEngine();
  const gw = engine.startGateway({ port: 4141, provider: "smart", thresholdPercent: 80, policy: "threshold", windows: { "claude-sonnet-4-5": 16000 }, observe: false, anthropicUpstream: "https://api.anthropic.com", openaiUpstream: "https://api.openai.com", geminiUpstream: "https://generativelanguage.googleapis.com" });
  const system = [{ type: "text", text: "You are Claude Code. ".repeat(400), cache_control: { type: "ephemeral" } }];
  const messages = [{ role: "user", content: [{ type: "text", text: TASK }] }];
  let name;
  let previous = 0;
  let left;
  for (let k = 0; left !== 0; k++) {
    const id = `toolu_${k}`;
    messages.push({ role: "assistant", content: [{ type: "tool_use", id, name: "Read", input: { file_path: `/repo/src/module_${k}.rs` } }] });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: id, content: file(k) }] });
    const marked = structuredClone(messages);
    marked.at(-1).content.at(-1).cache_control = { type: "ephemeral" };
    const body = JSON.stringify({ model: "claude-sonnet-4-5", max_tokens: 64, system, messages: marked, metadata: { user_id: "user_a_account__session_0a1b2c3d-0000-4000-8000-000000000002" } });
    const forward = gw.request({ method: "POST", path: "/v1/messages?beta=true", wire: "anthropic", userAgent: "claude-cli/2.1.332 (external, cli)", headers: [] }, Buffer.from(body));
    name = forward.session;
    const stats = gw.report().sessions[name];
    const total = stats.last_tokens_forwarded;
    const condensed = stats.condensations > 0;
    // Before the condensation the previous request is read; at it, only the system prompt is.
    const read = condensed && left === undefined ? 2_000 : Math.min(previous, total);
    const usage = { input_tokens: 0, cache_read_input_tokens: read, cache_creation_input_tokens: total - read, output_tokens: 50 };
    const head = gw.answer({ session: name, bill: forward.bill, headers: [["content-type", "text/event-stream"]] });
    gw.answerChunk(head.reader, Buffer.from(`event: message_start\ndata: ${JSON.stringify({ type: "message_start", message: { usage } })}\n\n`));
    gw.answerEnd(head.reader);
    previous = total;
    left = condensed ? (left === undefined ? 2 : left - 1) : undefined;
  }
  return { type: "state", port: 4141, report: gw.report(), sessions: [gw.session(name)] };
}

/** The fake extension: records what the page posts, answers `ready` with the state and
 *  `preview` with the preview, and a pause with the session paused. */
function fakeHost({ state, preview }) {
  window.__sent = [];
  window.__violations = [];
  document.addEventListener("securitypolicyviolation", (e) => window.__violations.push(`${e.violatedDirective}: ${e.blockedURI}`));
  const deliver = (message) => setTimeout(() => window.postMessage(message, "*"), 0);
  window.acquireVsCodeApi = () => ({
    postMessage: (m) => {
      window.__sent.push(m);
      if (m.type === "ready") deliver(state);
      if (m.type === "preview") deliver(preview);
      if (m.type === "pause") {
        const next = structuredClone(state);
        next.report.sessions[m.session].paused = m.paused;
        deliver(next);
      }
    },
    getState: () => undefined,
    setState: () => {},
  });
}

const harness = useHarness();

async function openGateway(t, theme, arg = { state: STATE, preview: PREVIEW }) {
  const page = await openPage(t, harness.browser, { viewport: { width: 420, height: 900 }, fakeHost, arg });
  await page.goto(`${harness.server.origin}/?view=gateway&theme=${theme}`);
  await page.getByTestId("gateway").waitFor();
  return page;
}

describe("the Gateway view", () => {
  it("shows each session with its client, meter and saving, and opened, its condensation rows and controls", async (t) => {
    assert.ok(report.totals.condensations >= 1, "the real gateway condensed the session");
    for (const theme of ["light", "dark"]) {
      const page = await openGateway(t, theme);
      const tid = (id) => page.getByTestId(id);
      await tid("gateway-session").waitFor();
      assert.match(await tid("gateway-status").innerText(), /Listening on 127\.0\.0\.1:4141/);
      assert.equal(await tid("gateway-client").innerText(), "Claude Code");
      assert.match(await tid("gateway-condensations").innerText(), /^[1-9]\d* condensations?$/);
      assert.match(await tid("gateway-saved").innerText(), /[1-9][\d,]* tokens not sent/);
      // Sonnet's prices: 40 × $3 + 1,200 × $3.75 + 30,000 × $0.30 + 500 × $15 per million.
      assert.equal(await tid("gateway-billed").innerText(), "$0.0211 billed");
      await page.locator(".gw-session__head").click();
      await tid("condensation-row").first().waitFor();
      await tid("summary-toggle").first().click();
      assert.match(await tid("summary").first().innerText(), /never call unwrap in library code/, "the ledger keeps the user's words");
      await tid("gateway-preview").click();
      await tid("gateway-preview-result").waitFor();
      assert.match(await tid("gateway-preview-result").innerText(), /Next condensation: messages \d+–\d+/);
      await page.screenshot({ path: `${shots}gateway-${theme}.png`, fullPage: true });
      await tid("gateway-pause").click();
      await page.locator('[data-testid="gateway-session"][data-paused="true"]').waitFor();
      assert.equal(await tid("gateway-pause").innerText(), "Resume");
      await tid("gateway-undo").click();
      await tid("gateway-condense").click();
      const sent = await page.evaluate(() => window.__sent.map((m) => m.type));
      assert.deepEqual(sent, ["ready", "preview", "pause", "undo", "condenseNext"]);
    }
  });

  it("says why a session has no summary (native, no model to write it), the ledger standing in", async (t) => {
    const native = newEngine();
    const { gw: nativeGw, jobs } = crossThreshold(native, "native");
    assert.ok(jobs.length >= 1, "the crossing handed out a summary job");
    for (const job of jobs) assert.equal(nativeGw.dropJob(job, "no condensing model: choose one in the settings panel").used, false);
    const name = Object.keys(nativeGw.report().sessions)[0];
    const state = { type: "state", port: 4141, report: nativeGw.report(), sessions: [nativeGw.session(name)] };
    const page = await openGateway(t, "dark", { state, preview: PREVIEW });
    await page.getByTestId("gateway-session").waitFor();
    assert.match(
      await page.getByTestId("gateway-summary-note").innerText(),
      /^the summary of messages \d+\.\.\d+ was not used: no condensing model: choose one in the settings panel \(the ledger stands in\)$/,
    );
    await page.screenshot({ path: `${shots}gateway-summary-note.png`, fullPage: true });
    assert.equal(await page.getByTestId("gateway-summaries").count(), 0);
    assert.match(await page.getByTestId("gateway-condensations").innerText(), /^[1-9]\d* condensations?$/);
  });

  it("shows a session that condensing has cost money so far as the loss it is, and when it pays back", async (t) => {
    const state = lossState();
    const stats = state.report.sessions[Object.keys(state.report.sessions)[0]];
    assert.ok(stats.cost_saved_usd < 0, `the real core booked a loss: ${stats.cost_saved_usd}`);
    for (const theme of ["light", "dark"]) {
      const page = await openGateway(t, theme, { state, preview: PREVIEW });
      const money = page.getByTestId("gateway-money");
      await money.waitFor();
      const text = await money.innerText();
      assert.match(text, /^\u2212\u2060\$0\.\d{4} so far; pays back after ~\d+ more requests$/, text);
      assert.ok(text.startsWith(`\u2212\u2060$${Math.abs(stats.cost_saved_usd).toFixed(4)}`), `${text} shows ${stats.cost_saved_usd}`);
      assert.equal(await money.getAttribute("class"), "gw-loss");
      assert.match(await page.getByTestId("gateway-total-money").innerText(), /^\u2212\u2060\$0\.\d{4} so far/);
      assert.match(await page.getByTestId("gateway-policy").innerText(), /^ · condenses at 80% of a model's window$/, "the threshold policy");
      await page.locator(".gw-session__head").click();
      await page.getByTestId("condensation-row").first().waitFor();
      assert.match(await page.getByTestId("condensation-row").first().innerText(), /automatic: threshold reached/, "why it ran");
      await page.screenshot({ path: `${shots}gateway-loss-${theme}.png`, fullPage: true });
    }
  });

  it("offers to start a stopped gateway, and refuses a message that breaks the contract", async (t) => {
    const stopped = { type: "state", port: null, report: null, sessions: [] };
    const page = await openGateway(t, "dark", { state: stopped, preview: PREVIEW });
    await page.getByTestId("gateway-start").click();
    assert.match(await page.getByTestId("gateway-status").innerText(), /stopped/);
    const sent = await page.evaluate(() => window.__sent.map((m) => m.type));
    assert.deepEqual(sent, ["ready", "start"]);
  });
});
