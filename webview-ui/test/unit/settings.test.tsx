import { act, fireEvent, render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import type { Host } from "../../src/host";
import type { SettingsSnapshot, SettingsToHost } from "../../src/protocol";
import { SettingsApp } from "../../src/settings/SettingsApp";
import { BUILT_IN, field, KINDS, LIMITS, plain, settings, settingsState, smart } from "./settingsFixtures";

function setup(first: SettingsSnapshot | null = settings()) {
  const sent: SettingsToHost[] = [];
  const setState = vi.fn();
  const host: Host<SettingsToHost> = { post: (m) => sent.push(m), getState: () => undefined, setState };
  const user = userEvent.setup();
  render(<SettingsApp host={host} />);
  if (first) show(first);
  /** What was posted since the last call. */
  let seen = sent.length;
  const posted = () => {
    const out = sent.slice(seen);
    seen = sent.length;
    return out;
  };
  return { sent, posted, setState, user };
}

function deliver(data: unknown) {
  act(() => {
    window.dispatchEvent(new MessageEvent("message", { data }));
  });
}

const show = (s: SettingsSnapshot) => deliver(settingsState(s));
const tid = (id: string) => screen.getByTestId(id);
const card = (id: string) => screen.getAllByTestId("provider-card").find((c) => c.dataset["provider"] === id)!;
const row = (id: string) => screen.getAllByTestId("profile-row").find((r) => r.dataset["profile"] === id)!;
const inCard = (id: string, testId: string) => within(card(id)).getByTestId(testId) as HTMLInputElement;
const inRow = (id: string, testId: string) => within(row(id)).getByTestId(testId) as HTMLInputElement;
const errorOf = (fieldId: string) =>
  screen.queryAllByTestId("field-error").find((e) => e.dataset["field"] === fieldId) ?? null;

describe("the settings panel", () => {
  it("says it is ready and renders the cards from the state alone", () => {
    const { sent } = setup(null);
    expect(sent).toEqual([{ type: "ready" }]);
    expect(tid("loading")).toBeTruthy();
    show(settings());
    expect(screen.getByRole("heading", { level: 1 }).textContent).toBe("Context Condenser settings");
    expect(screen.getAllByTestId("provider-card").map((c) => c.dataset["provider"])).toEqual(["smart", "plain"]);
    const smartCard = card("smart");
    expect(smartCard.textContent).toContain("Smart squeeze");
    expect(smartCard.textContent).toContain("Squeezes cleverly.");
    expect(within(smartCard).getByTestId("default-badge").textContent).toBe("Default");
    expect(within(card("plain")).queryByTestId("default-badge")).toBeNull();
    expect(inCard("smart", "provider-default").disabled).toBe(true);
    expect(inCard("plain", "provider-default").disabled).toBe(false);
    expect(inCard("smart", "provider-priority").value).toBe("7");

    // A field of each kind, from the schema, labelled and described.
    const depth = inCard("smart", "field-depth");
    expect(depth.type).toBe("number");
    expect(depth.value).toBe("4");
    expect(depth.min).toBe("2");
    expect(depth.max).toBe("9");
    expect(screen.getByLabelText("The depth label")).toBe(depth);
    expect(smartCard.textContent).toContain("levels");
    expect(smartCard.textContent).toContain("What depth does.");
    const fast = inCard("smart", "field-fast");
    expect(fast.getAttribute("role")).toBe("switch");
    expect(fast.checked).toBe(false);
    expect(inCard("smart", "field-style").value).toBe("terse");
    const prompt = inCard("smart", "field-custom_prompt");
    expect(prompt.tagName).toBe("TEXTAREA");
    expect(prompt.value).toBe("");
    expect(prompt.placeholder).toBe(BUILT_IN);
    expect(smartCard.textContent).toContain("(built-in prompt)");
    const writer = inCard("smart", "field-writer") as unknown as HTMLSelectElement;
    expect([...writer.options].map((o) => [o.value, o.textContent])).toEqual([
      ["", "(the chat profile)"],
      ["gpt", "gpt · gpt-4o-mini"],
      ["local", "local · qwen"],
    ]);
    // Optional and unset: empty, with the default as the placeholder.
    expect(inCard("smart", "field-spare").value).toBe("");
    expect(inCard("smart", "field-spare").placeholder).toBe("5 (default)");
    expect(within(card("plain")).queryAllByTestId(/^field-/)).toHaveLength(0);

    expect(screen.queryByTestId("problems")).toBeNull();
    show(settings({ problems: [{ setting: "contextCondenser.providers", message: "not an object" }] }));
    expect(tid("problems").textContent).toContain("contextCondenser.providers: not an object");
  });

  it("renders a choice as a dropdown of its options and posts the one chosen", async () => {
    const { posted, user } = setup();
    const preset = inCard("smart", "field-preset") as unknown as HTMLSelectElement;
    expect(preset.tagName).toBe("SELECT");
    expect(screen.getByLabelText("The preset label")).toBe(preset);
    expect([...preset.options].map((o) => o.value)).toEqual(["conservative", "balanced", "aggressive"]);
    expect(preset.value).toBe("aggressive");
    await user.selectOptions(preset, "conservative");
    expect(posted()).toEqual([{ type: "updateProvider", id: "smart", config: { preset: "conservative" } }]);
    // An optional choice offers its default, posted as null (back to the provider's default).
    const mode = inCard("smart", "field-mode") as unknown as HTMLSelectElement;
    expect([...mode.options].map((o) => [o.value, o.textContent])).toEqual([
      ["", "Default (fast)"],
      ["fast", "fast"],
      ["thorough", "thorough"],
    ]);
    expect(mode.value).toBe("");
    await user.selectOptions(mode, "thorough");
    expect(posted()).toEqual([{ type: "updateProvider", id: "smart", config: { mode: "thorough" } }]);
    show(settings({ providers: [smart({ config: { mode: "thorough" } }), plain()] }));
    await user.selectOptions(inCard("smart", "field-mode"), "");
    expect(posted()).toEqual([{ type: "updateProvider", id: "smart", config: { mode: null } }]);
  });

  it("shows a stored choice the field does not offer as unknown, and does not post it", () => {
    setup(settings({ providers: [smart({ config: { preset: "reckless" } })] }));
    const preset = inCard("smart", "field-preset") as unknown as HTMLSelectElement;
    expect(preset.value).toBe("reckless");
    const unknown = [...preset.options].find((o) => o.value === "reckless")!;
    expect(unknown.textContent).toBe("reckless (unknown)");
    expect(unknown.disabled).toBe(true);
  });

  it("falls back to a field's default when the provider's config lacks it", () => {
    setup(settings({ providers: [smart({ config: {} })] }));
    expect(inCard("smart", "field-depth").value).toBe("3");
    expect(inCard("smart", "field-fast").checked).toBe(true);
    expect(inCard("smart", "field-style").value).toBe("plain");
    expect(inCard("smart", "field-preset").value).toBe("balanced");
  });

  it("posts switches at once: a provider, automatic condensation, a boolean field", async () => {
    const { posted, user } = setup();
    await user.click(inCard("plain", "provider-enabled"));
    await user.click(tid("auto-enabled"));
    await user.click(inCard("smart", "field-fast"));
    expect(posted()).toEqual([
      { type: "updateProvider", id: "plain", enabled: false },
      { type: "setAuto", enabled: false },
      { type: "updateProvider", id: "smart", config: { fast: true } },
    ]);
    // Nothing changes until the host's state says so.
    expect(inCard("plain", "provider-enabled").checked).toBe(true);
    show(settings({ providers: [smart(), plain({ enabled: false })] }));
    expect(inCard("plain", "provider-enabled").checked).toBe(false);
  });

  it("sets the default provider and warns when the default is disabled", async () => {
    const { posted, user } = setup();
    await user.click(inCard("plain", "provider-default"));
    expect(posted()).toEqual([{ type: "setDefault", id: "plain" }]);
    show(settings({ defaultProvider: "plain", providers: [smart(), plain({ enabled: false })] }));
    expect(within(card("plain")).getByTestId("default-badge")).toBeTruthy();
    expect(within(card("smart")).queryByTestId("default-badge")).toBeNull();
    expect(within(card("plain")).getByTestId("disabled-default-warning").textContent).toBe(
      "Condense Now will fail: the default provider is disabled",
    );
    expect(within(card("smart")).queryByTestId("disabled-default-warning")).toBeNull();
  });

  it("commits a config number on blur or Enter, with only that key", async () => {
    const { posted, user } = setup();
    const depth = inCard("smart", "field-depth");
    await user.clear(depth);
    await user.type(depth, "6");
    expect(posted()).toEqual([]);
    await user.tab();
    expect(posted()).toEqual([{ type: "updateProvider", id: "smart", config: { depth: 6 } }]);
    // What was typed stays until the state comes back with it.
    expect(depth.value).toBe("6");
    show(settings({ providers: [smart({ config: { depth: 6, fast: false, style: "terse" } }), plain()] }));
    expect(depth.value).toBe("6");

    await user.clear(depth);
    await user.type(depth, "8{Enter}");
    expect(posted()).toEqual([{ type: "updateProvider", id: "smart", config: { depth: 8 } }]);
    await user.tab();
    expect(posted()).toEqual([]);

    // The priority, any sign.
    const priority = inCard("plain", "provider-priority");
    await user.clear(priority);
    await user.type(priority, "-3{Enter}");
    expect(posted()).toEqual([{ type: "updateProvider", id: "plain", priority: -3 }]);
  });

  it("refuses a config number out of range or not whole, posting nothing", async () => {
    const { posted, user } = setup();
    const depth = inCard("smart", "field-depth");
    for (const bad of ["12", "1", "2.5"]) {
      await user.clear(depth);
      await user.type(depth, `${bad}{Enter}`);
      expect(errorOf("provider.smart.config.depth")?.textContent).toBe("Must be a whole number from 2 to 9.");
      expect(depth.getAttribute("aria-invalid")).toBe("true");
    }
    await user.clear(depth);
    await user.tab();
    expect(errorOf("provider.smart.config.depth")?.textContent).toBe("Enter a whole number from 2 to 9.");
    expect(posted()).toEqual([]);
    // Escape puts the saved value back.
    depth.focus();
    await user.keyboard("{Escape}");
    expect(depth.value).toBe("4");
    expect(errorOf("provider.smart.config.depth")).toBeNull();

    // Empty is allowed when the field is optional: null, the provider's default.
    const spare = inCard("smart", "field-spare");
    await user.type(spare, "2{Enter}");
    show(settings({ providers: [smart({ config: { depth: 4, fast: false, style: "terse", spare: 2 } }), plain()] }));
    await user.clear(spare);
    await user.tab();
    expect(posted()).toEqual([
      { type: "updateProvider", id: "smart", config: { spare: 2 } },
      { type: "updateProvider", id: "smart", config: { spare: null } },
    ]);
  });

  it("posts shared fields with setShared, text on blur and profiles at once", async () => {
    const { posted, user } = setup();
    const prompt = inCard("smart", "field-custom_prompt");
    await user.type(prompt, "Be brief.{Enter}Keep code.");
    expect(posted()).toEqual([]);
    await user.tab();
    expect(posted()).toEqual([{ type: "setShared", key: "custom_prompt", value: "Be brief.\nKeep code." }]);
    await user.selectOptions(inCard("smart", "field-writer"), "local");
    expect(posted()).toEqual([{ type: "setShared", key: "writer", value: "local" }]);
    // A shared value is shown in every card with the field.
    const other = smart({ id: "other", name: "Other" });
    show(settings({ providers: [smart(), other], shared: { custom_prompt: "Be brief.", writer: "local" } }));
    expect(inCard("other", "field-custom_prompt").value).toBe("Be brief.");
    expect((inCard("other", "field-writer") as unknown as HTMLSelectElement).value).toBe("local");
    // A shared message shows under the field in each card.
    deliver({ type: "rejected", field: "shared.custom_prompt", message: "too long" });
    expect(screen.getAllByTestId("field-error").filter((e) => e.dataset["field"] === "shared.custom_prompt")).toHaveLength(2);
  });

  it("resets a text field to its default", async () => {
    const { posted, user } = setup(settings({ shared: { custom_prompt: "Mine.", writer: "" } }));
    expect(card("smart").textContent).not.toContain("(built-in prompt)");
    const reset = inCard("smart", "reset-custom_prompt");
    expect(reset.disabled).toBe(false);
    await user.click(reset);
    expect(posted()).toEqual([{ type: "setShared", key: "custom_prompt", value: "" }]);
    show(settings());
    expect(inCard("smart", "field-custom_prompt").value).toBe("");
    expect(card("smart").textContent).toContain("(built-in prompt)");
    expect(inCard("smart", "reset-custom_prompt").disabled).toBe(true);

    // Not shared: the field's default goes into the provider's config.
    await user.click(inCard("smart", "reset-style"));
    expect(posted()).toEqual([{ type: "updateProvider", id: "smart", config: { style: "plain" } }]);
  });

  it("refuses a threshold of 150, -1 or 2.5 inline and posts nothing", async () => {
    const { posted, user } = setup();
    const input = tid("threshold-input") as HTMLInputElement;
    for (const bad of ["150", "-1", "2.5", "9"]) {
      await user.clear(input);
      await user.type(input, bad);
      await user.tab();
      expect(errorOf("auto.thresholdPercent")?.textContent).toBe("Must be a whole number from 10 to 100.");
      expect(input.getAttribute("aria-invalid")).toBe("true");
      expect(input.getAttribute("aria-describedby")).toContain(errorOf("auto.thresholdPercent")!.id);
    }
    const gain = tid("min-gain-input") as HTMLInputElement;
    await user.clear(gain);
    await user.type(gain, "101{Enter}");
    expect(errorOf("auto.minGainPercent")?.textContent).toBe("Must be a whole number from 0 to 100.");
    expect(posted()).toEqual([]);

    await user.clear(input);
    await user.type(input, "90{Enter}");
    expect(errorOf("auto.thresholdPercent")).toBeNull();
    expect((tid("threshold-slider") as HTMLInputElement).value).toBe("90");
    expect(posted()).toEqual([{ type: "setAuto", thresholdPercent: 90 }]);
  });

  it("takes the threshold's range and the kinds' base URLs from the state, not from copies", async () => {
    const { posted, user } = setup(
      settings({
        limits: { ...LIMITS, threshold_min: 20, threshold_max: 90 },
        kinds: KINDS.map((k) => (k.kind === "openai" ? { ...k, default_base_url: "https://proxy.example/v1" } : k)),
      }),
    );
    const slider = tid("threshold-slider") as HTMLInputElement;
    expect([slider.min, slider.max]).toEqual(["20", "90"]);
    const input = tid("threshold-input") as HTMLInputElement;
    await user.clear(input);
    await user.type(input, "15{Enter}");
    expect(errorOf("auto.thresholdPercent")?.textContent).toBe("Must be a whole number from 20 to 90.");
    expect(posted()).toEqual([]);
    await user.click(tid("add-profile"));
    expect((tid("profile-base-url") as HTMLInputElement).placeholder).toBe("https://proxy.example/v1");
    await user.click(tid("profile-global-threshold"));
    expect((tid("profile-threshold") as HTMLInputElement).placeholder).toBe("20–90");
    expect(within(tid("profile-kind")).getAllByRole("option").map((o) => o.textContent)).toEqual([
      "OpenAI",
      "Anthropic",
      "OpenAI-compatible",
      "CLI tool",
      "Manual",
    ]);
  });

  it("commits the threshold slider when it is released, and keeps the number in sync", () => {
    const { posted } = setup();
    const slider = tid("threshold-slider") as HTMLInputElement;
    fireEvent.input(slider, { target: { value: "55" } });
    expect((tid("threshold-input") as HTMLInputElement).value).toBe("55");
    expect(posted()).toEqual([]);
    fireEvent.change(slider, { target: { value: "60" } });
    expect(posted()).toEqual([{ type: "setAuto", thresholdPercent: 60 }]);
    expect((tid("threshold-input") as HTMLInputElement).value).toBe("60");
  });

  it("shows the host's rejection under its field until it is accepted", async () => {
    const { user } = setup();
    const depth = inCard("smart", "field-depth");
    await user.clear(depth);
    await user.type(depth, "5{Enter}");
    deliver({ type: "rejected", field: "provider.smart.config.depth", message: "depth must be odd" });
    expect(errorOf("provider.smart.config.depth")?.textContent).toBe("depth must be odd");
    expect(depth.getAttribute("aria-invalid")).toBe("true");
    expect(depth.value).toBe("5");
    // A state does not clear it (the value was not saved).
    show(settings());
    expect(errorOf("provider.smart.config.depth")).not.toBeNull();
    deliver({ type: "accepted", field: "provider.smart.config.depth" });
    expect(errorOf("provider.smart.config.depth")).toBeNull();

    for (const [fieldId, testId] of [
      ["auto.thresholdPercent", "threshold-input"],
      ["provider.plain.priority", "provider-priority"],
      ["provider.plain.enabled", "provider-enabled"],
    ] as const) {
      deliver({ type: "rejected", field: fieldId, message: `no ${fieldId}` });
      expect(errorOf(fieldId)?.textContent).toBe(`no ${fieldId}`);
      const input = fieldId.startsWith("auto") ? tid(testId) : inCard("plain", testId);
      expect(input.getAttribute("aria-invalid")).toBe("true");
    }
    deliver({ type: "rejected", field: "provider.plain", message: "no such provider" });
    expect(card("plain").contains(errorOf("provider.plain"))).toBe(true);
    expect(errorOf("provider.plain")?.textContent).toBe("no such provider");
    deliver({ type: "rejected", field: "default", message: "no such provider" });
    expect(errorOf("default")?.textContent).toBe("no such provider");
    // About a field the page does not show: a notice, not lost.
    deliver({ type: "rejected", field: "provider.gone.enabled", message: "unknown provider" });
    expect(tid("error").textContent).toContain("provider.gone.enabled: unknown provider");
  });

  it("answers an invalid message with an error, shows it, and keeps working", () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const { posted } = setup();
    deliver({ type: "state", providers: "none" });
    deliver({ type: "testResult" });
    deliver(42);
    expect(errors).toHaveBeenCalledTimes(3);
    const replies = posted();
    expect(replies.map((m) => m.type)).toEqual(["error", "error", "error"]);
    expect(replies[0]).toMatchObject({ message: expect.stringContaining("invalid message (type state)") });
    expect(screen.getAllByTestId("error")).toHaveLength(3);
    // Still rendering the last good state, still working.
    expect(screen.getAllByTestId("provider-card")).toHaveLength(2);
    deliver({ type: "error", message: "settings.json is read-only" });
    expect(screen.getAllByTestId("error").at(-1)!.textContent).toContain("settings.json is read-only");
    show(settings({ providers: [plain()] }));
    expect(screen.getAllByTestId("provider-card")).toHaveLength(1);
  });

  it("renders a provider with any schema the core sends", () => {
    const odd = plain({
      id: "odd",
      schema: [field("n", "integer", { min: null, max: null }), field("note", "text", { multiline: true, default: "" })],
      config: { n: -40, note: "hello" },
    });
    setup(settings({ providers: [odd], defaultProvider: "odd" }));
    expect(inCard("odd", "field-n").value).toBe("-40");
    expect(inCard("odd", "field-note").value).toBe("hello");
    expect(within(card("odd")).queryByTestId("reset-note")).toBeNull();
  });
});

describe("the CLI tools", () => {
  it("says what each tool may serve as, from its entry's capabilities", () => {
    setup();
    const uses = Object.fromEntries(
      screen.getAllByTestId("tool-row").map((r) => [r.dataset["tool"], within(r).getByTestId("tool-uses").textContent]),
    );
    expect(uses).toEqual({ "claude-code": "chat and summaries", mytool: "summaries only (not the chat model)" });
  });
});

describe("the LLM profiles", () => {
  it("lists the profiles with their key status and threshold", () => {
    setup();
    expect(screen.getAllByTestId("profile-row").map((r) => r.dataset["profile"])).toEqual(["gpt", "local"]);
    expect(row("gpt").textContent).toContain("gpt-4o-mini");
    expect(row("gpt").textContent).toContain("128k window");
    expect(row("gpt").textContent).toContain("global threshold");
    expect(row("local").textContent).toContain("threshold 70%");
    expect(inRow("gpt", "key-status").textContent).toBe("key set");
    expect(inRow("local", "key-status").textContent).toBe("key not set");
    expect(within(row("gpt")).getByTestId("key-clear")).toBeTruthy();
    expect(within(row("local")).queryByTestId("key-clear")).toBeNull();
  });

  it("adds a profile: checks the form, posts it, closes on accepted", async () => {
    const { posted, user } = setup();
    await user.click(tid("add-profile"));
    const editor = tid("profile-editor");
    expect(screen.queryByTestId("add-profile")).toBeNull();
    await user.click(tid("profile-save"));
    expect(posted()).toEqual([]);
    expect(errorOf("profile.new.id")?.textContent).toBe("Enter an id.");
    expect(errorOf("profile.new.model")).not.toBeNull();
    expect(errorOf("profile.new.contextWindow")).not.toBeNull();

    await user.type(tid("profile-id"), "gpt");
    await user.selectOptions(tid("profile-kind"), "openai-compatible");
    expect((tid("profile-base-url") as HTMLInputElement).placeholder).toContain("Required");
    await user.type(tid("profile-model"), "llama3");
    await user.type(tid("profile-window"), "8192.5");
    await user.type(tid("profile-price-in"), "-1");
    await user.click(tid("profile-global-threshold"));
    await user.type(tid("profile-threshold"), "150");
    await user.click(tid("profile-save"));
    expect(posted()).toEqual([]);
    expect(errorOf("profile.new.id")?.textContent).toContain("exists already");
    expect(errorOf("profile.new.baseUrl")).not.toBeNull();
    expect(errorOf("profile.new.contextWindow")?.textContent).toBe("Must be a whole number of 1 or more.");
    expect(errorOf("profile.new.priceIn")?.textContent).toBe("Must be a number of 0 or more.");
    expect(errorOf("profile.new.threshold")?.textContent).toBe("Must be a whole number from 10 to 100.");

    await user.clear(tid("profile-id"));
    await user.type(tid("profile-id"), "llama");
    await user.type(tid("profile-base-url"), "http://localhost:8080/v1");
    await user.clear(tid("profile-window"));
    await user.type(tid("profile-window"), "8192");
    await user.clear(tid("profile-price-in"));
    await user.type(tid("profile-price-in"), "0.25");
    await user.clear(tid("profile-threshold"));
    await user.type(tid("profile-threshold"), "75");
    await user.click(tid("profile-save"));
    expect(posted()).toEqual([
      {
        type: "saveProfile",
        profile: {
          id: "llama",
          kind: "openai-compatible",
          base_url: "http://localhost:8080/v1",
          model: "llama3",
          context_window: 8192,
          price_input_per_mtok: 0.25,
          threshold_percent: 75,
        },
      },
    ]);
    expect(editor.isConnected).toBe(true);
    deliver({ type: "accepted", field: "profile.new" });
    expect(screen.queryByTestId("profile-editor")).toBeNull();
    expect(tid("add-profile")).toBeTruthy();
  });

  it("takes the prompt cache's prices and the condensation policy, and shows them in the profile's row", async () => {
    const { posted, user } = setup();
    await user.click(inRow("local", "profile-edit"));
    expect((tid("profile-price-cache-read") as HTMLInputElement).placeholder).toBe("Input price");
    await user.type(tid("profile-price-cache-write"), "-2");
    await user.type(tid("profile-price-cache-read"), "0.3");
    await user.click(tid("profile-save"));
    expect(posted()).toEqual([]);
    expect(errorOf("profile.local.priceCacheWrite")?.textContent).toBe("Must be a number of 0 or more.");
    await user.clear(tid("profile-price-cache-write"));
    await user.type(tid("profile-price-cache-write"), "3.75");
    await user.selectOptions(tid("profile-policy"), "threshold");
    await user.click(tid("profile-save"));
    const saved = posted()[0] as { type: string; profile: Record<string, unknown> };
    expect(saved.type).toBe("saveProfile");
    expect(saved.profile).toMatchObject({
      price_cache_write_per_mtok: 3.75,
      price_cache_read_per_mtok: 0.3,
      condense_policy: "threshold",
    });
  });

  it("sets a profile's chat and summary generation settings: checked, then saved into chat / condense", async () => {
    const { posted, user } = setup();
    await user.click(inRow("local", "profile-edit"));
    // Empty fields show what the core uses for them.
    expect((tid("profile-chat-max-output") as HTMLInputElement).placeholder).toBe("Profile's max output");
    expect((tid("profile-condense-max-output") as HTMLInputElement).placeholder).toBe("Profile's max output");
    expect((tid("profile-condense-temperature") as HTMLInputElement).placeholder).toBe("0.2 (default)");
    expect(screen.getByRole("group", { name: "Summaries" })).toBeTruthy();

    await user.type(tid("profile-chat-max-output"), "40000");
    await user.type(tid("profile-chat-temperature"), "2.5");
    await user.type(tid("profile-condense-max-output"), "0");
    await user.type(tid("profile-condense-temperature"), "-0.5");
    await user.click(tid("profile-save"));
    expect(posted()).toEqual([]);
    expect(errorOf("profile.local.chatMaxOutput")?.textContent).toBe("Must be below the context window (32,768 tokens).");
    expect(errorOf("profile.local.chatTemperature")?.textContent).toBe("Must be a number from 0 to 2.");
    expect(errorOf("profile.local.condenseMaxOutput")?.textContent).toBe("Must be a whole number of 1 or more.");
    expect(errorOf("profile.local.condenseTemperature")?.textContent).toBe("Must be a number from 0 to 2.");

    await user.clear(tid("profile-chat-max-output"));
    await user.type(tid("profile-chat-max-output"), "1024");
    await user.clear(tid("profile-chat-temperature"));
    await user.type(tid("profile-chat-temperature"), "0.7");
    await user.clear(tid("profile-condense-max-output"));
    await user.type(tid("profile-condense-max-output"), "3000");
    await user.clear(tid("profile-condense-temperature"));
    await user.click(tid("profile-save"));
    expect(posted()).toEqual([
      {
        type: "saveProfile",
        originalId: "local",
        profile: {
          id: "local",
          kind: "openai-compatible",
          base_url: "http://127.0.0.1:11434/v1",
          model: "qwen",
          context_window: 32_768,
          threshold_percent: 70,
          chat: { max_output_tokens: 1024, temperature: 0.7 },
          // The temperature left empty is the core's default, as its placeholder said.
          condense: { max_output_tokens: 3000, temperature: 0.2 },
        },
      },
    ]);
  });

  it("shows a profile's saved generation settings, keeps what the editor does not show, and drops a phase emptied", async () => {
    const { posted, user } = setup(
      settings({
        profiles: [
          {
            id: "gpt",
            kind: "openai",
            model: "gpt-4o-mini",
            context_window: 128_000,
            threshold_percent: -1,
            chat: { temperature: 1 },
            condense: { max_input_tokens: 6000, max_output_tokens: 900, temperature: 0 },
          },
        ],
      }),
    );
    await user.click(inRow("gpt", "profile-edit"));
    expect((tid("profile-chat-temperature") as HTMLInputElement).value).toBe("1");
    expect((tid("profile-chat-max-output") as HTMLInputElement).value).toBe("");
    expect((tid("profile-condense-max-output") as HTMLInputElement).value).toBe("900");
    expect((tid("profile-condense-temperature") as HTMLInputElement).value).toBe("0");
    await user.clear(tid("profile-chat-temperature"));
    await user.clear(tid("profile-condense-max-output"));
    await user.clear(tid("profile-condense-temperature"));
    await user.click(tid("profile-save"));
    expect(posted()).toEqual([
      {
        type: "saveProfile",
        originalId: "gpt",
        profile: {
          id: "gpt",
          kind: "openai",
          model: "gpt-4o-mini",
          context_window: 128_000,
          threshold_percent: -1,
          condense: { max_input_tokens: 6000 },
        },
      },
    ]);
  });

  it("edits a profile: the host's rejection shows under the form, which stays open with what was typed", async () => {
    const { posted, user } = setup();
    await user.click(inRow("local", "profile-edit"));
    expect((tid("profile-id") as HTMLInputElement).value).toBe("local");
    expect((tid("profile-threshold") as HTMLInputElement).value).toBe("70");
    expect((tid("profile-global-threshold") as HTMLInputElement).checked).toBe(false);
    const url = tid("profile-base-url") as HTMLInputElement;
    await user.clear(url);
    await user.type(url, "localhost:11434");
    await user.click(tid("profile-global-threshold"));
    await user.click(tid("profile-save"));
    expect(posted()).toEqual([
      {
        type: "saveProfile",
        originalId: "local",
        profile: {
          id: "local",
          kind: "openai-compatible",
          base_url: "localhost:11434",
          model: "qwen",
          context_window: 32_768,
          threshold_percent: -1,
        },
      },
    ]);
    deliver({ type: "rejected", field: "profile.local", message: "base_url must start with http:// or https://" });
    expect(within(tid("profile-editor")).getByTestId("field-error").textContent).toBe(
      "base_url must start with http:// or https://",
    );
    expect(errorOf("profile.local")?.dataset["field"]).toBe("profile.local");
    show(settings());
    expect((tid("profile-base-url") as HTMLInputElement).value).toBe("localhost:11434");

    await user.clear(url);
    await user.type(url, "http://localhost:11434/v1");
    await user.click(tid("profile-save"));
    expect(errorOf("profile.local")).toBeNull();
    const saved = posted()[0];
    expect(saved).toMatchObject({ type: "saveProfile", originalId: "local" });
    // The state that holds the saved profile closes the editor.
    const profiles = settings().profiles.map((p) => (p.id === "local" && saved?.type === "saveProfile" ? saved.profile : p));
    show(settings({ profiles }));
    expect(screen.queryByTestId("profile-editor")).toBeNull();
    expect(row("local").textContent).toContain("global threshold");
  });

  it("cancels an edit", async () => {
    const { posted, user } = setup();
    await user.click(inRow("gpt", "profile-edit"));
    await user.type(tid("profile-model"), "-x");
    await user.click(tid("profile-cancel"));
    expect(screen.queryByTestId("profile-editor")).toBeNull();
    expect(posted()).toEqual([]);
    expect(document.activeElement).toBe(inRow("gpt", "profile-edit"));
    await user.click(inRow("gpt", "profile-edit"));
    expect((tid("profile-model") as HTMLInputElement).value).toBe("gpt-4o-mini");
  });

  it("removes a profile after an inline confirmation", async () => {
    const { posted, user } = setup();
    expect(within(row("local")).queryByTestId("profile-remove-confirm")).toBeNull();
    await user.click(inRow("local", "profile-remove"));
    expect(posted()).toEqual([]);
    await user.click(within(row("local")).getByRole("button", { name: "Cancel" }));
    expect(within(row("local")).queryByTestId("profile-remove-confirm")).toBeNull();
    await user.click(inRow("local", "profile-remove"));
    await user.click(inRow("local", "profile-remove-confirm"));
    expect(posted()).toEqual([{ type: "removeProfile", id: "local" }]);
    show(settings({ profiles: settings().profiles.filter((p) => p.id !== "local") }));
    expect(screen.getAllByTestId("profile-row")).toHaveLength(1);
  });

  it("saves an API key without keeping it: posted once, the input emptied, nowhere in the page or saved state", async () => {
    const KEY = "sk-live-SECRET-0123456789";
    const { sent, posted, setState, user } = setup();
    const input = inRow("local", "key-input");
    expect(input.type).toBe("password");
    expect(input.getAttribute("autocomplete")).toBe("off");
    expect(inRow("local", "key-save").disabled).toBe(true);
    await user.type(input, KEY);
    expect(document.body.innerHTML).not.toContain(KEY);
    await user.click(inRow("local", "key-save"));
    expect(posted()).toEqual([{ type: "setKey", profileId: "local", key: KEY }]);
    expect(input.value).toBe("");
    expect(inRow("local", "key-save").disabled).toBe(true);
    show(settings({ keys: { gpt: true, local: true } }));
    expect(inRow("local", "key-status").textContent).toBe("key set");

    // Enter saves too.
    await user.type(inRow("gpt", "key-input"), `${KEY}2{Enter}`);
    expect(posted()).toEqual([{ type: "setKey", profileId: "gpt", key: `${KEY}2` }]);
    expect(inRow("gpt", "key-input").value).toBe("");

    expect(document.body.innerHTML).not.toContain(KEY);
    for (const el of document.querySelectorAll("input, textarea")) expect((el as HTMLInputElement).value).not.toContain(KEY);
    expect(JSON.stringify(setState.mock.calls)).not.toContain(KEY);
    expect(sent.filter((m) => JSON.stringify(m).includes(KEY))).toHaveLength(2);

    await user.click(inRow("local", "key-clear"));
    expect(posted()).toEqual([{ type: "clearKey", profileId: "local" }]);
    deliver({ type: "rejected", field: "key.local", message: "the secret storage is locked" });
    expect(within(row("local")).getByTestId("field-error").textContent).toBe("the secret storage is locked");
  });

  it("tests a connection: Testing… until its result, then the result", async () => {
    const { posted, user } = setup();
    await user.click(inRow("gpt", "profile-test"));
    expect(posted()).toEqual([{ type: "testConnection", profileId: "gpt" }]);
    expect(inRow("gpt", "test-result").textContent).toBe("Testing…");
    expect(inRow("gpt", "profile-test").disabled).toBe(true);
    // Another profile's result does not end this test.
    deliver({ type: "testResult", profileId: "local", error: { kind: "llm_network", message: "refused" } });
    expect(inRow("gpt", "test-result").textContent).toBe("Testing…");
    expect(inRow("local", "test-result").textContent).toBe("✗ llm_network: refused");
    deliver({ type: "testResult", profileId: "gpt", report: { latencyMs: 231.6, model: "gpt-4o-mini-2024", reply: "ok" } });
    expect(inRow("gpt", "test-result").textContent).toBe("✓ 232 ms · gpt-4o-mini-2024");
    expect(inRow("gpt", "profile-test").disabled).toBe(false);
  });
});
