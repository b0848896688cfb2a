import { act, render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { App } from "../../src/components/App";
import type { Host } from "../../src/host";
import type { ChatViewToHost, CondensationPreview, ToWebview } from "../../src/protocol";
import { initialState, previewOpen, reduce } from "../../src/state";
import { snapshot, stateMessage, text } from "./fixtures";

function setup() {
  const sent: ChatViewToHost[] = [];
  const host: Host = { post: (m) => sent.push(m), getState: () => undefined, setState: vi.fn() };
  const user = userEvent.setup();
  render(<App host={host} />);
  return { sent, user };
}

function deliver(data: unknown) {
  act(() => {
    window.dispatchEvent(new MessageEvent("message", { data }));
  });
}

const chat = [
  text("m1", "user", "Make the parser accept nested groups."),
  text("m2", "assistant", "Reading the parser."),
  text("m3", "user", "Never rename public functions.", { pinned: true }),
  text("m4", "assistant", "Done."),
];

const preview: CondensationPreview = {
  task_id: "t1",
  provider_id: "native",
  estimated_cost: 0.0021,
  tokens_before: 12_000,
  tokens_after: 3_000,
  condense_id: "c1",
  hidden: [
    { id: "m2", role: "assistant", tokens: 8_000, text: "Reading the parser." },
    { id: "m4", role: "assistant", tokens: 900, text: "Done." },
  ],
  added: [{ id: "c1.summary", role: "assistant", tokens: 400, text: "The parser was fixed.", is_summary: true }],
  cost: 0.0018,
};

const ready: ToWebview = { type: "preview", source: { kind: "chat" }, running: false, preview };

describe("the preview state", () => {
  it("follows the extension's preview messages: running, ready, closed", () => {
    const running = reduce(initialState, {
      type: "received",
      message: { type: "preview", source: { kind: "chat" }, running: true },
    });
    expect(running.preview).toEqual({ phase: "running", source: { kind: "chat" } });
    expect(previewOpen(running)).toBe(true);
    const shown = reduce(running, { type: "received", message: ready });
    expect(shown.preview).toMatchObject({ phase: "ready", preview: { condense_id: "c1" } });
    const closed = reduce(shown, {
      type: "received",
      message: { type: "preview", source: { kind: "chat" }, running: false },
    });
    expect(closed.preview).toBeNull();
    expect(previewOpen(closed)).toBe(false);
  });

  it("keeps the provider's estimate the extension sends while the preview is made", () => {
    const estimate = { task_id: "t1", provider_id: "native", needs: "llm", tokens_before: 12_000, estimated_cost: 0.0021 } as const;
    const running = reduce(initialState, {
      type: "received",
      message: { type: "preview", source: { kind: "chat" }, running: true, estimate },
    });
    expect(running.preview).toEqual({ phase: "running", source: { kind: "chat" }, estimate });
    expect(previewOpen(running)).toBe(true);
  });

  it("keeps a failure to show, which does not lock the chat", () => {
    const failed = reduce(initialState, {
      type: "received",
      message: {
        type: "preview",
        source: { kind: "file", name: "chat.json" },
        running: false,
        failure: { error: { kind: "nothing_to_condense", message: "too short" }, estimated_cost: 0, cost: 0 },
      },
    });
    expect(failed.preview?.phase).toBe("failed");
    expect(previewOpen(failed)).toBe(false);
  });
});

describe("pins and the preview panel", () => {
  it("pins and unpins a message through the extension, and marks the pinned one", async () => {
    const { sent, user } = setup();
    deliver(stateMessage(snapshot(chat)));
    const pinned = document.querySelector('[data-message-id="m3"]') as HTMLElement;
    expect(within(pinned).getByTestId("pin-marker")).toBeTruthy();
    await user.click(within(pinned).getByRole("button", { name: "Unpin" }));
    const first = document.querySelector('[data-message-id="m1"]') as HTMLElement;
    expect(within(first).queryByTestId("pin-marker")).toBeNull();
    await user.click(within(first).getByRole("button", { name: "Pin" }));
    expect(sent.filter((m) => m.type === "pin")).toEqual([
      { type: "pin", id: "m3", pinned: false },
      { type: "pin", id: "m1", pinned: true },
    ]);
  });

  it("shows the provider's estimate as soon as the preview starts, then the real figures", async () => {
    setup();
    deliver(stateMessage(snapshot(chat)));
    deliver({ type: "preview", source: { kind: "chat" }, running: true });
    const panel = () => screen.getByTestId("preview");
    // Before the core's estimate: the panel says it runs, with no figure yet.
    expect(within(panel()).queryByTestId("preview-estimate")).toBeNull();
    expect(within(panel()).getByRole("status").textContent).toContain("Running the provider…");
    deliver({
      type: "preview",
      source: { kind: "chat" },
      running: true,
      estimate: { task_id: "t1", provider_id: "native", needs: "llm", tokens_before: 12_000, estimated_cost: 0.0021 },
    });
    const estimate = within(panel()).getByTestId("preview-estimate").textContent;
    expect(estimate).toContain("native: 12,000 tokens now");
    expect(estimate).toContain("estimated $0.0021");
    expect(estimate).toContain("cost: when it is done");
    expect(within(panel()).getByRole("status").textContent).toContain("The model is writing the summary…");
    expect(panel().getAttribute("aria-busy")).toBe("true");
    expect(within(panel()).queryByTestId("preview-apply")).toBeNull();
    // The result: the estimate stays beside the real cost.
    deliver(ready);
    expect(within(panel()).queryByTestId("preview-estimate")).toBeNull();
    const figures = within(panel()).getByTestId("preview-figures").textContent;
    expect(figures).toContain("estimated $0.0021");
    expect(figures).toContain("cost $0.0018");
  });

  it("says what the cache-aware policy weighs for the condensation previewed, when the profile follows it", async () => {
    const { user } = setup();
    deliver(stateMessage(snapshot(chat)));
    await user.click(screen.getByTestId("more-actions"));
    await user.click(screen.getByTestId("preview-button"));
    deliver(ready);
    expect(screen.queryByTestId("preview-policy")).toBeNull();
    const policy = { cost_now: -0.002, saving: 0.0456, turns: 12, trigger: 9_000, condense: true };
    deliver({ ...ready, preview: { ...preview, policy } });
    // A condensation that costs less than not condensing (a cold cache) costs nothing now.
    expect(screen.getByTestId("preview-policy").textContent).toBe("costs $0.0000 now · saves ≈$0.0456 over the next 12 turns");
  });

  it("shows a preview with its figures and hidden messages; Apply and Discard go to the extension", async () => {
    const { sent, user } = setup();
    deliver(stateMessage(snapshot(chat)));
    await user.click(screen.getByTestId("more-actions"));
    await user.click(screen.getByTestId("preview-button"));
    expect(sent.at(-1)).toEqual({ type: "preview" });
    deliver(ready);
    const panel = screen.getByTestId("preview");
    expect(within(panel).getByTestId("preview-figures").textContent).toContain("12,000 → 3,000 tokens (−75%)");
    expect(within(panel).getByTestId("preview-figures").textContent).toContain("estimated $0.0021");
    expect(within(panel).getByTestId("preview-figures").textContent).toContain("cost $0.0018");
    expect(within(panel).getByTestId("preview-hidden-count").textContent).toBe("Hides 2 messages (8,900 tokens)");
    expect(within(panel).getByTestId("preview-added").textContent).toContain("The parser was fixed.");
    // While the preview waits, the chat takes no input and nothing can be pinned.
    expect((screen.getByTestId("send") as HTMLButtonElement).disabled).toBe(true);
    expect((screen.getByTestId("condense") as HTMLButtonElement).disabled).toBe(true);
    expect(screen.queryAllByTestId("pin")).toEqual([]);
    await user.click(within(panel).getByTestId("preview-apply"));
    await user.click(within(panel).getByTestId("preview-discard"));
    expect(sent.slice(-2)).toEqual([{ type: "applyPreview" }, { type: "discardPreview" }]);
  });
});
