import { describe, expect, it } from "vitest";
import { compact, meterText } from "../src/files/meter";

describe("meterText", () => {
  it("says there is no chat rather than showing a figure", () => {
    const m = meterText({}, 80);
    expect(m.text).toContain("no chat");
    expect(m.text).not.toMatch(/\d/);
  });

  it("shows the share of the context window", () => {
    const m = meterText({ tokens: 86_000, contextWindow: 200_000 }, 80);
    expect(m.text).toBe("$(symbol-ruler) ctx 43% · 86k/200k");
    expect(m.warning).toBe(false);
  });

  it("warns at the threshold", () => {
    expect(meterText({ tokens: 160_000, contextWindow: 200_000 }, 80).warning).toBe(true);
  });

  it("shows the count alone without a context window", () => {
    expect(meterText({ tokens: 1234 }, 80).text).toBe("$(symbol-ruler) ctx 1.2k");
  });

  it("compacts numbers", () => {
    expect([999, 1000, 1234, 86_123, 1_500_000].map(compact)).toEqual(["999", "1k", "1.2k", "86k", "1.5M"]);
  });
});
