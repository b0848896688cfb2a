import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ContextMeter, meterView } from "../../src/components/ContextMeter";
import { context } from "./fixtures";

describe("the context meter", () => {
  it("shows tokens / window and percent", () => {
    expect(meterView(context()).text).toBe("1.2k / 8k · 15%");
    expect(meterView(context({ tokens: 86_123, window: 128_000, percent: 67.28 })).text).toBe("86k / 128k · 67%");
  });

  it("warns at and past the threshold, and over the request limit", () => {
    expect(meterView(context({ percent: 79.9, tokens: 5_000 })).warning).toBe(false);
    expect(meterView(context({ percent: 80, tokens: 6_400, limit: 7_000 })).warning).toBe(true);
    expect(meterView(context({ percent: 95, tokens: 7_600, limit: 8_000 })).warning).toBe(true);
    expect(meterView(context({ percent: 95, tokens: 7_600, limit: 8_000, threshold_percent: null })).warning).toBe(false);
    expect(meterView(context({ percent: 70, tokens: 5_600, limit: 5_000, threshold_percent: null })).warning).toBe(true);
  });

  it("draws the bar with the threshold marked when there is one", () => {
    const { container, rerender } = render(<ContextMeter context={context({ percent: 85, tokens: 6_800, limit: 7_000 })} />);
    const meter = screen.getByTestId("meter");
    expect(meter.textContent).toContain("6.8k / 8k · 85%");
    expect(meter.dataset["warning"]).toBe("true");
    expect(meter.className).toContain("meter--warning");
    expect(screen.getByRole("meter").getAttribute("aria-valuenow")).toBe("85");
    expect(container.querySelector<HTMLElement>(".meter__threshold")?.style.left).toBe("80%");
    expect(container.querySelector<HTMLElement>(".meter__fill")?.style.width).toBe("85%");

    rerender(<ContextMeter context={context({ threshold_percent: null })} />);
    expect(screen.getByTestId("meter").dataset["warning"]).toBe("false");
    expect(container.querySelector(".meter__threshold")).toBeNull();
  });

  it("says so when there is no context yet", () => {
    render(<ContextMeter context={null} />);
    expect(screen.getByTestId("meter").textContent).toBe("No context yet");
  });
});
