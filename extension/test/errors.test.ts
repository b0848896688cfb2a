import { describe, expect, it } from "vitest";
import { advise, asFailure } from "../src/engine/errors";

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

describe("a degenerate summary", () => {
  it("says nothing was applied and what to do, with the reason", () => {
    const message = 'degenerate summary: the summary the model wrote for the request was not applied (it repeats "[tool result]": repeats make up 98% of it)';
    const a = advise({ kind: "degenerate_summary", message }, "small");
    expect(a.text).toMatch(/^The condensing model wrote a summary that repeats itself .* not applied; the conversation is unchanged\./);
    expect(a.text).toContain("Choose a larger condensing model");
    expect(a.text).toContain('"[tool result]"');
    expect(a.actions.map((x) => x.command)).toEqual(["contextCondenser.openSettings", "contextCondenser.showLog"]);
    expect(a.severity).toBe("warning");
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
