import { act, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

// The one bundle renders the app its page names, and asks VS Code for its API once.
describe("the bundle's entry", () => {
  afterEach(() => {
    document.body.innerHTML = "";
    vi.unstubAllGlobals();
    vi.resetModules();
  });

  async function load(view: string | null) {
    const posted: unknown[] = [];
    const acquire = vi.fn(() => ({ postMessage: (m: unknown) => posted.push(m), getState: () => undefined, setState: vi.fn() }));
    vi.stubGlobal("acquireVsCodeApi", acquire);
    const root = document.createElement("div");
    root.id = "root";
    if (view !== null) root.dataset["view"] = view;
    document.body.append(root);
    await act(async () => {
      await import("../../src/main");
    });
    return { posted, acquire };
  }

  it("renders the settings panel for data-view=settings", async () => {
    const { posted, acquire } = await load("settings");
    expect(screen.getByTestId("settings")).toBeTruthy();
    expect(screen.queryByTestId("input")).toBeNull();
    expect(acquire).toHaveBeenCalledTimes(1);
    expect(posted[0]).toEqual({ type: "ready" });
  });

  it("renders the chat for data-view=chat, and when the page names no view", async () => {
    await load("chat");
    expect(screen.getByTestId("input")).toBeTruthy();
    expect(screen.queryByTestId("settings")).toBeNull();
    await act(async () => {
      document.body.innerHTML = "";
    });
    vi.resetModules();
    const { acquire } = await load(null);
    expect(screen.getByTestId("input")).toBeTruthy();
    expect(acquire).toHaveBeenCalledTimes(1);
  });
});
