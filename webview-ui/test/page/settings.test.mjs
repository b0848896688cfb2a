// The settings panel of the built bundle (dist/chat.js with data-view="settings") in real
// Chromium, under the extension's strict CSP, with a fake extension that records what the page
// posts and answers as the extension does: a new `state` after each change, `rejected` for what it
// refuses, `testResult` for a connection test. Any CSP violation or page error fails the test.
// Screenshots go to test-output/webview/settings-{light,dark,hc}.png.

import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { describe, it } from "node:test";
import { openPage, shots, useHarness } from "./harness.mjs";


// ---- The extension's state -----------------------------------------------------------------
//
// The providers' cards, their forms, the built-in prompt, the limits and the kinds come from the
// real core (the built wasm package), as the extension sends them; only what a user set (switches,
// priorities, configurations, profiles) is this test's own.

const require = createRequire(import.meta.url);
const { CondenseEngine } = require("../../../extension/wasm/condense_wasm.js");
const core = new CondenseEngine({
  fetch: async () => {
    throw new Error("the page tests make no request");
  },
  now: () => 0,
  log() {},
  // A machine with Claude Code installed and nothing else: the tool list comes from the real
  // core's entries, each located through this host.
  platform: "linux",
  envVar: (name) => ({ HOME: "/home/dev" })[name],
  locate: (program) => (program === "claude" ? "/usr/local/bin/claude" : undefined),
  run: async () => {
    throw new Error("the page tests run no program");
  },
});
const entries = Object.fromEntries(core.providerEntries().map((e) => [e.id, e]));
const { limits, kinds } = core.hostMetadata();
const PROMPT = entries.native.schema.find((f) => f.key === "custom_prompt").default;

/** A provider's card as the core describes it, with the user's settings. */
const card = (id, settings) => ({ ...entries[id], ...settings });

/** The providers this test's user configured; every other provider the core registers follows,
 *  as the core describes it. */
const CONFIGURED = [
  card("native", { enabled: true, priority: 20, config: { keep_last: 3 } }),
  card("lossless", { enabled: true, priority: 10, config: { text_blocks: true, tool_results: true, min_bytes: 200 } }),
  card("truncation", { enabled: true, priority: 5, config: { keep_last: 4, target_percent: 50 } }),
  card("manual", { enabled: false, priority: 0, config: {} }),
];

const STATE = {
  type: "state",
  providers: [...CONFIGURED, ...Object.values(entries).filter((e) => !CONFIGURED.some((c) => c.id === e.id))],
  defaultProvider: "native",
  auto: { enabled: true, thresholdPercent: 80, minGainPercent: 5 },
  shared: { custom_prompt: "", condensing_profile: "local" },
  profiles: [
    {
      id: "gpt",
      kind: "openai",
      model: "gpt-4o-mini",
      context_window: 128_000,
      max_output: 16_384,
      price_input_per_mtok: 0.15,
      price_output_per_mtok: 0.6,
      threshold_percent: -1,
    },
    {
      id: "local",
      kind: "openai-compatible",
      base_url: "http://127.0.0.1:11434/v1",
      model: "qwen2.5-coder:7b",
      context_window: 32_768,
      threshold_percent: 70,
    },
  ],
  chatProfile: "gpt",
  keys: { gpt: true, local: false },
  problems: [{ setting: "contextCondenser.autoCondense.minGainPercent", message: "must be a number from 0 to 100" }],
  // The core's limits and kinds, as the extension sends them (engine.hostMetadata()).
  limits,
  kinds,
  tools: core.tools(),
  toolErrors: [],
};

/** A cli profile, as settings.json would hold it. */
const CLAUDE_CLI = { id: "claude-cli", kind: "cli", tool: "claude-code", model: "sonnet", context_window: 200_000, threshold_percent: -1 };

// ---- The page -------------------------------------------------------------------------------

/**
 * Runs in the page before its scripts: the fake VS Code API, whose `postMessage` records the
 * message and answers it as the extension would, and the CSP violation log.
 */
function fakeHost(initial) {
  window.__sent = [];
  window.__stored = [];
  window.__acquired = 0;
  window.__violations = [];
  document.addEventListener(
    "securitypolicyviolation",
    (e) => window.__violations.push(`${e.violatedDirective} blocked ${e.blockedURI || "(inline)"}`),
    true,
  );
  const state = structuredClone(initial);
  const deliver = (message, delay = 0) => setTimeout(() => window.postMessage(message, "*"), delay);
  const sendState = () => deliver(structuredClone(state));
  const accepted = (field) => deliver({ type: "accepted", field });
  const rejected = (field, message) => deliver({ type: "rejected", field, message });

  function answer(m) {
    switch (m.type) {
      case "ready":
        return sendState();
      case "updateProvider": {
        const p = state.providers.find((x) => x.id === m.id);
        if (m.enabled !== undefined) p.enabled = m.enabled;
        if (m.priority !== undefined) p.priority = m.priority;
        for (const [key, value] of Object.entries(m.config ?? {})) {
          if (value === null) delete p.config[key];
          else p.config[key] = value;
        }
        state.providers.sort((a, b) => b.priority - a.priority || a.id.localeCompare(b.id));
        sendState();
        const key = Object.keys(m.config ?? {})[0];
        return accepted(key ? `provider.${m.id}.config.${key}` : `provider.${m.id}.${m.enabled !== undefined ? "enabled" : "priority"}`);
      }
      case "setDefault":
        state.defaultProvider = m.id;
        sendState();
        return accepted("default");
      case "setShared":
        state.shared[m.key] = m.value;
        sendState();
        return accepted(`shared.${m.key}`);
      case "setAuto": {
        const { type: _, ...changes } = m;
        Object.assign(state.auto, changes);
        sendState();
        return accepted(`auto.${Object.keys(changes)[0]}`);
      }
      case "saveProfile": {
        const field = `profile.${m.originalId ?? "new"}`;
        if (m.profile.base_url !== undefined && !/^https?:\/\//.test(m.profile.base_url)) {
          return rejected(field, "base_url must start with http:// or https://");
        }
        const at = state.profiles.findIndex((p) => p.id === m.originalId);
        if (at >= 0) state.profiles[at] = m.profile;
        else state.profiles.push(m.profile);
        sendState();
        return accepted(field);
      }
      case "removeProfile":
        state.profiles = state.profiles.filter((p) => p.id !== m.id);
        delete state.keys[m.id];
        sendState();
        return accepted(`profile.${m.id}`);
      case "setKey":
        state.keys[m.profileId] = true;
        sendState();
        return accepted(`key.${m.profileId}`);
      case "clearKey":
        state.keys[m.profileId] = false;
        sendState();
        return accepted(`key.${m.profileId}`);
      case "testConnection": {
        const p = state.profiles.find((x) => x.id === m.profileId);
        // A cli profile has no key: the extension runs its tool once.
        const result = state.keys[m.profileId] || p.kind === "cli"
          ? { report: { latencyMs: 412, model: `${p.model}-2024-07-18`, reply: "pong" } }
          : { error: { kind: "llm_auth", message: "401 Unauthorized: no API key" } };
        const message = { type: "testResult", profileId: m.profileId, ...result };
        // A test that looks at the pending state holds the answer until it releases it.
        if (window.__holdTestResult) {
          window.__held = message;
          return undefined;
        }
        return deliver(message);
      }
    }
  }

  let saved;
  window.acquireVsCodeApi = () => {
    window.__acquired += 1;
    return {
      postMessage: (message) => {
        window.__sent.push(message);
        answer(message);
      },
      getState: () => saved,
      setState: (s) => {
        window.__stored.push(JSON.stringify(s));
        saved = s;
      },
    };
  };
}

const harness = useHarness();

/**
 * Opens the settings panel in a fresh page with the fake extension, and waits for its first
 * state (see `openPage` for what fails the test).
 */
async function openSettings(t, { theme = "dark", state = STATE, width = 900 } = {}) {
  const page = await openPage(t, harness.browser, { viewport: { width, height: 900 }, fakeHost, arg: state });
  await page.goto(`${harness.server.origin}/?view=settings&theme=${theme}`);
  await page.getByTestId("provider-card").first().waitFor();

  const tid = (id) => page.getByTestId(id);
  const panel = {
    page,
    tid,
    card: (id) => page.locator(`[data-testid="provider-card"][data-provider="${id}"]`),
    profile: (id) => page.locator(`[data-testid="profile-row"][data-profile="${id}"]`),
    error: (field) => page.locator(`[data-testid="field-error"][data-field="${field}"]`),
    sent: () => page.evaluate(() => window.__sent),
    /** The messages posted since `from` (a count of earlier messages). */
    sentSince: async (from) => (await panel.sent()).slice(from),
    count: async () => (await panel.sent()).length,
    /** Waits until the page posted n messages in all. */
    waitSent: (n) => page.waitForFunction((count) => window.__sent.length >= count, n),
    /** Waits until the locator's text contains `expected`. */
    waitText: (locator, expected) => locator.filter({ hasText: expected }).first().waitFor(),
    /** Lets pending messages arrive and render. */
    settle: () => page.evaluate(() => new Promise((r) => setTimeout(() => requestAnimationFrame(() => r()), 20))),
  };
  return panel;
}

// ---- Tests ----------------------------------------------------------------------------------

describe("the settings panel under the extension's CSP", () => {
  it("acquires the VS Code API once, says it is ready and renders every card from the state", async (t) => {
    const panel = await openSettings(t);
    const sent = await panel.sent();
    assert.deepEqual(sent[0], { type: "ready" });
    assert.equal(await panel.page.evaluate(() => window.__acquired), 1);
    const ids = await panel.tid("provider-card").evaluateAll((cards) => cards.map((c) => c.dataset.provider));
    assert.deepEqual(ids, ["native", "lossless", "truncation", "manual", "superseded", "mask", "smart"]);
    assert.equal(await panel.tid("default-badge").count(), 1);
    assert.equal(await panel.card("native").getByTestId("default-badge").count(), 1);
    assert.match(await panel.tid("problems").innerText(), /minGainPercent: must be a number from 0 to 100/);
    assert.equal(await panel.card("native").getByTestId("field-condensing_profile").inputValue(), "local");
    assert.equal(await panel.card("native").getByTestId("field-custom_prompt").getAttribute("placeholder"), PROMPT);
    assert.equal(await panel.tid("threshold-slider").inputValue(), "80");
    assert.deepEqual(harness.server.requests.filter((r) => r.status !== 200), [], "every request the page made was served");
  });

  it("toggles a provider: the switch posts, the state round-trip flips it", async (t) => {
    const panel = await openSettings(t);
    const toggle = panel.card("lossless").getByTestId("provider-enabled");
    assert.equal(await toggle.isChecked(), true);
    assert.equal(await toggle.getAttribute("role"), "switch");
    const n = await panel.count();
    await toggle.click();
    assert.deepEqual(await panel.sentSince(n), [{ type: "updateProvider", id: "lossless", enabled: false }]);
    await panel.page.waitForFunction(
      () => !document.querySelector('[data-provider="lossless"] [data-testid="provider-enabled"]').checked,
    );
    // From the keyboard, back on.
    await toggle.focus();
    await panel.page.keyboard.press("Space");
    await panel.waitSent(n + 2);
    assert.deepEqual((await panel.sent()).at(-1), { type: "updateProvider", id: "lossless", enabled: true });
  });

  it("makes another provider the default: the badge moves, a disabled default is warned about", async (t) => {
    const panel = await openSettings(t);
    assert.equal(await panel.card("native").getByTestId("provider-default").isDisabled(), true);
    await panel.card("manual").getByTestId("provider-default").click();
    await panel.card("manual").getByTestId("default-badge").waitFor();
    assert.equal(await panel.card("native").getByTestId("default-badge").count(), 0);
    assert.equal(await panel.tid("default-badge").count(), 1);
    assert.deepEqual((await panel.sent()).at(-1), { type: "setDefault", id: "manual" });
    // manual is disabled: Condense Now would fail.
    await panel.card("manual").getByTestId("disabled-default-warning").waitFor();
    await panel.card("manual").getByTestId("provider-enabled").click();
    await panel.card("manual").getByTestId("disabled-default-warning").waitFor({ state: "detached" });
  });

  it("refuses a threshold of 150 in the page, posts nothing, and commits a good one", async (t) => {
    const panel = await openSettings(t);
    const input = panel.tid("threshold-input");
    const n = await panel.count();
    await input.fill("150");
    await input.press("Enter");
    const error = panel.error("auto.thresholdPercent");
    await error.waitFor();
    assert.match(await error.innerText(), /whole number from 10 to 100/);
    assert.equal(await input.getAttribute("aria-invalid"), "true");
    await input.fill("2.5");
    await input.blur();
    await panel.settle();
    assert.equal(await error.count(), 1);
    // What the browser cannot read as a number (its value is "") is refused as such.
    await input.fill("");
    await input.pressSequentially("1e");
    await input.press("Enter");
    await panel.settle();
    assert.equal(await error.innerText(), "Must be a whole number from 10 to 100.");
    assert.deepEqual(await panel.sentSince(n), [], "nothing posted");

    await input.fill("65");
    await input.press("Enter");
    await error.waitFor({ state: "detached" });
    assert.deepEqual(await panel.sentSince(n), [{ type: "setAuto", thresholdPercent: 65 }]);
    await panel.page.waitForFunction(() => document.querySelector('[data-testid="threshold-slider"]').value === "65");

    // The slider commits when released (here: a key press, which also fires `change`).
    await panel.tid("threshold-slider").focus();
    await panel.page.keyboard.press("ArrowRight");
    await panel.waitSent(n + 2);
    assert.deepEqual((await panel.sent()).at(-1), { type: "setAuto", thresholdPercent: 66 });
    await panel.page.waitForFunction(() => document.querySelector('[data-testid="threshold-input"]').value === "66");
  });

  it("refuses a negative keep-last in a provider's form, posts nothing; a good one posts only that key", async (t) => {
    const panel = await openSettings(t);
    const input = panel.card("truncation").getByTestId("field-keep_last");
    const n = await panel.count();
    await input.fill("-2");
    await input.blur();
    const error = panel.error("provider.truncation.config.keep_last");
    await error.waitFor();
    assert.match(await error.innerText(), /whole number of 0 or more/);
    await panel.settle();
    assert.deepEqual(await panel.sentSince(n), []);
    await input.fill("6");
    await input.press("Enter");
    await error.waitFor({ state: "detached" });
    assert.deepEqual(await panel.sentSince(n), [{ type: "updateProvider", id: "truncation", config: { keep_last: 6 } }]);
  });

  it("shows the host's rejection of a malformed base URL under the editor, which stays open", async (t) => {
    const panel = await openSettings(t);
    await panel.profile("local").getByTestId("profile-edit").click();
    const editor = panel.tid("profile-editor");
    await editor.waitFor();
    assert.equal(await panel.tid("profile-base-url").inputValue(), "http://127.0.0.1:11434/v1");
    await panel.tid("profile-base-url").fill("127.0.0.1:11434");
    await panel.tid("profile-save").click();
    const error = panel.error("profile.local");
    await error.waitFor();
    assert.match(await error.innerText(), /base_url must start with http:\/\/ or https:\/\//);
    assert.equal(await panel.tid("profile-base-url").inputValue(), "127.0.0.1:11434", "what was typed stays");
    assert.deepEqual((await panel.sent()).at(-1), {
      type: "saveProfile",
      originalId: "local",
      profile: {
        id: "local",
        kind: "openai-compatible",
        base_url: "127.0.0.1:11434",
        model: "qwen2.5-coder:7b",
        context_window: 32_768,
        threshold_percent: 70,
      },
    });

    await panel.tid("profile-base-url").fill("http://127.0.0.1:8080/v1");
    await panel.tid("profile-save").click();
    await editor.waitFor({ state: "detached" });
    assert.match(await panel.profile("local").innerText(), /qwen2\.5-coder:7b/);
  });

  it("adds a profile with the editor", async (t) => {
    const panel = await openSettings(t);
    await panel.tid("add-profile").click();
    await panel.tid("profile-save").click();
    // The page's own checks: id, model and window are needed.
    assert.equal(await panel.error("profile.new.id").count(), 1);
    assert.equal(await panel.error("profile.new.model").count(), 1);
    assert.equal(await panel.error("profile.new.contextWindow").count(), 1);
    assert.notEqual((await panel.sent()).at(-1).type, "saveProfile");

    await panel.tid("profile-id").fill("claude");
    await panel.tid("profile-kind").selectOption("anthropic");
    assert.equal(await panel.tid("profile-base-url").getAttribute("placeholder"), "https://api.anthropic.com");
    await panel.tid("profile-model").fill("claude-3-5-haiku-latest");
    await panel.tid("profile-window").fill("200000");
    await panel.tid("profile-price-in").fill("0.8");
    await panel.tid("profile-global-threshold").uncheck();
    await panel.tid("profile-threshold").fill("75");
    await panel.tid("profile-save").click();
    await panel.tid("profile-editor").waitFor({ state: "detached" });
    assert.deepEqual((await panel.sent()).find((m) => m.type === "saveProfile"), {
      type: "saveProfile",
      profile: {
        id: "claude",
        kind: "anthropic",
        model: "claude-3-5-haiku-latest",
        context_window: 200_000,
        price_input_per_mtok: 0.8,
        threshold_percent: 75,
      },
    });
    await panel.profile("claude").waitFor();
    assert.equal(await panel.profile("claude").getByTestId("key-status").innerText(), "key not set");
  });

  it("sets a profile's chat and summary generation settings: refused inline when out of range, then saved", async (t) => {
    const panel = await openSettings(t);
    await panel.profile("local").getByTestId("profile-edit").click();
    const group = panel.page.getByRole("group", { name: "Summaries" });
    assert.equal(await group.getByLabel("Max output").getAttribute("placeholder"), "Profile's max output");
    assert.equal(await group.getByLabel("Temperature").getAttribute("placeholder"), "0.2 (default)");
    await panel.tid("profile-chat-max-output").fill("40000");
    await panel.tid("profile-condense-temperature").fill("2.5");
    const n = await panel.count();
    await panel.tid("profile-save").click();
    await panel.error("profile.local.chatMaxOutput").waitFor();
    assert.equal(await panel.error("profile.local.chatMaxOutput").innerText(), "Must be below the context window (32,768 tokens).");
    assert.equal(await panel.error("profile.local.condenseTemperature").innerText(), "Must be a number from 0 to 2.");
    assert.equal(await panel.tid("profile-chat-max-output").getAttribute("aria-invalid"), "true");
    assert.deepEqual(await panel.sentSince(n), [], "nothing posted");
    await panel.page.mouse.move(0, 0);
    await panel.tid("profile-editor").screenshot({ path: `${shots}settings-generation-errors-dark.png` });

    await panel.tid("profile-chat-max-output").fill("1024");
    await panel.tid("profile-chat-temperature").fill("0.7");
    await panel.tid("profile-condense-max-output").fill("3000");
    await panel.tid("profile-condense-temperature").fill("");
    await panel.tid("profile-save").click();
    await panel.tid("profile-editor").waitFor({ state: "detached" });
    assert.deepEqual((await panel.sent()).find((m) => m.type === "saveProfile"), {
      type: "saveProfile",
      originalId: "local",
      profile: {
        id: "local",
        kind: "openai-compatible",
        base_url: "http://127.0.0.1:11434/v1",
        model: "qwen2.5-coder:7b",
        context_window: 32_768,
        threshold_percent: 70,
        chat: { max_output_tokens: 1024, temperature: 0.7 },
        condense: { max_output_tokens: 3000, temperature: 0.2 },
      },
    });
    await panel.waitText(panel.profile("local"), "chat: 1k tokens, temperature 0.7");
    assert.match(await panel.profile("local").innerText(), /summaries: 3k tokens, temperature 0\.2/);
    // Open again: the saved values are there.
    await panel.profile("local").getByTestId("profile-edit").click();
    assert.equal(await panel.tid("profile-condense-max-output").inputValue(), "3000");
    assert.equal(await panel.tid("profile-chat-temperature").inputValue(), "0.7");
  });

  it("renders a choice field as a dropdown of its options, posts the one chosen, and shows it after the round trip", async (t) => {
    // The core's first choice field when it has one (smart's preset), else one of this test's own.
    const coreChoice = Object.values(entries)
      .flatMap((e) => e.schema)
      .find((f) => f.kind === "choice");
    const choice = coreChoice ?? {
      key: "preset",
      label: "Preset",
      description: "How far the passes go.",
      kind: "choice",
      options: ["conservative", "balanced", "aggressive"],
      default: "balanced",
      optional: false,
      shared: false,
    };
    const withChoice = {
      ...STATE,
      providers: [...STATE.providers, { ...entries.truncation, id: "presets", name: "Presets", priority: -1, config: {}, schema: [choice] }],
    };
    const panel = await openSettings(t, { state: withChoice });
    const select = panel.card("presets").getByTestId(`field-${choice.key}`);
    assert.equal(await select.evaluate((e) => e.tagName), "SELECT");
    assert.equal(await panel.card("presets").getByLabel(choice.label).count(), 1);
    const options = await select.evaluate((e) => [...e.options].map((o) => o.value));
    assert.deepEqual(options.filter(Boolean), choice.options);
    assert.equal(await select.inputValue(), choice.default);
    const other = choice.options.find((o) => o !== choice.default);
    const n = await panel.count();
    await select.selectOption(other);
    await panel.waitSent(n + 1);
    assert.deepEqual(await panel.sentSince(n), [{ type: "updateProvider", id: "presets", config: { [choice.key]: other } }]);
    await panel.page.waitForFunction(
      ([key, value]) => document.querySelector(`[data-provider="presets"] [data-testid="field-${key}"]`).value === value,
      [choice.key, other],
    );
    await panel.page.mouse.move(0, 0);
    await panel.card("presets").screenshot({ path: `${shots}settings-choice-dark.png` });
  });

  it("saves an API key: posted once, the input emptied, never in the page or its stored state", async (t) => {
    const panel = await openSettings(t);
    const KEY = "sk-test-0123456789abcdefSECRET";
    const row = panel.profile("local");
    assert.equal(await row.getByTestId("key-status").innerText(), "key not set");
    const input = row.getByTestId("key-input");
    assert.equal(await input.getAttribute("type"), "password");
    assert.equal(await input.getAttribute("autocomplete"), "off");
    await input.fill(KEY);
    const n = await panel.count();
    await row.getByTestId("key-save").click();
    assert.deepEqual(await panel.sentSince(n), [{ type: "setKey", profileId: "local", key: KEY }]);
    assert.equal(await input.inputValue(), "", "the input is emptied at once");
    await panel.waitText(row.getByTestId("key-status"), "key set");
    assert.equal(await row.getByTestId("key-status").innerText(), "key set");
    assert.equal((await panel.sent()).filter((m) => JSON.stringify(m).includes(KEY)).length, 1, "posted once");
    const html = await panel.page.content();
    assert.equal(html.includes(KEY), false, "not in the page");
    const values = await panel.page.evaluate(() => [...document.querySelectorAll("input, textarea")].map((el) => el.value));
    assert.equal(values.some((v) => v.includes(KEY)), false, "not in any input");
    const stored = await panel.page.evaluate(() => window.__stored);
    assert.equal(stored.some((s) => s.includes(KEY)), false, "not in the view's stored state");

    // And removed again.
    await row.getByTestId("key-clear").click();
    await panel.waitText(row.getByTestId("key-status"), "key not set");
    assert.deepEqual((await panel.sent()).at(-1), { type: "clearKey", profileId: "local" });
  });

  it("tests a connection: Testing… then the result", async (t) => {
    const panel = await openSettings(t);
    const row = panel.profile("gpt");
    await panel.page.evaluate(() => (window.__holdTestResult = true));
    await row.getByTestId("profile-test").click();
    const result = row.getByTestId("test-result");
    await panel.waitText(result, "Testing…");
    assert.equal(await result.innerText(), "Testing…");
    assert.deepEqual((await panel.sent()).at(-1), { type: "testConnection", profileId: "gpt" });
    await panel.page.evaluate(() => {
      window.__holdTestResult = false;
      window.postMessage(window.__held, "*");
    });
    await panel.waitText(result, "✓");
    assert.equal(await result.innerText(), "✓ 412 ms · gpt-4o-mini-2024-07-18");

    await panel.profile("local").getByTestId("profile-test").click();
    await panel.waitText(panel.profile("local").getByTestId("test-result"), "✗");
    assert.equal(await panel.profile("local").getByTestId("test-result").innerText(), "✗ llm_auth: 401 Unauthorized: no API key");
  });

  it("a cli profile: no key, a tool and one of its models, Test Connection; the CLI tools list", async (t) => {
    const panel = await openSettings(t, { state: { ...STATE, profiles: [...STATE.profiles, CLAUDE_CLI] } });
    const row = panel.profile("claude-cli");
    assert.equal(await row.getByTestId("key-status").count(), 0, "no key badge");
    assert.equal(await row.getByTestId("key-input").count(), 0, "no key field");
    assert.match(await row.innerText(), /CLI tool: claude-code/);
    await row.getByTestId("profile-test").click();
    await panel.waitText(row.getByTestId("test-result"), "✓");
    assert.deepEqual((await panel.sent()).find((m) => m.type === "testConnection"), { type: "testConnection", profileId: "claude-cli" });

    // Every tool of the core, found or not, with where it was looked for.
    const tools = panel.tid("tool-row");
    assert.deepEqual(await tools.evaluateAll((rows) => rows.map((r) => r.dataset.tool)), ["claude-code", "codex", "gemini"]);
    const status = (id) => panel.page.locator(`[data-testid="tool-row"][data-tool="${id}"] [data-testid="tool-status"]`);
    assert.equal(await status("claude-code").innerText(), "found at /usr/local/bin/claude");
    assert.equal(
      await status("codex").innerText(),
      "not found (looked at /home/dev/.local/bin/codex, /home/dev/.npm-global/bin/codex, `codex` on the PATH)",
    );
    assert.match(await panel.page.locator('[data-tool="gemini"]').innerText(), /gemini-2\.5-flash/);
    await panel.page.mouse.move(0, 0);
    await panel.tid("tools").screenshot({ path: `${shots}settings-tools-dark.png` });

    // A new cli profile: the found tool, its first model and its window are filled in; no base URL.
    await panel.tid("add-profile").click();
    await panel.tid("profile-id").fill("gem");
    await panel.tid("profile-kind").selectOption("cli");
    assert.equal(await panel.tid("profile-base-url").count(), 0);
    assert.equal(await panel.tid("profile-tool").inputValue(), "claude-code");
    assert.equal(await panel.tid("profile-tool-model").inputValue(), "sonnet");
    assert.equal(await panel.tid("profile-window").inputValue(), "200000");
    await panel.tid("profile-tool").selectOption("gemini");
    assert.equal(await panel.tid("profile-tool-model").inputValue(), "gemini-2.5-pro");
    assert.equal(await panel.tid("profile-window").inputValue(), "1000000");
    await panel.tid("profile-tool-model").selectOption("gemini-2.5-flash");
    await panel.page.mouse.move(0, 0);
    await panel.tid("profile-editor").screenshot({ path: `${shots}settings-cli-editor-dark.png` });
    await panel.tid("profile-save").click();
    await panel.tid("profile-editor").waitFor({ state: "detached" });
    assert.deepEqual((await panel.sent()).find((m) => m.type === "saveProfile"), {
      type: "saveProfile",
      profile: { id: "gem", kind: "cli", tool: "gemini", model: "gemini-2.5-flash", context_window: 1_000_000, threshold_percent: -1 },
    });
    await panel.profile("gem").waitFor();
  });

  it("looks right in light, dark and high contrast themes", async (t) => {
    for (const theme of ["light", "dark", "hc"]) {
      await t.test(theme, async (t) => {
        const panel = await openSettings(t, { theme });
        await panel.profile("gpt").getByTestId("profile-test").click();
        await panel.waitText(panel.profile("gpt").getByTestId("test-result"), "✓");
        // An inline message, as it shows.
        await panel.card("lossless").getByTestId("field-min_bytes").fill("-1");
        await panel.card("lossless").getByTestId("field-min_bytes").blur();
        await panel.error("provider.lossless.config.min_bytes").waitFor();
        await panel.page.mouse.move(0, 0);
        await panel.page.screenshot({ path: `${shots}settings-${theme}.png`, fullPage: true });

        // The profile editor, with the host's rejection under it.
        await panel.profile("local").getByTestId("profile-edit").click();
        await panel.tid("profile-base-url").fill("localhost:11434");
        await panel.tid("profile-save").click();
        await panel.error("profile.local").waitFor();
        await panel.page.mouse.move(0, 0);
        const section = panel.page.locator("section", { has: panel.tid("add-profile") });
        await section.screenshot({ path: `${shots}settings-editor-${theme}.png` });
      });
    }
  });

  it("fits a narrow panel", async (t) => {
    const panel = await openSettings(t, { width: 420 });
    await panel.tid("add-profile").click();
    const overflow = await panel.page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.equal(overflow, 0, "no horizontal scrolling");
    await panel.page.screenshot({ path: `${shots}settings-narrow-dark.png`, fullPage: true });
  });
});
