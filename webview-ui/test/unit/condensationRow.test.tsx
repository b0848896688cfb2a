import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { CondensationRow } from "../../src/components/CondensationRow";
import { record } from "./fixtures";

const row = (extra: Parameters<typeof record>[1]) =>
  render(<CondensationRow record={record("c1", extra)} summary={null} hiddenCount={0} />);

describe("CondensationRow", () => {
  it("shows a multi-pass run's passes in order, with the skipped ones dimmed and their reason in the tooltip", () => {
    row({
      provider_id: "smart",
      passes: [
        { pass: "lossless", tokens_saved: 1204, time_ms: 3, cost: 0 },
        { pass: "mask", tokens_saved: 8420, time_ms: 2, cost: 0 },
        { pass: "native", tokens_saved: 0, time_ms: 0, cost: 0, skipped: "no_llm_profile" },
        { pass: "truncation", tokens_saved: 3010, time_ms: 1, cost: 0 },
      ],
    });
    const passes = screen.getByTestId("passes");
    expect(passes.textContent).toBe("lossless −1,204mask −8,420native skippedtruncation −3,010");
    const items = within(passes).getAllByTestId("pass");
    expect(items.map((i) => i.dataset.pass)).toEqual(["lossless", "mask", "native", "truncation"]);
    const skipped = items[2];
    expect(skipped.dataset.skipped).toBe("true");
    expect(skipped.className).toContain("condensation__pass--skipped");
    expect(skipped.title).toContain("skipped (no_llm_profile)");
    expect(items[0].dataset.skipped).toBeUndefined();
    expect(items[1].getAttribute("aria-label")).toContain("mask: 8,420 tokens saved");
  });

  it("shows a pass's cost in its tooltip when it spent money", () => {
    row({ passes: [{ pass: "native", tokens_saved: 5000, time_ms: 1200, cost: 0.0042 }] });
    expect(screen.getByTestId("pass").title).toBe("native: 5,000 tokens saved · 1.2 s · $0.0042");
  });

  it("says a cache-aware condensation's reason, what the policy weighed and the summary's cached share", () => {
    row({
      reason: "cache",
      automatic: true,
      estimate: { cost_now: 0.0312, saving: 0.184, turns: 24, trigger: 30000, condense: true },
      cached_share: 0.874,
    });
    expect(screen.getByText("automatic: it pays for the prompt cache")).toBeTruthy();
    expect(screen.getByTestId("cost-estimate").textContent).toBe("costs $0.0312 now · saves ≈$0.1840 over the next 24 turns");
    expect(screen.getByTestId("cached-share").textContent).toBe("87% of the summary's input from the cache");
  });

  it("says what the request became, and leaves out a cost and a time of zero (a gateway's row), with its detail", () => {
    render(
      <CondensationRow
        record={record("g1", { provider_id: "smart", tokens_before: 172_004, tokens_after: 57_574, cost: 0, time_ms: 0 })}
        summary={null}
        hiddenCount={0}
        detail="Messages 3–41 (114,540 tokens) hidden; in their place the ledger of 110 tokens."
      />,
    );
    expect(screen.getByText(/172,004 → 57,574 tokens \(−67%\)/)).toBeTruthy();
    expect(screen.queryByTestId("condensation-cost")).toBeNull();
    expect(screen.queryByTestId("condensation-time")).toBeNull();
    expect(screen.getByTestId("condensation-detail").textContent).toBe("Messages 3–41 (114,540 tokens) hidden; in their place the ledger of 110 tokens.");
  });

  it("shows what a condensation cost and how long it took when it spent or took any", () => {
    row({ cost: 0.0042, time_ms: 1200 });
    expect(screen.getByTestId("condensation-cost").textContent).toBe("$0.0042");
    expect(screen.getByTestId("condensation-time").textContent).toBe("1.2 s");
    expect(screen.queryByTestId("condensation-detail")).toBeNull();
  });

  it("shows no policy figures for a condensation without them", () => {
    row({});
    expect(screen.queryByTestId("cost-estimate")).toBeNull();
    expect(screen.queryByTestId("cached-share")).toBeNull();
  });

  it("shows no passes for a single-pass run", () => {
    row({});
    expect(screen.queryByTestId("passes")).toBeNull();
    row({ passes: [] });
    expect(screen.queryByTestId("passes")).toBeNull();
  });

  it("shows full retention, and how many facts code repaired", () => {
    row({ retention: { kept: 12, probes: 12, repaired: 3, missing: [] } });
    const r = screen.getByTestId("retention");
    expect(r.textContent).toBe("retention 12/12 · 3 repaired");
    expect(r.className).not.toContain("--low");
    expect(r.title).toContain("3 put back by code");
    expect(screen.queryByTestId("missing-toggle")).toBeNull();
  });

  it("lists the missing facts in the details when retention is below 100%", async () => {
    row({ retention: { kept: 10, probes: 12, repaired: 0, missing: ["todo: write the migration", "file edited: src/db.rs"] } });
    const r = screen.getByTestId("retention");
    expect(r.textContent).toBe("retention 10/12");
    expect(r.className).toContain("condensation__retention--low");
    const toggle = screen.getByTestId("missing-toggle");
    expect(toggle.textContent).toBe("2 facts not kept");
    expect(screen.queryByTestId("missing")).toBeNull();
    await userEvent.click(toggle);
    expect(within(screen.getByTestId("missing")).getAllByRole("listitem").map((li) => li.textContent)).toEqual([
      "todo: write the migration",
      "file edited: src/db.rs",
    ]);
  });

  it("shows no retention when the record has none", () => {
    row({ retention: null });
    expect(screen.queryByTestId("retention")).toBeNull();
  });

  it("flags a summary cut at the output limit", () => {
    row({ summary_truncated: true });
    expect(screen.getByTestId("summary-truncated").textContent).toContain("Summary cut at the output limit");
  });

  it("does not flag a complete summary", () => {
    row({ summary_truncated: false });
    expect(screen.queryByTestId("summary-truncated")).toBeNull();
  });
});
