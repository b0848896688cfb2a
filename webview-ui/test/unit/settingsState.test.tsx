import { describe, expect, it } from "vitest";
import { checkInteger, checkPrice, checkProfile, draftOf } from "../../src/settings/check";
import { fieldId, initialSettings, reduceSettings, type SettingsAction, type SettingsView } from "../../src/settings/state";
import { LIMITS, settings, settingsState, smart, TOOLS } from "./settingsFixtures";

const run = (...actions: SettingsAction[]): SettingsView => actions.reduce(reduceSettings, initialSettings);
const received = (message: unknown) => ({ type: "received", message }) as SettingsAction;

describe("the page's checks", () => {
  it("reads whole numbers in a range", () => {
    const rule = { min: 10, max: 100 };
    expect(checkInteger("80", rule)).toEqual({ ok: true, value: 80 });
    expect(checkInteger(" 10 ", rule)).toEqual({ ok: true, value: 10 });
    for (const bad of ["150", "-1", "2.5", "9", "1e2", "abc", "0x20"]) {
      expect(checkInteger(bad, rule)).toEqual({ ok: false, message: "Must be a whole number from 10 to 100." });
    }
    expect(checkInteger("", rule)).toEqual({ ok: false, message: "Enter a whole number from 10 to 100." });
    expect(checkInteger("", { ...rule, optional: true })).toEqual({ ok: true, value: null });
    expect(checkInteger("-5", {})).toEqual({ ok: true, value: -5 });
    expect(checkInteger("-1", { min: 0 })).toMatchObject({ message: "Must be a whole number of 0 or more." });
    expect(checkInteger("101", { max: 100 })).toMatchObject({ message: "Must be a whole number of 100 or less." });
    expect(checkInteger("99999999999999999999", {})).toMatchObject({ ok: false });
  });

  it("reads prices", () => {
    expect(checkPrice("0.15")).toEqual({ ok: true, value: 0.15 });
    expect(checkPrice(".5")).toEqual({ ok: true, value: 0.5 });
    expect(checkPrice("")).toEqual({ ok: true, value: null });
    expect(checkPrice("-1")).toMatchObject({ ok: false });
    expect(checkPrice("1,5")).toMatchObject({ ok: false });
  });

  it("turns the editor's fields into a profile, leaving empty optional fields out", () => {
    const draft = { ...draftOf(null), id: " new ", model: "m", contextWindow: "4096" };
    expect(checkProfile(draft, [], null, LIMITS)).toEqual({
      ok: true,
      profile: { id: "new", kind: "openai", model: "m", context_window: 4096, threshold_percent: -1 },
    });
    const profile = settings().profiles[1]!;
    expect(checkProfile(draftOf(profile), settings().profiles, "local", LIMITS)).toEqual({ ok: true, profile });
    expect(checkProfile({ ...draftOf(profile), id: "gpt" }, settings().profiles, "local", LIMITS)).toMatchObject({
      ok: false,
      errors: { id: "A profile named “gpt” exists already." },
    });
    expect(checkProfile({ ...draftOf(profile), maxOutput: "0", globalThreshold: false, threshold: "" }, [], "local", LIMITS)).toEqual({
      ok: false,
      errors: { maxOutput: "Must be a whole number of 1 or more.", threshold: "Enter a whole number from 10 to 100." },
    });
    // The range is the core's, as the state message gives it.
    const narrow = { ...LIMITS, threshold_min: 20, threshold_max: 90 };
    expect(checkProfile({ ...draftOf(profile), threshold: "15" }, [], "local", narrow)).toEqual({
      ok: false,
      errors: { threshold: "Must be a whole number from 20 to 90." },
    });
  });

  it("gives a cli profile a tool and one of its models, and no base URL", () => {
    const draft = { ...draftOf(null), id: "cc", kind: "cli" as const, baseUrl: "http://left.over", tool: "claude-code", model: "opus", contextWindow: "200000" };
    expect(checkProfile(draft, [], null, LIMITS, TOOLS)).toEqual({
      ok: true,
      profile: { id: "cc", kind: "cli", tool: "claude-code", model: "opus", context_window: 200_000, threshold_percent: -1 },
    });
    expect(checkProfile({ ...draft, model: "gpt-4o" }, [], null, LIMITS, TOOLS)).toMatchObject({
      ok: false,
      errors: { model: "claude-code has no model “gpt-4o”." },
    });
    expect(checkProfile({ ...draft, tool: "" }, [], null, LIMITS, TOOLS)).toMatchObject({ ok: false, errors: { tool: "Choose a tool." } });
    expect(checkProfile({ ...draft, tool: "gone" }, [], null, LIMITS, TOOLS)).toMatchObject({
      ok: false,
      errors: { tool: "There is no tool “gone”." },
    });
    // A profile of another kind keeps no tool.
    const other = checkProfile({ ...draft, kind: "openai", baseUrl: "" }, [], null, LIMITS, TOOLS);
    expect(other).toMatchObject({ ok: true });
    expect(other.ok && "tool" in other.profile).toBe(false);
  });
});

describe("the settings reducer", () => {
  it("keeps the host's rejections by field until accepted, and the state does not clear them", () => {
    const field = fieldId.config("smart", smart().schema[0]!);
    expect(field).toBe("provider.smart.config.depth");
    let view = run(received(settingsState()), received({ type: "rejected", field, message: "no" }));
    expect(view.errors).toEqual({ [field]: "no" });
    expect(view.notices).toEqual([]);
    view = reduceSettings(view, received(settingsState()));
    expect(view.errors).toEqual({ [field]: "no" });
    view = reduceSettings(view, received({ type: "accepted", field }));
    expect(view.errors).toEqual({});
  });

  it("names shared fields by their shared key", () => {
    expect(fieldId.config("smart", { key: "custom_prompt", shared: true })).toBe("shared.custom_prompt");
  });

  it("makes a notice of a rejection about a field the page does not show", () => {
    const view = run(received(settingsState()), received({ type: "rejected", field: "profile.new", message: "bad" }));
    expect(view.notices.map((n) => n.text)).toEqual(["profile.new: bad"]);
    const open = run(
      received(settingsState()),
      { type: "edit", originalId: null },
      received({ type: "rejected", field: "profile.new", message: "bad" }),
    );
    expect(open.notices).toEqual([]);
    expect(open.errors["profile.new"]).toBe("bad");
  });

  it("closes the editor when its save is accepted, or when the state holds what it saved", () => {
    const profile = { id: "x", kind: "manual", model: "m", context_window: 10, threshold_percent: -1 } as const;
    const editing = run(received(settingsState()), { type: "edit", originalId: null }, { type: "saving", profile });
    expect(editing.editor).toEqual({ originalId: null, saving: profile });
    expect(reduceSettings(editing, received({ type: "accepted", field: "profile.new" })).editor).toBeNull();
    expect(reduceSettings(editing, received({ type: "accepted", field: "profile.x" })).editor).not.toBeNull();
    // The same profile, its fields in another order.
    const reordered = { threshold_percent: -1, context_window: 10, model: "m", kind: "manual", id: "x" } as const;
    const withIt = settingsState(settings({ profiles: [...settings().profiles, reordered] }));
    expect(reduceSettings(editing, received(withIt)).editor).toBeNull();
    expect(reduceSettings(editing, received(settingsState())).editor).not.toBeNull();
    // A rejection: the editor stays, no longer saving.
    const refused = reduceSettings(editing, received({ type: "rejected", field: "profile.new", message: "no" }));
    expect(refused.editor).toEqual({ originalId: null, saving: null });
    expect(reduceSettings(refused, received(withIt)).editor).not.toBeNull();
  });

  it("closes the editor of a profile that is gone", () => {
    const editing = run(received(settingsState()), { type: "edit", originalId: "local" });
    expect(reduceSettings(editing, received(settingsState())).editor).not.toBeNull();
    const without = settings({ profiles: settings().profiles.filter((p) => p.id !== "local") });
    expect(reduceSettings(editing, received(settingsState(without))).editor).toBeNull();
  });

  it("tracks connection tests by profile", () => {
    let view = run({ type: "testing", profileId: "gpt" });
    expect(view.tests).toEqual({ gpt: { state: "testing" } });
    view = reduceSettings(view, received({ type: "testResult", profileId: "gpt" }));
    expect(view.tests["gpt"]).toEqual({ state: "failed", error: { kind: "internal", message: "no result" } });
  });

  it("clears a field's message once the page's check passes", () => {
    let view = run({ type: "checked", field: "auto.minGainPercent", error: "Must be…" });
    expect(view.errors).toEqual({ "auto.minGainPercent": "Must be…" });
    view = reduceSettings(view, { type: "checked", field: "auto.minGainPercent", error: null });
    expect(view.errors).toEqual({});
  });
});
