import { describe, expect, it } from "vitest";
import { advise, asFailure } from "../src/errors";

describe("advise", () => {
  it("tells the user to set the key again on llm_auth, naming the profile", () => {
    const a = advise({ kind: "llm_auth", message: "401 Incorrect API key provided" }, "gpt");
    expect(a.text).toMatch(/API key for profile "gpt" was rejected/);
    expect(a.actions.map((x) => x.command)).toContain("contextCondenser.setApiKey");
    expect(a.severity).toBe("warning");
  });

  it("keeps unknown kinds visible as errors", () => {
    const a = advise({ kind: "internal", message: "boom" });
    expect(a.severity).toBe("error");
    expect(a.text).toContain("boom");
  });
});

describe("asFailure", () => {
  it("keeps the kind of engine errors and names anything else internal", () => {
    const e = Object.assign(new Error("bad"), { kind: "invalid_input" });
    expect(asFailure(e)).toEqual({ kind: "invalid_input", message: "bad" });
    expect(asFailure("text")).toEqual({ kind: "internal", message: "text" });
  });
});

describe("provider errors", () => {
  it("say the provider is disabled and offer the settings panel", () => {
    const a = advise({ kind: "provider_disabled", message: "provider 'truncation' is disabled" });
    expect(a.text).toBe("Provider 'truncation' is disabled. Enable it or choose another default provider in the settings.");
    expect(a.actions.map((x) => x.command)).toEqual(["contextCondenser.openSettings"]);
    expect(a.severity).toBe("warning");
  });
});
