import { describe, expect, it } from "vitest";
import { ago, compact, dollars, duration, moneySaved, savedPercent, tokens, usd } from "../../src/format";

describe("formats", () => {
  it("writes token counts compactly", () => {
    expect([999, 1000, 1234, 8000, 9999, 86_123, 1_500_000, 2_000_000].map(compact)).toEqual([
      "999", "1k", "1.2k", "8k", "10k", "86k", "1.5M", "2M",
    ]);
    expect(tokens(12_345)).toBe("12,345");
  });

  it("writes cost with 4 decimals and times in ms or s", () => {
    expect(dollars(0.01234)).toBe("$0.0123");
    expect(dollars(0)).toBe("$0.0000");
    expect([850, 1000, 1234, 65_000].map(duration)).toEqual(["850 ms", "1 s", "1.2 s", "65 s"]);
  });

  it("computes the share saved", () => {
    expect(savedPercent(12_000, 3_000)).toBe(75);
    expect(savedPercent(0, 0)).toBe(0);
  });

  it("says how long ago", () => {
    const now = Date.UTC(2025, 0, 10, 12);
    expect(ago(now - 10_000, now)).toBe("just now");
    expect(ago(now - 5 * 60_000, now)).toBe("5 minutes ago");
    expect(ago(now - 3 * 3600_000, now)).toBe("3 hours ago");
    expect(ago(now - 24 * 3600_000, now)).toBe("yesterday");
    expect(ago(now - 40 * 24 * 3600_000, now)).toBe("last month");
  });
});

describe("the gateway's money", () => {
  const figures = (cost_saved_usd: number, more: Partial<{ cost_usd: number; unpriced_requests: number; payback_requests: number | null }> = {}) => ({
    cost_saved_usd,
    cost_usd: 1,
    unpriced_requests: 0,
    payback_requests: null,
    ...more,
  });

  it("keeps the sign of a loss, joined to its amount", () => {
    expect(usd(0.01234)).toBe("$0.0123");
    expect(usd(-0.24)).toBe("\u2212\u2060$0.2400");
    expect(usd(-12.5)).toBe("\u2212\u2060$12.50");
    expect(usd(0)).toBe("$0");
  });

  it("says a loss as one, with when it pays back; a saving; an unknown price", () => {
    expect(moneySaved(figures(-0.24, { payback_requests: 30 }))).toBe("\u2212\u2060$0.2400 so far; pays back after ~30 more requests");
    expect(moneySaved(figures(-0.24))).toBe("\u2212\u2060$0.2400 so far; not paying back at the latest request's rate");
    expect(moneySaved(figures(0.37))).toBe("saved $0.3700");
    expect(moneySaved(figures(0, { cost_usd: 0, unpriced_requests: 3 }))).toBe("price unknown");
    expect(moneySaved(figures(0))).toBe("");
  });
});
